#!/usr/bin/env bash
# Places the files that follow this script on stdin in CONTAINER, each written whole (to a
# temporary name, then renamed), and marks them as STEP's (host/lib/step-mark.sh): the hosts'
# probe checks them on every preview and up, and one changed or removed inside the container
# is placed again by the next `up`.
# Stdin after the script: per file, a line `dslab-file MODE SIZE PATH`, then SIZE bytes.
# Usage: container-place-files.sh CONTAINER STEP
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/step-mark.sh

place_files() {
  local container=$1 step=$2 tag mode size path placed=()
  while IFS=' ' read -r tag mode size path; do
    if [[ "$tag" != dslab-file || ! "$size" =~ ^[0-9]+$ ]]; then
      echo "container-place-files.sh: not a file header: $tag $mode $size $path" >&2
      return 65
    fi
    head -c "$size" | docker exec -i "$container" sh -c '
      mkdir -p "$(dirname "$0")" && cat >"$0.dslab-new" && chmod "$1" "$0.dslab-new" && mv "$0.dslab-new" "$0"
    ' "$path" "$mode"
    placed+=("$path")
  done
  mark_files "$container" "$step" "${placed[@]}"
}

# One line: bash has read it whole before the files that follow it on stdin.
place_files "$@"; exit
