# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/run-stop.sh` (components/hosts/host_script.py).

# Stops a training run still going in CONTAINER: run-deepspeed.sh, the launcher, pdsh and the
# ranks it started (the other nodes' ranks end with pdsh's sessions; the next run stops what
# is left on every node), and waits until its lock is free. A run outlives its step when the
# step ends without it: background mode, or a step ended by an engine that stopped answering
# (host/lib/engine-bound.sh). Before the next run or its preflight, which take the same
# master port. Says so when it stopped one.
stop_run_in() {
  local container=$1
  docker container inspect "$container" >/dev/null 2>&1 || return 0
  docker exec "$container" pkill -f 'deepspeed' 2>/dev/null || return 0
  for _ in $(seq 1 30); do
    docker exec "$container" pgrep -f 'run-deepspeed[.]sh' >/dev/null 2>&1 || break
    sleep 1
  done
  echo "stopped the training run still going in $container" >&2
}
