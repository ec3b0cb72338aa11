#!/usr/bin/env bash
# On the manager: stop a training run still going in the container (background mode).
# Usage: deepspeed-stop.sh CONTAINER
set -euo pipefail
if docker container inspect "$1" >/dev/null 2>&1 && docker exec "$1" pkill -f 'deepspeed' 2>/dev/null; then
  echo "stopped the training run in $1" >&2
fi
exit 0
