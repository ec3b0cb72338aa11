#!/usr/bin/env bash
# On the manager: place the run's files (tar on stdin, unpacked at / in the container) and
# start DeepSpeed in the manager container, waiting for it unless MODE is background. The
# run is stopped when pdsh loses a node, or when its log stays silent STALL_TIMEOUT seconds.
# Usage: deepspeed-launch.sh CONTAINER WORKDIR RUN_DIR MODE(wait|background) STALL_TIMEOUT -- DEEPSPEED_ARGV...
set -euo pipefail
container=$1 workdir=$2 run_dir=$3 mode=$4 stall_timeout=$5
shift 6  # CONTAINER WORKDIR RUN_DIR MODE STALL_TIMEOUT --

docker exec -i "$container" tar -x -o -C /  # .deepspeed_env into root's home
log="$run_dir/train.log"
status="$run_dir/status"
flags=(--workdir "$workdir" --log "$log" --status "$status" --hostfile "$run_dir/hostfile" --stall-timeout "$stall_timeout")
[[ "$mode" == background ]] && flags+=(--background)

echo "launching in $container: $*" >&2
set +e
docker exec "$container" /opt/dslab/run-deepspeed.sh "${flags[@]}" -- "$@" >&2
code=$?
set -e
state=$(docker exec "$container" cat "$status" 2>/dev/null || echo unknown)
if [[ $code -ne 0 ]]; then
  echo "training failed (exit $code, status: $state); the log is $container:$log" >&2
  exit "$code"
fi
summary=$(docker exec "$container" sh -c "grep -a 'dslab: finished' '$log' | tail -n 1" 2>/dev/null || true)
printf '{"status": "%s", "log": "%s", "summary": "%s"}\n' "$state" "$log" "${summary//\"/\'}"
