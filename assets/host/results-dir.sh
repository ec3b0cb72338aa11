#!/usr/bin/env bash
# The stack's results directory on a host (training.results_dir), which its container mounts.
#   make RESULTS                          makes it (the step's create) and marks the step's
#                                         generation (host/lib/step-mark.sh); the hosts'
#                                         probe reads the directory itself
#   release keep|remove RESULTS [DIR...]  the step's delete (pulumi destroy, or the host left
#                                         the lab). keep: says where the runs stay. remove:
#                                         removes the run directories the stack made there
#                                         (<UTC time>-<inputs key>, deepspeed-launch.sh) and
#                                         its last-run file, then each DIR that is left empty
#                                         (the default directory and its parents). Anything
#                                         else in RESULTS is the user's and stays.
set -euo pipefail
# dslab:include host/lib/step-mark.sh
RUN_NAME='[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}'
host=${DSLAB_HOST:-this host}

case ${1:-} in
  make) mkdir -p "$2" && mark_host results ;;
  release)
    mode=$2 results=$3
    shift 3
    unmark_host results
    if [[ $mode == keep ]]; then
      echo "$host: the results of every run stay in $results (training.results_on_destroy: keep)" >&2
      exit 0
    fi
    runs=0
    if [[ -d $results ]]; then
      while IFS= read -r -d '' run; do
        rm -rf -- "$run"
        runs=$((runs + 1))
      done < <(find "$results" -mindepth 1 -maxdepth 1 -type d -regextype posix-extended -regex ".*/$RUN_NAME" -print0)
      rm -f -- "$results/last-run"
    fi
    for dir in "$@"; do rmdir -- "$dir" 2>/dev/null || true; done
    echo "$host: removed $runs run(s) from $results (training.results_on_destroy: remove)" >&2
    ;;
  *) echo "usage: results-dir.sh make RESULTS | release keep|remove RESULTS [DIR...]" >&2; exit 64 ;;
esac
