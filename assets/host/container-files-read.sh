#!/usr/bin/env bash
# Whether the files placed in a container (container-put-files.sh) are still there as placed:
# exit 3 when the container is not running, 4 naming each file that is missing or changed
# (the next `up` places them again).
# Usage: container-files-read.sh CONTAINER DEST "SHA256  NAME"...  (NAME relative to DEST)
set -euo pipefail
# dslab:include host/lib/container-read.sh
container=$1 dest=$2
shift 2
exit_gone_unless_running "$container"
report=$(printf '%s\n' "$@" | docker exec -i -w "$dest" "$container" sha256sum --check 2>/dev/null) && exit 0
changed=$(sed -n "s|^\(.*\): FAILED.*\$|${dest%/}/\1|p" <<<"$report" | tr '\n' ' ')
echo "changed or removed in $container since placed: ${changed% }" >&2
exit 4
