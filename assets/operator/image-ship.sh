#!/usr/bin/env bash
# The image built on one host, copied to another through this machine (image.distribution:
# build-once): `docker save` on FROM piped into `docker load` on TO.
#   ship TAG STEP ID FROM TO -- SSH_OPTION... [-- TO_SSH_OPTION...]
#                                           copies TAG unless TO has it as image ID (the
#                                           builder's; held under another name only, TO
#                                           gets the name), marks STEP on TO (generation
#                                           $DSLAB_GEN) so the hosts' probe sees the image
#                                           removed; TO_SSH_OPTION where TO is reached
#                                           otherwise (through another jump host)
#   remove TAG STEP TO -- SSH_OPTION...     removes TAG on TO (kept while a container uses
#                                           it) and the mark
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
# The first host's options, then the second's (the same unless given).
options_0=() options_1=()
while [[ $# -gt 0 && $1 != -- ]]; do options_0+=("$1"); shift; done
if [[ $# -gt 0 ]]; then
  shift
  options_1=("$@")
else
  # shellcheck disable=SC2034  # read by on(), by name
  options_1=("${options_0[@]}")
fi
mark_script=$(cat)

on() {  # on INDEX COMMAND...: COMMAND on hosts[INDEX]
  local -n options="options_$1"
  local destination=${hosts[$1]}
  shift
  ssh "${options[@]}" -p "${destination##*:}" "${destination%:*}" "$@"
}
mark() {  # mark INDEX ACTION: host/image-mark.sh ACTION TAG STEP on hosts[INDEX]
  on "$1" env "DSLAB_GEN=${DSLAB_GEN:-0}" bash -s -- "$2" "$tag" "$step" <<<"$mark_script"
}

case $action in
  ship)
    to=${hosts[1]}
    if [[ "$(on 1 docker image inspect "$tag" --format '{{.Id}}' 2>/dev/null)" == "$id" ]]; then
      echo "$tag already on ${to%:*}" >&2
    elif on 1 docker image inspect "$id" --format '{{.Id}}' >/dev/null 2>&1; then
      # The same image under another name only (another stack's, a kept copy; an image id is
      # its content's digest): naming it is all that is missing.
      on 1 docker tag "$id" "$tag"
      echo "$tag already on ${to%:*} under another name: named it" >&2
    else
      still_sending() { echo "still sending $tag to ${to%:*}: $SECONDS s" >&2; }
      tick_while_running still_sending
      on 0 docker save "$tag" | on 1 docker load >/dev/null
      stop_ticking
      echo "sent $tag to ${to%:*} in $SECONDS s" >&2
    fi
    mark 1 mark
    ;;
  remove) mark 0 remove ;;
  *) echo "usage: image-ship.sh ship TAG STEP ID FROM TO -- SSH_OPTION... [-- TO_SSH_OPTION...] | remove TAG STEP TO -- SSH_OPTION..." >&2; exit 64 ;;
esac
