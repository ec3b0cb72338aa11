#!/usr/bin/env bash
# On the manager: the image's preflight.sh in the manager's container (every node answers,
# the same hostfile everywhere, a short all-reduce; components/steps/preflight.py). Its checks
# are bounded by their own timeouts (CHECKS_S in all; 0 when the all-reduce has no limit); the
# engine's bound comes on top of them. A training run still going there is stopped first: the
# preflight comes right before a new run, and its all-reduce takes the same master port.
# Usage: preflight-check.sh CONTAINER CHECKS_S -- PREFLIGHT_ARGS...
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/run-stop.sh
container=$1 checks_s=$2
shift 3
stop_run_in "$container"
if [[ $checks_s -eq 0 ]]; then
  command docker exec "$container" /opt/dslab/preflight.sh "$@"
else
  DSLAB_ENGINE_TIMEOUT=$((DSLAB_ENGINE_TIMEOUT + checks_s)) docker exec "$container" /opt/dslab/preflight.sh "$@"
fi
