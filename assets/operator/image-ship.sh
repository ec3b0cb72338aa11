#!/usr/bin/env bash
# The image built on one host, copied to another through this machine (image.distribution:
# build-once): `docker save` on FROM piped into `docker load` on TO.
#   ship TAG STEP ID FROM TO -- SSH_OPTION...  copies TAG unless TO has it as image ID (the
#                                               builder's), marks STEP on TO (generation
#                                               $DSLAB_GEN) so the hosts' probe sees the
#                                               image removed
#   remove TAG STEP TO -- SSH_OPTION...     removes TAG on TO (kept while a container uses
#                                            it) and the mark
# FROM, TO: USER@ADDRESS:PORT. stdin: host/image-mark.sh, run on TO for the mark. Progress
# every 15 s while the image travels (a large one takes minutes).
set -euo pipefail
# shellcheck source=../host/lib/ticker.sh
source "$(dirname "${BASH_SOURCE[0]}")/../host/lib/ticker.sh"
action=$1 tag=$2 step=$3 id=
shift 3
[[ $action != ship ]] || { id=$1; shift; }
hosts=()
while [[ $# -gt 0 && $1 != -- ]]; do hosts+=("$1"); shift; done
shift  # --
ssh_options=("$@")
mark_script=$(cat)

on() {  # on USER@ADDRESS:PORT COMMAND...: COMMAND on that host
  local destination=$1
  shift
  ssh "${ssh_options[@]}" -p "${destination##*:}" "${destination%:*}" "$@"
}
mark() {  # mark TO ACTION: host/image-mark.sh ACTION TAG STEP on TO
  on "$1" env "DSLAB_GEN=${DSLAB_GEN:-0}" bash -s -- "$2" "$tag" "$step" <<<"$mark_script"
}

case $action in
  ship)
    from=${hosts[0]} to=${hosts[1]}
    if [[ "$(on "$to" docker image inspect "$tag" --format '{{.Id}}' 2>/dev/null)" == "$id" ]]; then
      echo "$tag already on ${to%:*}" >&2
    else
      still_sending() { echo "still sending $tag to ${to%:*}: $SECONDS s" >&2; }
      tick_while_running still_sending
      on "$from" docker save "$tag" | on "$to" docker load >/dev/null
      stop_ticking
      echo "sent $tag to ${to%:*} in $SECONDS s" >&2
    fi
    mark "$to" mark
    ;;
  remove) mark "${hosts[0]}" remove ;;
  *) echo "usage: image-ship.sh ship TAG STEP ID FROM TO -- SSH_OPTION... | remove TAG STEP TO -- SSH_OPTION..." >&2; exit 64 ;;
esac
