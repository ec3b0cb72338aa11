#!/usr/bin/env bash
set -euo pipefail
id=$(docker network inspect "$1" --format '{{.Id}}' 2>/dev/null) || exit 3
printf '{"id": "%s"}\n' "$id"
