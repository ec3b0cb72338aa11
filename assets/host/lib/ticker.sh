# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/ticker.sh` (components/remote_script.py).

# Runs COMMAND (which says something on stderr) every DSLAB_PROGRESS_SECONDS (15) seconds until
# the script exits: a step that takes minutes says how far it is. Sets the EXIT trap.
# The ticker holds none of the script's stdin/stdout and its sleep none of its pipes (nor fd 7,
# host/lib/engine-bound.sh's copy of stderr): left running, they would keep the ssh session
# (and the step) open after the script ended.
tick_while_running() {
  ( while sleep "${DSLAB_PROGRESS_SECONDS:-15}" >/dev/null 2>&1 7>&-; do "$@"; done ) </dev/null >/dev/null &
  # shellcheck disable=SC2064  # the ticker's pid, now
  trap "kill $! 2>/dev/null || true" EXIT
}
