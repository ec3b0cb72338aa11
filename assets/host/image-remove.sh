#!/usr/bin/env bash
# Remove the image tag; keep going when it is gone or still used. Usage: image-remove.sh TAG
set -euo pipefail
if docker image inspect "$1" >/dev/null 2>&1; then
  echo "removing image $1" >&2
  docker image rm "$1" >/dev/null || echo "image $1 still in use; left in place" >&2
fi
