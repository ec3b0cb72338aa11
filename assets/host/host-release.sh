#!/usr/bin/env bash
# Give the host back: remove the claim volume when this stack holds it.
# Usage: host-release.sh OWNER
set -euo pipefail
owner=$1
current=$(docker volume inspect dslab-claim --format '{{index .Labels "dslab.owner"}}' 2>/dev/null) || exit 0
if [[ "$current" != "$owner" ]]; then
  echo "leaving the claim of stack '$current' in place" >&2
  exit 0
fi
docker volume rm dslab-claim >/dev/null
echo "released" >&2
