# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/run-stop.sh` (components/hosts/host_script.py).

# Stops a training run still going in CONTAINER: run-deepspeed.sh, the launcher, pdsh and the
# ranks it started (the other nodes' ranks end with pdsh's sessions; the next run stops what
# is left on every node), and waits until its lock is free. A run outlives its step when the
# step ends without it: background mode, or a step ended by an engine that stopped answering
# (host/lib/engine-bound.sh). Before the next run or its preflight, which take the same
# master port. Says so when it stopped one. A checkpoint being saved is let finish first
# (DSLAB_SAVE_WAIT_S, 120 s at most): cut mid-save, it would not count (assets/checkpoint_parts.py).
stop_run_in() {
  local container=$1
  docker container inspect "$container" >/dev/null 2>&1 || return 0
  wait_for_a_save "$container"
  docker exec "$container" pkill -f 'deepspeed' 2>/dev/null || return 0
  for _ in $(seq 1 30); do
    docker exec "$container" pgrep -f 'run-deepspeed[.]sh' >/dev/null 2>&1 || break
    sleep 1
  done
  echo "stopped the training run still going in $container" >&2
}

# Waits while a rank in CONTAINER saves a checkpoint: a run's directory holds .dslab-saving with
# the pid of a process that is still there.
# shellcheck disable=SC2016  # expanded by the sh in the container
wait_for_a_save() {
  local container=$1 waited
  for waited in $(seq 0 "${DSLAB_SAVE_WAIT_S:-120}"); do
    docker exec "$container" sh -c '
      for mark in /opt/dslab/results/*/.dslab-saving; do
        [ -e "$mark" ] && kill -0 "$(cat "$mark")" 2>/dev/null && exit 0
      done
      exit 1' 2>/dev/null || return 0
    [[ $waited -gt 0 ]] || echo "waiting for the checkpoint being saved in $container before stopping the run" >&2
    sleep 1
  done
  echo "warning: the checkpoint being saved in $container took over ${DSLAB_SAVE_WAIT_S:-120} s; stopping the run anyway" >&2
}
