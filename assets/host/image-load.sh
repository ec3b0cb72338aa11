#!/usr/bin/env bash
# Load an image from stdin (from image-save.sh on the builder). Usage: image-load.sh TAG
# Says every 15 s that it is still receiving: a large image takes minutes to come.
set -euo pipefail
# sleep gets none of our pipes: killed at exit, the ticker must not hold the ssh session open.
( while sleep 15 >/dev/null 2>&1; do echo "still receiving $1: $SECONDS s" >&2; done ) &
ticker=$!
trap 'kill "$ticker" 2>/dev/null || true' EXIT
docker load >&2
echo "received $1 in $SECONDS s" >&2
printf '{"image_id": "%s"}\n' "$(docker image inspect "$1" --format '{{.Id}}')"
