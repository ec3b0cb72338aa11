#!/usr/bin/env bash
# `ssh` for bench/noop_cost.py: logs each ssh the operator's side starts (time and its last
# word, the command or the destination) to $DSLAB_SSH_LOG, then runs the real one. With
# $DSLAB_SSH_MUX set (a folder), every ssh shares one master connection per destination there.
printf '%s %s\n' "$(date +%s.%N)" "${*: -1}" >>"${DSLAB_SSH_LOG:?}"
if [[ -n ${DSLAB_SSH_MUX:-} ]]; then
  exec /usr/bin/ssh -o ControlMaster=auto -o "ControlPath=$DSLAB_SSH_MUX/%C" -o ControlPersist=60 "$@"
fi
exec /usr/bin/ssh "$@"
