#!/usr/bin/env bash
# Remove the container; already gone is fine. Usage: container-remove.sh NAME
set -euo pipefail
if docker container inspect "$1" >/dev/null 2>&1; then
  echo "removing container $1" >&2
  docker rm --force "$1" >/dev/null
fi
