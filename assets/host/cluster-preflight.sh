#!/usr/bin/env bash
# On the manager, before training: measure the cluster from the manager container
# (preflight.sh: ssh to every node, the same hostfile everywhere, a short all-reduce, with
# the .deepspeed_env the run gets). Prints its JSON result.
# Usage: cluster-preflight.sh CONTAINER WORKDIR RUN_DIR REACH_TIMEOUT RUN_TIMEOUT MIN_BUSBW -- ALLREDUCE_ARGV...
set -euo pipefail
container=$1 workdir=$2 run_dir=$3 reach_timeout=$4 run_timeout=$5 min_busbw=$6
shift 7  # CONTAINER WORKDIR RUN_DIR REACH_TIMEOUT RUN_TIMEOUT MIN_BUSBW --

docker exec "$container" /opt/dslab/preflight.sh \
  --workdir "$workdir" --hostfile "$run_dir/hostfile" --log "$run_dir/preflight.log" \
  --reach-timeout "$reach_timeout" --run-timeout "$run_timeout" --min-busbw "$min_busbw" -- "$@"
