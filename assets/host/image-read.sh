#!/usr/bin/env bash
# Exit 3 when the image is gone. Usage: image-read.sh TAG
set -euo pipefail
id=$(docker image inspect "$1" --format '{{.Id}}' 2>/dev/null) || exit 3
printf '{"image_id": "%s"}\n' "$id"
