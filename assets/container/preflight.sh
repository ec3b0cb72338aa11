#!/usr/bin/env bash
# Measure the cluster before training, from the manager container: every node answers ssh,
# every node sees the same hostfile and resolves its names to the same addresses, then a
# short all-reduce across all nodes (ARGV: a deepspeed command running allreduce_bench.py).
#
# usage: preflight.sh --workdir DIR --hostfile FILE --log FILE [--reach-timeout S]
#                     [--run-timeout S] [--min-busbw GBPS] -- ARGV...
#
#   --workdir DIR        where ARGV runs (DeepSpeed's launcher reads DIR/.deepspeed_env)
#   --hostfile FILE      the run's hostfile; the same path on every node
#   --log FILE           the all-reduce's output (truncated at start)
#   --reach-timeout S    how long nodes may take to answer ssh (default 60)
#   --run-timeout S      how long the all-reduce may take (default 300)
#   --min-busbw GBPS     fail when the all-reduce's bus bandwidth is below this (default 0)
#
# Progress goes to stderr; the last line on stdout is the result as JSON:
#   {"nodes": 2, "busbw_gbps": 3.2, "allreduce": {...allreduce_bench.py's result...}}
# Exit status: 0 passed; 1 a check failed (the message says which node and why); 64 usage.
set -euo pipefail

usage() {
  echo "usage: preflight.sh --workdir DIR --hostfile FILE --log FILE [--reach-timeout S] [--run-timeout S] [--min-busbw GBPS] -- ARGV..." >&2
  exit 64
}

workdir="" HOSTFILE="" log="" reach_timeout=60 run_timeout=300 min_busbw=0
while [ $# -gt 0 ]; do
  case "$1" in
    --workdir) [ $# -ge 2 ] || usage; workdir="$2"; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || usage; HOSTFILE="$2"; shift 2 ;;
    --log) [ $# -ge 2 ] || usage; log="$2"; shift 2 ;;
    --reach-timeout) [ $# -ge 2 ] || usage; reach_timeout="$2"; shift 2 ;;
    --run-timeout) [ $# -ge 2 ] || usage; run_timeout="$2"; shift 2 ;;
    --min-busbw) [ $# -ge 2 ] || usage; min_busbw="$2"; shift 2 ;;
    --) shift; break ;;
    *) echo "preflight.sh: unknown option '$1'" >&2; usage ;;
  esac
done
if [ -z "$workdir" ] || [ -z "$HOSTFILE" ] || [ -z "$log" ] || [ $# -eq 0 ]; then usage; fi
for value in "$reach_timeout" "$run_timeout"; do
  case "$value" in ''|*[!0-9]*) echo "preflight.sh: timeouts take whole seconds, got '$value'" >&2; usage ;; esac
done
case "$min_busbw" in ''|*[!0-9.]*|*.*.*) echo "preflight.sh: --min-busbw takes a number, got '$min_busbw'" >&2; usage ;; esac
[ -f "$HOSTFILE" ] || { echo "preflight.sh: no hostfile $HOSTFILE" >&2; exit 1; }

# shellcheck source=nodes.sh
. "$(dirname "$(readlink -f "$0")")/nodes.sh"
# shellcheck source=deepspeed-env.sh
. "$(dirname "$(readlink -f "$0")")/deepspeed-env.sh"

say() { echo "preflight: $*" >&2; }
fail() { say "$*"; exit 1; }

node_list=$(nodes | tr '\n' ' ')
node_count=$(nodes | wc -l)
say "nodes: ${node_list% }"

# 1. Every node answers ssh.
if ! down=$(wait_for_nodes "$reach_timeout"); then
  fail "not answering ssh from $(hostname) after ${reach_timeout}s: $down"
fi
say "every node answers ssh"

# 2. Every node's view: the same hostfile, the same address for every name.
view() {
  sha256sum <"$HOSTFILE" | cut -d' ' -f1
  local name
  for name in $node_list; do echo "$name $(getent ahostsv4 "$name" | awk 'NR == 1 {print $1}')"; done
}
own_view=$(view)
views=$(mktemp -d)
for node in $node_list; do
  # shellcheck disable=SC2029  # the names and the path are meant to expand here
  ssh "$node" "sha256sum < '$HOSTFILE' | cut -d' ' -f1; for name in $node_list; do echo \"\$name \$(getent ahostsv4 \$name | awk 'NR == 1 {print \$1}')\"; done" \
    </dev/null >"$views/$node" 2>&1 &
done
wait
differ=""
for node in $node_list; do
  if [ "$(cat "$views/$node")" != "$own_view" ]; then
    differ+="$node "
    say "$node sees: $(tr '\n' ';' <"$views/$node")"
  fi
done
rm -rf "$views"
[ -z "$differ" ] || fail "these nodes see another hostfile or other addresses than $(hostname) ($(echo "$own_view" | tr '\n' ';')): ${differ% }"
say "every node sees the same hostfile and addresses"

# 3. A short all-reduce across all nodes.
cd "$workdir"
export_deepspeed_env  # what the training's ranks get, on one host too (see run-deepspeed.sh)
say "all-reduce across $node_count nodes: $*"
set +e
timeout --kill-after=10 "$run_timeout" "$@" >"$log" 2>&1 </dev/null
code=$?
set -e
result=$({ grep -a 'dslab: allreduce_result ' "$log" || true; } | tail -n 1 | sed 's/.*dslab: allreduce_result //')
if [ "$code" -ne 0 ] || [ -z "$result" ]; then
  tail -n 20 "$log" >&2
  [ "$code" -eq 124 ] && fail "the all-reduce did not finish within ${run_timeout}s; its log is $log"
  fail "the all-reduce failed (exit $code); its log is $log"
fi
{ grep -a 'dslab: allreduce size_mb' "$log" || true; } | sed 's/.*dslab: /preflight: /' >&2
busbw=$(printf '%s' "$result" | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["busbw_gbps"]))')
if [ "$busbw" = null ]; then
  say "one rank: no bus bandwidth to measure (its all-reduce crosses no link); the minimum is not checked"
elif awk -v got="$busbw" -v min="$min_busbw" 'BEGIN {exit !(got < min)}'; then
  fail "all-reduce bus bandwidth ${busbw} Gbit/s is below the minimum ${min_busbw} Gbit/s (training.preflight.min_busbw_gbps)"
else
  say "bus bandwidth ${busbw} Gbit/s (minimum ${min_busbw})"
fi
printf '{"nodes": %s, "busbw_gbps": %s, "allreduce": %s}\n' "$node_count" "$busbw" "$result"
