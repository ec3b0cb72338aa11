# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/ticker.sh` (components/hosts/host_script.py).

# Runs COMMAND (which says something on stderr) every DSLAB_PROGRESS_SECONDS (15) seconds until
# the script exits: a step that takes minutes says how far it is. Sets the EXIT trap.
# The ticker holds none of the script's stdin/stdout and its sleep none of its pipes (nor fd 7,
# host/lib/engine-bound.sh's copy of stderr): left running, they would keep the ssh session
# (and the step) open after the script ended.
tick_while_running() {
  ( while sleep "${DSLAB_PROGRESS_SECONDS:-15}" >/dev/null 2>&1 7>&-; do "$@"; done ) </dev/null >/dev/null &
  ticker_pid=$!
  trap stop_ticking EXIT
}

# Stops the ticker and waits for it: a line it was writing comes before the caller's next one
# ("done" is never followed by "still going").
stop_ticking() {
  [[ -n "${ticker_pid:-}" ]] || return 0
  kill "$ticker_pid" 2>/dev/null || true
  wait "$ticker_pid" 2>/dev/null || true
  ticker_pid=
}
