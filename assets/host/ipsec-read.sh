#!/usr/bin/env bash
# The IPsec container: exit 3 when it is gone, 4 when it is not running (made again).
# Usage: ipsec-read.sh NAME
set -euo pipefail
name=$1
docker container inspect "$name" >/dev/null 2>&1 || exit 3
[[ "$(docker inspect "$name" --format '{{.State.Running}}')" == true ]] || exit 4
printf '{"container_id": "%s"}\n' "$(docker inspect "$name" --format '{{.Id}}')"
