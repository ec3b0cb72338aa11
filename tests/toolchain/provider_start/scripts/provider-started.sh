#!/usr/bin/env bash
# When the process that runs this step (the dynamic provider) started, in seconds since boot.
set -euo pipefail
ticks=$(awk '{print $22}' "/proc/$PPID/stat")
printf '{"provider_started": %s}\n' "$(awk -v ticks="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.2f", ticks / hz}')"
