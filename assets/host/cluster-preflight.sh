#!/usr/bin/env bash
# On the manager, before training: place .deepspeed_env (tar on stdin, unpacked at / in the
# container), then measure the cluster from the manager container (preflight.sh: ssh to
# every node, the same hostfile everywhere, a short all-reduce). Prints its JSON result.
# Usage: cluster-preflight.sh CONTAINER WORKDIR RUN_DIR REACH_TIMEOUT RUN_TIMEOUT MIN_BUSBW -- ALLREDUCE_ARGV...
set -euo pipefail
container=$1 workdir=$2 run_dir=$3 reach_timeout=$4 run_timeout=$5 min_busbw=$6
shift 7  # CONTAINER WORKDIR RUN_DIR REACH_TIMEOUT RUN_TIMEOUT MIN_BUSBW --

docker exec -i "$container" tar -x -o -C /  # .deepspeed_env into root's home
docker exec "$container" /opt/dslab/preflight.sh \
  --workdir "$workdir" --hostfile "$run_dir/hostfile" --log "$run_dir/preflight.log" \
  --reach-timeout "$reach_timeout" --run-timeout "$run_timeout" --min-busbw "$min_busbw" -- "$@"
