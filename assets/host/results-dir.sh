#!/usr/bin/env bash
# The stack's results directory on a host (training.results_dir), which its container mounts.
#   make RESULTS                          makes it (the step's create) and marks the step's
#                                         generation (host/lib/step-mark.sh); the hosts'
#                                         probe reads the directory itself
#   forget                                the step's delete: its mark goes (and the note of
#                                         where the last run was); the runs are
#                                         released by the operator's step
#                                         (assets/operator/results-release.sh), which reads
#                                         the setting in force then
#   release keep|remove RESULTS STACK_TAG [DIR...]
#                                         keep: says where the runs stay. remove:
#                                         removes the run directories this stack made there
#                                         (<UTC time>-STACK_TAG-<inputs key>,
#                                         deepspeed-launch.sh; a link to one kept
#                                         elsewhere: the link) and the last-run file when it
#                                         names one of them, then each DIR that is left empty
#                                         (the default directory and its parents). Another
#                                         stack's runs and anything else in RESULTS stay.
set -euo pipefail
# dslab:include host/lib/step-mark.sh
host=${DSLAB_HOST:-this host}

case ${1:-} in
  make) mkdir -p "$2" && mark_host results ;;
  # With the step goes the note of where this host's last run was (deepspeed-launch.sh's run-results).
  forget) rm -f "$HOST_STEP_DIR/run-results" && unmark_host results ;;
  release)
    mode=$2 results=$3 stack_tag=$4
    shift 4
    run_name="[0-9]{8}T[0-9]{6}[.][0-9]{3}Z-$stack_tag-[0-9a-f]{12}"
    if [[ $mode == keep ]]; then
      echo "$host: the results of every run stay in $results (training.results_on_destroy: keep)" >&2
      exit 0
    fi
    runs=0
    if [[ -d $results ]]; then
      while IFS= read -r -d '' run; do
        rm -rf -- "$run"
        runs=$((runs + 1))
      done < <(find "$results" -mindepth 1 -maxdepth 1 -xtype d -regextype posix-extended -regex ".*/$run_name" -print0)
      if grep -q -E -x "$run_name" "$results/last-run" 2>/dev/null; then rm -f -- "$results/last-run"; fi
    fi
    for dir in "$@"; do rmdir -- "$dir" 2>/dev/null || true; done
    echo "$host: removed $runs run(s) from $results (training.results_on_destroy: remove)" >&2
    ;;
  *) echo "usage: results-dir.sh make RESULTS | forget | release keep|remove RESULTS STACK_TAG [DIR...]" >&2; exit 64 ;;
esac
