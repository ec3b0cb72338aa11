#!/usr/bin/env bash
set -euo pipefail
docker rm --force "$1" >/dev/null 2>&1 || true
docker run --detach --name "$1" --network "$2" --label dslab.proof=1 local/debian:trixie sleep infinity >/dev/null
printf '{"id": "%s"}\n' "$(docker inspect "$1" --format '{{.Id}}')"
