#!/usr/bin/env bash
# How much the Go compiler's garbage collection setting changes a toolchain build: the command
# plugin (the smallest of the four builds) built from nothing ROUNDS times with each GOGC value,
# the values taking turns, each build with an empty build cache of its own. Prints every build and
# the median per value, and each median's ratio to the first value's.
# usage: bench/go-gc.sh [ROUNDS] [GOGC...]   (default: 3 rounds of 100 and 400)
# Needs Go and the source mirror (DSLAB_SOURCE_MIRROR), as `make toolchain` does.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=${1:-3}
shift || true
if (($#)); then values=("$@"); else values=(100 400); fi
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT

for ((round = 1; round <= rounds; round++)); do
  for value in "${values[@]}"; do
    rm -rf "$work/cache" "$work/out"
    mkdir -p "$work/out"
    started=$(date +%s.%N)
    # shellcheck disable=SC2016 # expanded by the inner shell
    GOCACHE="$work/cache" GOGC_UNDER_TEST="$value" bash -c \
      'source "$0/toolchain/install.sh" && export GOGC=$GOGC_UNDER_TEST && build_resource_command "$1"' \
      "$repo" "$work/out" >"$work/log" 2>&1 || { tail -n 20 "$work/log" >&2; exit 1; }
    seconds=$(echo "$(date +%s.%N) - $started" | bc)
    printf 'round %d GOGC=%s %.1f s\n' "$round" "$value" "$seconds"
    echo "$value $seconds" >>"$work/times"
  done
done

python3 - "$work/times" "${values[@]}" <<'EOF'
import statistics, sys
times: dict[str, list[float]] = {}
for line in open(sys.argv[1]):
    value, seconds = line.split()
    times.setdefault(value, []).append(float(seconds))
base = statistics.median(times[sys.argv[2]])
for value in sys.argv[2:]:
    median = statistics.median(times[value])
    print(f"GOGC={value}: median {median:.1f} s over {len(times[value])} builds, {median / base:.2f}x GOGC={sys.argv[2]}")
EOF
