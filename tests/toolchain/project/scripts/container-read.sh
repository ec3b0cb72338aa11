#!/usr/bin/env bash
set -euo pipefail
docker container inspect "$1" >/dev/null 2>&1 || exit 3
[[ "$(docker inspect "$1" --format '{{.State.Running}}')" == true ]] || exit 4
printf '{"id": "%s"}\n' "$(docker inspect "$1" --format '{{.Id}}')"
