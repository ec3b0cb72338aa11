#!/usr/bin/env bash
# Load an image from stdin (from image-save.sh on the builder). Usage: image-load.sh TAG
set -euo pipefail
docker load >&2
printf '{"image_id": "%s"}\n' "$(docker image inspect "$1" --format '{{.Id}}')"
