#!/usr/bin/env bash
# On the manager, once every container trusts the others: the manager's container logs in to
# every other node over ssh with strict host keys, waiting up to TIMEOUT seconds for an overlay
# that is still settling. Fails naming the nodes that never answered: a cluster that `up`
# called done must carry traffic.
# As a read (--read, every refresh): one try, no wait; exit 4 when a node is silent (the next
# `up` runs the check again, with the wait) and 3 when the manager's container is not running.
# Usage: mesh-check.sh [--read] CONTAINER TIMEOUT NAME=ADDRESS...
set -euo pipefail
# dslab:include host/lib/container-read.sh
failed=1
if [[ "$1" == --read ]]; then
  failed=4
  shift
  exit_gone_unless_running "$1"
fi
container=$1 timeout=$2
shift 2
say() { [[ $failed == 4 ]] || echo "$*" >&2; }  # a read speaks only of trouble
[ $# -gt 0 ] || exit 0
addresses=()
for node in "$@"; do addresses+=("${node#*=}"); done
say "checking ssh from the manager's container to ${*%%=*}"
if ! down=$(docker exec "$container" bash -c '
  . /opt/dslab/nodes.sh
  HOSTFILE=$(mktemp)
  export HOSTFILE
  printf "%s\n" "${@:2}" >"$HOSTFILE"
  wait_for_nodes "$1"
' check "$timeout" "${addresses[@]}"); then
  silent=()
  for node in "$@"; do
    [[ " $down " == *" ${node#*=} "* ]] && silent+=("${node%%=*} (${node#*=})")
  done
  if [[ $failed == 4 ]]; then
    echo "the manager's container gets no ssh answer from: ${silent[*]:-$down} (the next up checks again)" >&2
  else
    echo "the manager's container got no ssh answer within $timeout s from: ${silent[*]:-$down}" \
      "(is the overlay between the hosts carrying traffic? docker network inspect shows its peers)" >&2
  fi
  exit "$failed"
fi
say "every node answers ssh"
