#!/usr/bin/env bash
# Load an image from stdin (from image-save.sh on the builder). Usage: image-load.sh TAG
# Says every 15 s that it is still receiving: a large image takes minutes to come.
set -euo pipefail
# dslab:include host/lib/ticker.sh
still_receiving() { echo "still receiving $1: $SECONDS s" >&2; }
tick_while_running still_receiving "$1"
docker load >&2
echo "received $1 in $SECONDS s" >&2
printf '{"image_id": "%s"}\n' "$(docker image inspect "$1" --format '{{.Id}}')"
