#!/usr/bin/env bash
# A copied image on this host (assets/operator/image-ship.sh).
#   mark TAG STEP    marks STEP (host/lib/step-mark.sh, its generation; STEP names this copy:
#                    another copy's delete never touches it); the probe reads TAG itself
#   remove TAG STEP  removes the image (kept while a container uses it) and the mark
set -euo pipefail
# dslab:include host/lib/step-mark.sh
action=$1 tag=$2 step=$3
case $action in
  mark)
    mark_host "$step"
    ;;
  remove)
    if docker image inspect "$tag" >/dev/null 2>&1; then
      docker image rm "$tag" >/dev/null || echo "image $tag still in use; left in place" >&2
    fi
    unmark_host "$step"
    ;;
  *) echo "usage: image-mark.sh mark|remove TAG STEP" >&2; exit 64 ;;
esac
