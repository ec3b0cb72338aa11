#!/usr/bin/env bash
# Note when this step started, then wait as a step waits on a remote host. Usage: wait.sh SECONDS
set -euo pipefail
started=$(date +%s.%N)
sleep "$1"
printf '{"started": %s}\n' "$started"
