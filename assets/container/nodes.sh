#!/usr/bin/env bash
# Functions on a DeepSpeed hostfile's nodes, sourced by run-deepspeed.sh and preflight.sh.
# They ssh to node names as the hostfile gives them (the container's ssh config supplies
# port, key and keep-alives).

# The hostfile's node names, one per line; nothing when HOSTFILE is unset or missing.
nodes() {
  [ -n "${HOSTFILE:-}" ] && [ -f "$HOSTFILE" ] || return 0
  awk '!/^[[:space:]]*(#|$)/ {print $1}' "$HOSTFILE"
}

# The nodes that do not answer ssh now, space separated (all asked in parallel).
unreachable_nodes() {
  local node down="" dir
  dir=$(mktemp -d)
  for node in $(nodes); do
    { ssh -o ConnectTimeout=5 "$node" true </dev/null >/dev/null 2>&1 || touch "$dir/$node"; } &
  done
  wait
  for node in $(nodes); do [ -e "$dir/$node" ] && down+="$node "; done
  rm -rf "$dir"
  echo "${down% }"
}

# Waits until every node answers ssh, at most SECONDS_LEFT seconds (a network that just came
# back needs a while before the overlay carries traffic again). Prints the nodes still
# silent at the deadline and fails then.
wait_for_nodes() {
  local deadline=$((SECONDS + $1)) down
  while :; do
    down=$(unreachable_nodes)
    [ -z "$down" ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "$down"
      return 1
    fi
    echo "waiting for $down to answer ssh" >&2
    sleep 2
  done
}
