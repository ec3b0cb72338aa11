#!/usr/bin/env bash
# On the manager: start DeepSpeed in the manager container (the run's files are there),
# waiting for it unless MODE is background. The run is stopped when pdsh loses a node, or
# when its log stays silent STALL_TIMEOUT seconds.
# In wait mode, a finished run's LOSS_PLOT (a PNG in the container; - for none) comes back
# base64-encoded in the result, for the operator's copy.
# Usage: deepspeed-launch.sh CONTAINER WORKDIR RUN_DIR MODE(wait|background) STALL_TIMEOUT LOSS_PLOT -- DEEPSPEED_ARGV...
set -euo pipefail
# dslab:include host/lib/json-string.sh
# dslab:include host/lib/container-output.sh
container=$1 workdir=$2 run_dir=$3 mode=$4 stall_timeout=$5 loss_plot=$6
shift 7  # CONTAINER WORKDIR RUN_DIR MODE STALL_TIMEOUT LOSS_PLOT --

log="$run_dir/train.log"
status="$run_dir/status"
flags=(--workdir "$workdir" --log "$log" --status "$status" --hostfile "$run_dir/hostfile" --stall-timeout "$stall_timeout")
[[ "$mode" == background ]] && flags+=(--background)

echo "launching in $container: $*" >&2
set +e
docker exec "$container" /opt/dslab/run-deepspeed.sh "${flags[@]}" -- "$@" >&2
code=$?
set -e
if [[ $code -ne 0 ]]; then
  state=$(container_output "$container" cat "$status" 2>/dev/null || echo unknown)
  echo "training failed (exit $code, status: $state); the log is $container:$log" >&2
  exit "$code"
fi
# run-deepspeed.sh exits 0 only once its status file says so: the exit code is the status.
state=succeeded
[[ "$mode" == background ]] && state=running
summary=$(container_output "$container" sh -c "grep -a 'dslab: finished' '$log' | tail -n 1" 2>/dev/null || true)
plot_base64=""
if [[ "$mode" == wait && "$loss_plot" != - ]]; then
  if plot_base64=$(container_output "$container" base64 -w0 "$loss_plot" 2>/dev/null); then
    echo "copying the loss curve $container:$loss_plot back" >&2
  else
    echo "warning: the run drew no loss curve at $container:$loss_plot" >&2
    plot_base64=""
  fi
fi
# The summary is a line the run wrote: anything may be in it.
printf '{"status": %s, "log": %s, "summary": %s, "loss_plot": %s, "loss_plot_png": "%s"}\n' \
  "$(json_string "$state")" "$(json_string "$log")" "$(json_string "$summary")" \
  "$(json_string "${plot_base64:+$loss_plot}")" "$plot_base64"
