#!/usr/bin/env bash
# The operator's copy of a file the stack holds (the loss curve), on this machine.
#   write PATH       stdin holds the file, base64-encoded (nothing: no file); written whole,
#                    then marked: PATH's generation ($DSLAB_GEN) and sha256 go to .NAME.dslab
#                    beside it
#   generation PATH  prints the generation while the file is as written, the next one when it
#                    was removed or changed (the next `up` writes it again, once)
#   remove PATH      removes the file and its mark
set -euo pipefail
action=$1 path=$2
mark="$(dirname "$path")/.$(basename "$path").dslab"
case $action in
  write)
    mkdir -p "$(dirname "$path")"
    base64 -d >"$path.partial"
    if [[ -s "$path.partial" ]]; then
      mv "$path.partial" "$path"
      echo "${DSLAB_GEN:-0} $(sha256sum <"$path" | cut -d' ' -f1)" >"$mark"
    else
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
  *) echo "usage: local-copy.sh write|generation|remove PATH" >&2; exit 64 ;;
esac
