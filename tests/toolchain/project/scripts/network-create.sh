#!/usr/bin/env bash
set -euo pipefail
docker network inspect "$1" >/dev/null 2>&1 || docker network create --label dslab.proof=1 "$1" >/dev/null
printf '{"id": "%s"}\n' "$(docker network inspect "$1" --format '{{.Id}}')"
