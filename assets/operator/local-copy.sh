#!/usr/bin/env bash
# The operator's copy of a file on a host (the loss curve), on this machine.
#   fetch PATH SOURCE USER@ADDRESS:PORT -- SSH_OPTION...
#                    copies SOURCE from the host over ssh (nothing when SOURCE is empty: no
#                    file), written whole, then marked: PATH's generation ($DSLAB_GEN) and
#                    sha256 go to .NAME.dslab beside it. A SOURCE not there (yet) is no file.
#   generation PATH  prints the generation while the file is as written, the next one when it
#                    was removed or changed (the next `up` writes it again, once)
#   remove PATH      removes the file and its mark
set -euo pipefail
action=$1 path=$2
mark="$(dirname "$path")/.$(basename "$path").dslab"
case $action in
  fetch)
    source=$3 destination=$4
    shift 5  # ACTION PATH SOURCE DESTINATION --
    mkdir -p "$(dirname "$path")"
    rm -f "$path.partial"
    if [[ -n "$source" ]]; then
      # The host's shell gets one line: the path quoted for it.
      ssh "$@" -p "${destination##*:}" "${destination%:*}" "cat $(printf '%q' "$source") 2>/dev/null || true" >"$path.partial"
    fi
    if [[ -s "$path.partial" ]]; then
      mv "$path.partial" "$path"
      echo "${DSLAB_GEN:-0} $(sha256sum <"$path" | cut -d' ' -f1)" >"$mark"
      echo "copied ${destination%:*}:$source to $path" >&2
    else
      [[ -z "$source" ]] || echo "warning: ${destination%:*}:$source is not there; no copy at $path" >&2
      rm -f "$path.partial" "$path"
      echo "${DSLAB_GEN:-0} -" >"$mark"
    fi
    ;;
  generation)
    read -r generation digest 2>/dev/null <"$mark" || { echo 0; exit 0; }
    if [[ "$digest" == - && ! -e "$path" ]] || [[ -f "$path" && "$(sha256sum <"$path" | cut -d' ' -f1)" == "$digest" ]]; then
      echo "$generation"
    else
      echo $((generation + 1))
    fi
    ;;
  remove) rm -f "$path" "$mark" ;;
  *) echo "usage: local-copy.sh fetch PATH SOURCE USER@ADDRESS:PORT -- SSH_OPTION... | generation PATH | remove PATH" >&2; exit 64 ;;
esac
