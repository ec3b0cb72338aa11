#!/usr/bin/env bash
# Unpack the tar on stdin into the container at DEST. Usage: container-put-files.sh CONTAINER DEST
set -euo pipefail
docker exec "$1" mkdir -p "$2"
docker exec -i "$1" tar -x -o -C "$2"
echo "files placed in $1:$2" >&2
