#!/usr/bin/env bash
# A host's results directory when the stack lets it go (`pulumi destroy`, or the host leaving
# the lab), as training.results_on_destroy says in the stack file now: destroy runs no program,
# so the file is read here (assets/operator/stack-setting.py); a file that cannot be read leaves
# MADE, the setting the last `up` applied.
#   keep:   says where the runs stay on the host.
#   remove: runs host/results-dir.sh (stdin) on the host over ssh: `release remove RESULTS
#           STACK_TAG DIR...` removes this stack's run directories there, and each DIR left empty.
# Usage: results-release.sh STACK_FILE MADE HOST USER@ADDRESS:PORT RESULTS STACK_TAG [DIR...] -- SSH_OPTION...
set -euo pipefail
stack_file=$1 made=$2 host=$3 destination=$4 results=$5 tag=$6
shift 6
dirs=()
while [[ $# -gt 0 && $1 != -- ]]; do dirs+=("$1"); shift; done
shift  # --
here=$(dirname "${BASH_SOURCE[0]}")
setting=$("${DSLAB_PYTHON:-.venv/bin/python}" "$here/stack-setting.py" "$stack_file" training.results_on_destroy keep 2>/dev/null || true)
[[ $setting == keep || $setting == remove ]] || setting=$made
if [[ $setting == keep ]]; then
  echo "$host: the results of every run stay in $results (training.results_on_destroy: keep)" >&2
  exit 0
fi
# The host's shell gets one line: each argument quoted for it.
ssh "$@" -p "${destination##*:}" "${destination%:*}" \
  "bash -s -- release remove $(printf '%q ' "$results" "$tag" "${dirs[@]}")"
