#!/usr/bin/env bash
# On the manager, the training run in the manager container (the run's files are there).
#   run:    start DeepSpeed (a run still going is stopped first), waiting for it unless MODE
#           is background. The run is stopped when pdsh loses a node, or when its log stays
#           silent STALL_TIMEOUT seconds. The log stays in the container; while it runs, its
#           last line is shown every DSLAB_PROGRESS_SECONDS (30) when it changed, and a failed
#           run shows its last lines. An engine that stops answering ends the step within
#           DSLAB_PROGRESS_SECONDS and the engine's bound (host/lib/engine-bound.sh); the run
#           goes on in the container until the next run or preflight stops it.
#           Each run writes into a directory of its own on every host, RESULTS/<UTC time>-KEY
#           (KEY names its inputs), mounted into the containers: every @RUN@ in the command
#           line and LOSS_PLOT becomes that name. A finished run's directory gets `finished`.
#           With RESUME auto, when the last run of the same KEY did not finish and left a
#           checkpoint (checkpoint-N/ as the Trainer saves, checkpoints/latest as
#           train_tiny.py does), this run goes on in its directory: the workload resumes
#           from its newest checkpoint there. In wait mode the run's log is appended to
#           train.log in its directory on this host when the run ends (each attempt of a
#           resumed run after the one before), so it outlives the container.
#   report: say what the last run left, without running anything (the step's update).
#   stop:   stop a run still going (background mode; the step's delete), and say where the
#           results are: nothing of them is ever deleted here (host/results-dir.sh is).
# The result (run, report) is one JSON line: status, log, summary (the run's last
# `dslab: finished` line), run (its name), resumed_from (the step the run went on from, as its
# log says; null) and, in wait mode, the LOSS_PLOT the run drew (a PNG in the container; - for
# none) base64-encoded, for the operator's copy.
# Usage: deepspeed-launch.sh run|report|stop CONTAINER WORKDIR RUN_DIR MODE(wait|background) STALL_TIMEOUT LOSS_PLOT RESULTS KEY RESUME(auto|never) -- DEEPSPEED_ARGV...
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/json-string.sh
# dslab:include host/lib/container-output.sh
# dslab:include host/lib/ticker.sh
# dslab:include host/lib/run-stop.sh

PROGRESS_LINES_ON_FAILURE=15
LAST_RUN="last-run"  # in RESULTS: the name of the last run started

launch() {
  local action=$1 container=$2 workdir=$3 run_dir=$4 mode=$5 stall_timeout=$6 loss_plot=$7 results=$8 key=$9 resume=${10}
  shift 11  # ACTION CONTAINER WORKDIR RUN_DIR MODE STALL_TIMEOUT LOSS_PLOT RESULTS KEY RESUME --
  local log="$run_dir/train.log" status="$run_dir/status" state name kept_log
  case $action in
    stop)
      stop_run_in "$container"
      echo "the results of every run are on each host in $results (training.results_dir)" >&2
      return 0
      ;;
    report)
      state=$(container_output "$container" cat "$status" 2>/dev/null || echo unknown)
      name=$(cat "$results/$LAST_RUN" 2>/dev/null || true)
      ;;
    run)
      stop_run_in "$container"
      name=""
      [[ "$resume" != auto ]] || name=$(unfinished_run "$results" "$key")
      if [[ -n "$name" ]]; then
        echo "resuming run $name from its last checkpoint (training.resume: auto); its results: $results/$name on every host" >&2
      else
        name="$(date -u +%Y%m%dT%H%M%SZ)-$key"
        mkdir -p "$results/$name"
        echo "this run's results: $results/$name on every host" >&2
      fi
      printf '%s\n' "$name" >"$results/$LAST_RUN"
      # A background run's log is still being written: it stays in the container only.
      kept_log="$results/$name/train.log"
      [[ "$mode" != background ]] || kept_log=""
      start_run "$container" "$workdir" "$log" "$status" "$run_dir/hostfile" "$mode" "$stall_timeout" \
        "$kept_log" "${@//@RUN@/$name}"
      # run-deepspeed.sh exits 0 only once its status file says so: the exit code is the status.
      if [[ "$mode" == background ]]; then
        state=running
        echo "training $state; the log is $container:$log" >&2
      else
        state=succeeded
        date -u +%FT%TZ >"$results/$name/finished"
        echo "training $state; the log is $container:$log, kept in $kept_log" >&2
      fi
      ;;
    *) echo "deepspeed-launch.sh: unknown action $action" >&2; return 64 ;;
  esac
  report "$container" "$log" "$state" "$mode" "${loss_plot//@RUN@/$name}" "$name"
}

# The last run of KEY in RESULTS when it did not finish and left a checkpoint; else nothing.
unfinished_run() {
  local results=$1 key=$2 last
  last=$(find "$results" -mindepth 1 -maxdepth 1 -type d -name "*-$key" -printf '%f\n' 2>/dev/null | sort | tail -n 1)
  [[ -n "$last" && ! -e "$results/$last/finished" ]] || return 0
  if [[ -f "$results/$last/checkpoints/latest" ]] || compgen -G "$results/$last/checkpoint-*/" >/dev/null; then
    echo "$last"
  fi
}

# The last log line, when it is new since the last time it was shown (run by the ticker).
# shellcheck disable=SC2317
show_progress() {
  local container=$1 log=$2 seen=$3 line
  line=$(docker exec "$container" tail -n 1 "$log" 2>/dev/null | tr -d '\r') || return 0
  [[ -n "$line" && "$line" != "$(cat "$seen" 2>/dev/null)" ]] || return 0
  printf '%s\n' "$line" >"$seen"
  echo "[train.log] $line" >&2
}

start_run() {
  local container=$1 workdir=$2 log=$3 status=$4 hostfile=$5 mode=$6 stall_timeout=$7 kept_log=$8 code seen
  shift 8
  local flags=(--workdir "$workdir" --log "$log" --status "$status" --hostfile "$hostfile" --stall-timeout "$stall_timeout")
  [[ "$mode" == background ]] && flags+=(--background)
  echo "launching in $container: $*" >&2
  seen=$(mktemp)
  DSLAB_PROGRESS_SECONDS=${DSLAB_PROGRESS_SECONDS:-30} tick_while_running show_progress "$container" "$log" "$seen"
  set +e
  # Its stdout is the log, which stays in the container; what it says about the run is on stderr.
  # Training is long by nature: the ticker's bounded calls notice an engine that stopped answering.
  command docker exec "$container" /opt/dslab/run-deepspeed.sh "${flags[@]}" -- "$@" >/dev/null
  code=$?
  set -e
  stop_ticking
  rm -f "$seen"
  [[ -z "$kept_log" ]] || keep_log "$container" "$log" "$kept_log"
  if [[ $code -ne 0 ]]; then
    echo "the last lines of $container:$log:" >&2
    docker exec "$container" tail -n "$PROGRESS_LINES_ON_FAILURE" "$log" 2>/dev/null | sed 's/^/  /' >&2 || true
    echo "training failed (exit $code, status: $(container_output "$container" cat "$status" 2>/dev/null || echo unknown));" \
      "the whole log is $container:$log${kept_log:+, kept in $kept_log}" >&2
    exit "$code"
  fi
}

# The run's log appended to KEPT, in the run's directory on this host: it outlives the container.
keep_log() {
  local container=$1 log=$2 kept=$3
  docker exec "$container" cat "$log" >>"$kept" 2>/dev/null || echo "warning: the log $container:$log could not be kept in $kept" >&2
}

report() {
  local container=$1 log=$2 state=$3 mode=$4 loss_plot=$5 name=$6 summary resumed_from plot_base64=""
  summary=$(container_output "$container" sh -c "grep -a 'dslab: finished' '$log' | tail -n 1" 2>/dev/null || true)
  # train_tiny.py's line, or the Trainer's ("Continuing training from global step N").
  resumed_from=$(container_output "$container" sh -c \
    "grep -a -o -E 'dslab: resumed from step=[0-9]+|Continuing training from global step [0-9]+' '$log' | tail -n 1" \
    2>/dev/null | grep -o -E '[0-9]+$' || true)
  if [[ "$mode" == wait && "$loss_plot" != - && "$state" == succeeded ]]; then
    if plot_base64=$(container_output "$container" base64 -w0 "$loss_plot" 2>/dev/null); then
      echo "copying the loss curve $container:$loss_plot back" >&2
    else
      echo "warning: the run drew no loss curve at $container:$loss_plot" >&2
      plot_base64=""
    fi
  fi
  # The summary is a line the run wrote: anything may be in it.
  printf '{"status": %s, "log": %s, "summary": %s, "run": %s, "resumed_from": %s, "loss_plot": %s, "loss_plot_png": "%s"}\n' \
    "$(json_string "$state")" "$(json_string "$log")" "$(json_string "$summary")" "$(json_string "$name")" \
    "${resumed_from:-null}" "$(json_string "${plot_base64:+$loss_plot}")" "$plot_base64"
}

launch "$@"
exit
