#!/usr/bin/env bash
# Write the image to stdout (piped into image-load.sh on another host). Usage: image-save.sh TAG
set -euo pipefail
echo "sending image $1" >&2
docker save "$1"
