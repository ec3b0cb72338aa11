#!/usr/bin/env bash
# On the manager, the training run in the manager container (the run's files are there).
#   run:    a new run of these inputs (the step's create: its inputs changed, or its container
#           is new). A run still going is stopped first. With RESUME auto, when the last run of
#           the same inputs (RUN_SUFFIX: the stack's tag and the inputs key) finished, nothing
#           trains: it is reported; when it did not finish and left a checkpoint (checkpoint-N/
#           as the Trainer saves, checkpoints/latest as train_tiny.py does), this run goes on in
#           its directory, from its newest checkpoint. Else a new directory,
#           RESULTS/<UTC time>-RUN_SUFFIX, holding identity.json (what the run is).
#           Then the preflight (the image's preflight.sh, bounded by PREFLIGHT_S seconds on top
#           of the engine's bound; no arguments: none), then DeepSpeed,
#           waiting for it unless MODE is background. Every @RUN@ in the command line and
#           RECORD becomes the run's name. The run itself writes its status (running,
#           succeeded, failed, stopped) and `finished` into its directory when it ends
#           (run-deepspeed.sh --record RECORD), in both modes. The run is stopped when pdsh
#           loses a node, or when its log stays silent STALL_TIMEOUT seconds. While it runs, the
#           log's last line is shown every DSLAB_PROGRESS_SECONDS (30) when it changed, and a
#           failed run shows its last lines. An engine that stops answering ends the step within
#           DSLAB_PROGRESS_SECONDS and the engine's bound (host/lib/engine-bound.sh); the run goes
#           on in the container. The run appends its log to train.log in its directory on this
#           host when it ends, so it outlives the container.
#   report: the step's update (a setting that does not change what the run is: how it is
#           watched, a timeout, the preflight's figures, a script's text; or the probe found
#           the run's status changed since it was last reported): starts and stops nothing.
#           In wait mode, a run still going is followed to its end.
#   stop:   stop a run still going (the step's delete), and say where the results are:
#           nothing of them is ever deleted here (host/results-dir.sh is).
# The result (run, report) is one JSON line: status, log, summary (the run's last
# `dslab: finished` line), run (its name), resumed_from (the step the run went on from, as its
# log says; null), preflight (preflight.sh's result before the run; null). The status reported
# is kept in the step's mark (run-report.seen): the hosts' probe compares it with the run's.
# Usage: deepspeed-launch.sh run|report|stop CONTAINER WORKDIR RUN_DIR MODE(wait|background)
#          STALL_TIMEOUT RESULTS RECORD RUN_SUFFIX RESUME(auto|never) PREFLIGHT_S
# The run's spec follows the script on stdin, one line each: the identity (JSON), the number
# of preflight.sh's arguments, each of them, the number of the deepspeed command's words,
# each of them (arguments hold no newline).
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/json-string.sh
# dslab:include host/lib/container-output.sh
# dslab:include host/lib/ticker.sh
# dslab:include host/lib/run-stop.sh
# dslab:include host/lib/step-mark.sh

PROGRESS_LINES_ON_FAILURE=15
LAST_RUN="last-run"  # in RESULTS: the name of the last run started
RUNS_WERE="run-results"  # in HOST_STEP_DIR: the RESULTS of the last run started on this host
REPORT_STEP="run-report"

launch() {
  local action=$1 container=$2 workdir=$3 run_dir=$4 mode=$5 stall_timeout=$6 results=$7 record=$8 suffix=$9
  local resume=${10} preflight_s=${11}
  local log="$run_dir/train.log" status="$run_dir/status" state name="" last kept_log identity="" preflight=() argv=()
  case $action in
    stop)
      stop_run_in "$container"
      unmark_host "$REPORT_STEP"
      rm -f "$HOST_STEP_DIR/$REPORT_STEP.seen"
      echo "the results of every run are on each host in $results (training.results_dir)" >&2
      return 0
      ;;
    report)
      name=$(cat "$results/$LAST_RUN" 2>/dev/null || true)
      state=$(run_state "$container" "$results" "$name")
      if [[ $mode == wait && $state == running ]]; then
        follow_run "$container" "$log" "$status" "$results" "$name"
        state=$(run_state "$container" "$results" "$name")
      fi
      ;;
    run)
      IFS= read -r identity
      read_words preflight
      read_words argv
      stop_run_in "$container"
      if [[ "$resume" == auto ]]; then
        last=$(last_run_of "$results" "$suffix")
        [[ -n "$last" ]] || last=$(finished_elsewhere "$results" "$suffix")
        if [[ -n "$last" ]] && finished "$results/$last"; then
          name=$last
          echo "run $name has these inputs and finished: nothing to train (training.resume: auto); its results: $results/$name on every host" >&2
          set_last_run "$results" "$name"
          report "$container" "$log" succeeded "$name" "$run_dir" "$results"
          return 0
        fi
        [[ -z "$last" ]] || ! has_checkpoint "$results/$last" || name=$last
      fi
      [[ ${#preflight[@]} -eq 0 ]] || run_preflight "$container" "$run_dir" "$preflight_s" "${preflight[@]}"
      if [[ -n "$name" ]]; then
        echo "resuming run $name from its last checkpoint (training.resume: auto); its results: $results/$name on every host" >&2
      else
        name=$(new_run "$results" "$suffix")
        printf '%s\n' "$identity" >"$results/$name/identity.json"
        echo "this run's results: $results/$name on every host" >&2
      fi
      echo "run $name: $(tr -d '\n' <"$results/$name/identity.json" 2>/dev/null || echo 'identity unknown')" >&2
      set_last_run "$results" "$name"
      kept_log="$results/$name/train.log"
      start_run "$container" "$workdir" "$log" "$status" "${record//@RUN@/$name}" "$run_dir/hostfile" "$mode" \
        "$stall_timeout" "$kept_log" "${argv[@]//@RUN@/$name}"
      # run-deepspeed.sh exits 0 only once its status file says so: the exit code is the status.
      state=$([[ "$mode" == background ]] && echo running || echo succeeded)
      echo "training $state; the log is $container:$log, kept in $kept_log when the run ends" >&2
      ;;
    *) echo "deepspeed-launch.sh: unknown action $action" >&2; return 64 ;;
  esac
  report "$container" "$log" "$state" "$name" "$run_dir" "$results"
}

# read_words ARRAY: a count on one line from stdin, then that many lines, into ARRAY.
read_words() {
  local -n words=$1
  local count line i
  read -r count
  words=()
  for ((i = 0; i < count; i++)); do
    IFS= read -r line
    words+=("$line")
  done
}

# The last run of RUN_SUFFIX (this stack, these inputs) in RESULTS, if any (a link to a run
# kept elsewhere counts: finished_elsewhere).
last_run_of() {
  { find "$1" -mindepth 1 -maxdepth 1 -xtype d -name "*-$2" -printf '%f\n' 2>/dev/null || true; } | sort | tail -n 1
}

# set_last_run RESULTS NAME: NAME is the last run, in RESULTS; RESULTS is where this host's runs
# were, for the run after a change of training.results_dir (finished_elsewhere).
set_last_run() {
  printf '%s\n' "$2" >"$1/$LAST_RUN"
  mkdir -p "$HOST_STEP_DIR"
  printf '%s\n' "$1" >"$HOST_STEP_DIR/$RUNS_WERE"
}

# finished_elsewhere RESULTS RUN_SUFFIX: when training.results_dir changed since the last run
# (the containers then mount RESULTS, made anew), the last run of RUN_SUFFIX where the runs were:
# one that finished is linked into RESULTS and named (nothing to train again); one that did not
# stays where it is, with its checkpoints, and a new run starts in RESULTS.
finished_elsewhere() {
  local results=$1 suffix=$2 before last
  before=$(head -n 1 "$HOST_STEP_DIR/$RUNS_WERE" 2>/dev/null || true)
  [[ -n "$before" && "$before" != "$results" ]] || return 0
  last=$(last_run_of "$before" "$suffix")
  [[ -n "$last" ]] || return 0
  if ! finished "$before/$last"; then
    echo "run $last, of these inputs, did not finish in $before (training.results_dir before); its checkpoints stay there, and this run starts in $results" >&2
    return 0
  fi
  mkdir -p "$results"
  ln -sfn -- "$before/$last" "$results/$last"
  echo "run $last finished in $before (training.results_dir before): linked as $results/$last" >&2
  echo "$last"
}

# A new run's directory in RESULTS: `<UTC time, ms>-RUN_SUFFIX`, made here (mkdir fails when
# another run took the name: the next millisecond is tried).
new_run() {
  local results=$1 suffix=$2 name
  mkdir -p "$results"
  for _ in $(seq 1 100); do
    name="$(date -u +%Y%m%dT%H%M%S.%3NZ)-$suffix"
    if mkdir "$results/$name" 2>/dev/null; then echo "$name"; return 0; fi
    sleep 0.01
  done
  echo "deepspeed-launch.sh: cannot make a run directory in $results" >&2
  return 1
}

# Whether the run in DIR finished (written by the run itself; `finished` alone by an earlier release).
finished() {
  [[ -e "$1/finished" ]] || [[ "$(head -c 9 "$1/status" 2>/dev/null)" == succeeded ]]
}

has_checkpoint() {
  [[ -f "$1/checkpoints/latest" ]] || compgen -G "$1/checkpoint-*/" >/dev/null
}

# NAME's status as its run wrote it (running, succeeded, failed, stopped): a run that wrote none
# yet (starting) or says running counts while run-deepspeed.sh is in CONTAINER, else `stopped`
# (its container was stopped or made anew); `none` for no run. The same rule as the hosts'
# probe (host-facts.sh's last_run, components.hosts.probe.LastRun): what this step reports is
# compared with what the probe reads.
run_state() {
  local container=$1 results=$2 name=$3 state
  [[ -n "$name" && -d "$results/$name" ]] || { echo none; return 0; }
  state=$(head -n 1 "$results/$name/status" 2>/dev/null || true)
  state=${state%%:*}
  state=${state%% *}
  if [[ -z "$state" ]] && finished "$results/$name"; then state=succeeded; fi
  if [[ -z "$state" || $state == running ]]; then
    state=stopped
    if docker exec "$container" pgrep -f 'run-deepspeed[.]sh' >/dev/null 2>&1; then state=running; fi
  fi
  echo "$state"
}

# The preflight (the image's preflight.sh) in CONTAINER, bounded by BOUND_S seconds on top of
# the engine's bound (0: the all-reduce has no bound); its result kept in RUN_DIR/preflight.json.
run_preflight() {
  local container=$1 run_dir=$2 bound_s=$3 result
  shift 3
  echo "preflight: every node answers, the same hostfile everywhere, a short all-reduce" >&2
  if [[ $bound_s -eq 0 ]]; then
    result=$(command docker exec "$container" /opt/dslab/preflight.sh "$@")
  else
    result=$(DSLAB_ENGINE_TIMEOUT=$((DSLAB_ENGINE_TIMEOUT + bound_s)) docker exec "$container" /opt/dslab/preflight.sh "$@")
  fi
  printf '%s\n' "$result" | tail -n 1 | docker exec -i "$container" sh -c "cat >'$run_dir/preflight.json'"
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
  local container=$1 workdir=$2 log=$3 status=$4 record=$5 hostfile=$6 mode=$7 stall_timeout=$8 kept_log=$9 code seen
  shift 9
  local flags=(--workdir "$workdir" --log "$log" --status "$status" --record "$record" --hostfile "$hostfile"
    --stall-timeout "$stall_timeout")
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
  [[ $code -eq 0 ]] || failed "$container" "$log" "$status" "exit $code" "$kept_log"
}

# A run going in CONTAINER (started in background mode), followed until it ends: the step now
# waits (training.wait: true); a failed end fails it.
follow_run() {
  local container=$1 log=$2 status=$3 results=$4 name=$5 seen
  echo "run $name is still going: following it to its end (training.wait: true)" >&2
  seen=$(mktemp)
  DSLAB_PROGRESS_SECONDS=${DSLAB_PROGRESS_SECONDS:-30} tick_while_running show_progress "$container" "$log" "$seen"
  while docker exec "$container" pgrep -f 'run-deepspeed[.]sh' >/dev/null 2>&1; do sleep 2; done
  stop_ticking
  rm -f "$seen"
  case $(container_output "$container" cat "$status" 2>/dev/null || echo unknown) in
    succeeded) echo "training succeeded; the log is $container:$log" >&2 ;;
    *) failed "$container" "$log" "$status" "it ended" "$results/$name/train.log" ;;
  esac
}

# Ends the step on a failed run, with the log's last lines.
failed() {
  local container=$1 log=$2 status=$3 how=$4 kept_log=$5
  echo "the last lines of $container:$log:" >&2
  docker exec "$container" tail -n "$PROGRESS_LINES_ON_FAILURE" "$log" 2>/dev/null | sed 's/^/  /' >&2 || true
  echo "training failed ($how, status: $(container_output "$container" cat "$status" 2>/dev/null || echo unknown));" \
    "the whole log is $container:$log${kept_log:+, kept in $kept_log}" >&2
  exit 1
}

# Prints the result, and keeps the status reported in the step's mark.
report() {
  local container=$1 log=$2 state=$3 name=$4 run_dir=$5 results=$6 summary resumed_from preflight
  summary=$(container_output "$container" sh -c "grep -a 'dslab: finished' '$log' | tail -n 1" 2>/dev/null || true)
  # A run reported finished again (a new container) has its summary in its kept log only.
  if [[ -z "$summary" && -n "$name" && -f "$results/$name/train.log" ]]; then
    summary=$(grep -a 'dslab: finished' "$results/$name/train.log" | tail -n 1 || true)
  fi
  # train_tiny.py's line, or the Trainer's ("Continuing training from global step N").
  resumed_from=$(container_output "$container" sh -c \
    "grep -a -o -E 'dslab: resumed from step=[0-9]+|Continuing training from global step [0-9]+' '$log' | tail -n 1" \
    2>/dev/null | grep -o -E '[0-9]+$' || true)
  preflight=$(docker exec "$container" cat "$run_dir/preflight.json" 2>/dev/null | tail -n 1 || true)
  [[ $preflight == \{* ]] || preflight=null
  mark_host "$REPORT_STEP"
  printf '%s %s\n' "${name:--}" "$state" >"$HOST_STEP_DIR/$REPORT_STEP.seen"
  # The summary is a line the run wrote: anything may be in it.
  printf '{"status": %s, "log": %s, "summary": %s, "run": %s, "resumed_from": %s, "preflight": %s}\n' \
    "$(json_string "$state")" "$(json_string "$log")" "$(json_string "$summary")" "$(json_string "$name")" \
    "${resumed_from:-null}" "$preflight"
}

# One line: bash has read it whole before the spec that follows it on stdin.
launch "$@"; exit
