#!/usr/bin/env bash
# Exit 3 when this host's claim is gone, 4 when another stack holds it.
# Usage: host-claim-read.sh OWNER
set -euo pipefail
owner=$1
current=$(docker volume inspect dslab-claim --format '{{index .Labels "dslab.owner"}}' 2>/dev/null) || exit 3
[[ "$current" == "$owner" ]] || exit 4
printf '{"owner": "%s"}\n' "$owner"
