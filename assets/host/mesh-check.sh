#!/usr/bin/env bash
# On the manager, once every container trusts the others: the manager's container logs in to
# every other node over ssh with strict host keys, waiting up to TIMEOUT seconds for an overlay
# that is still settling. Fails naming the nodes that never answered: a cluster that `up`
# called done must carry traffic. Usage: mesh-check.sh CONTAINER TIMEOUT NAME=ADDRESS...
set -euo pipefail
container=$1 timeout=$2
shift 2
[ $# -gt 0 ] || exit 0
addresses=()
for node in "$@"; do addresses+=("${node#*=}"); done
echo "checking ssh from the manager's container to ${*%%=*}" >&2
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
  echo "the manager's container got no ssh answer within $timeout s from: ${silent[*]:-$down}" \
    "(is the overlay between the hosts carrying traffic? docker network inspect shows its peers)" >&2
  exit 1
fi
echo "every node answers ssh" >&2
