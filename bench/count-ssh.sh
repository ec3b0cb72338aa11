#!/usr/bin/env bash
# `ssh` for bench/noop_cost.py: logs each ssh the operator's side starts (time and its last
# word, the command or the destination) to $DSLAB_SSH_LOG, then runs the real one.
printf '%s %s\n' "$(date +%s.%N)" "${*: -1}" >>"${DSLAB_SSH_LOG:?}"
exec /usr/bin/ssh "$@"
