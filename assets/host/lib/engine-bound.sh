# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/engine-bound.sh` (components/hosts/host_script.py).

# Every `docker` call of the script ends within DSLAB_ENGINE_TIMEOUT seconds: the stack's
# operator.host_timeout as the host keeps it (host/host-timeout.sh), 60 before that step ran.
# DSLAB_HOST names the host (components.hosts.host_script sets it).
# An engine that accepts connections and never answers (deadlocked, swamped) would hold the
# step, and `pulumi up` with it, for ever. One that ran out ends the whole step at once, naming
# the host, whatever the caller does with the call's status (`|| true`, `2>/dev/null`): its
# process group (the script, a ticker, a docker client) is stopped, so the ssh session ends.
# Calls long by nature (a training run) say `command docker`.
# dslab:include host/lib/host-timeout-file.sh
if [[ -z ${DSLAB_ENGINE_TIMEOUT:-} ]]; then
  DSLAB_ENGINE_TIMEOUT=60
  if [[ -r $HOST_TIMEOUT_FILE ]]; then read -r DSLAB_ENGINE_TIMEOUT <"$HOST_TIMEOUT_FILE" || true; fi
  [[ $DSLAB_ENGINE_TIMEOUT =~ ^[0-9]+$ ]] || DSLAB_ENGINE_TIMEOUT=60
fi
# fd 7: the step's own stderr, for the message, whatever the caller did with the call's (a
# function called with 2>/dev/null has that as its stderr). A process left running after the
# script must not hold it (host/lib/ticker.sh closes it), or the ssh session stays open.
exec 7>&2
docker() {
  local started=$SECONDS code=0
  # timeout runs the program, not this function.
  timeout --kill-after=5 "$DSLAB_ENGINE_TIMEOUT" docker "$@" || code=$?
  # A command run by `docker exec` may exit 124 itself: only a call that took the whole bound ran out.
  if [[ ($code -eq 124 || $code -eq 137) && $((SECONDS - started)) -ge $DSLAB_ENGINE_TIMEOUT ]]; then
    echo "${DSLAB_HOST:-$(hostname)}: the Docker engine does not answer (no reply in $DSLAB_ENGINE_TIMEOUT s)" >&7
    kill -TERM 0
  fi
  return "$code"
}
