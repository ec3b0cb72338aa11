#!/usr/bin/env bash
# On the manager, once every container trusts the others: the manager's container logs in to
# every other node over ssh with strict host keys, waiting up to TIMEOUT seconds for an overlay
# that is still settling. Fails naming the nodes that never answered: a cluster that `up`
# called done must carry traffic. Then marks the step (host/lib/step-mark.sh) with a one-try
# check of the same, which the hosts' probe runs on every preview and up: a node that stopped
# answering has the next `up` run this again.
# Usage: mesh-reach.sh CONTAINER TIMEOUT NAME...
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/step-mark.sh
container=$1 timeout=$2
shift 2
nodes_file=$STEP_DIR/reach.nodes
docker exec "$container" sh -c 'mkdir -p "$(dirname "$0")" && printf "%s\n" "$@" >"$0"' "$nodes_file" "$@"
if [[ $# -gt 0 ]]; then
  # The wait is long by nature: the engine's bound comes on top of it.
  if ! down=$(DSLAB_ENGINE_TIMEOUT=$((DSLAB_ENGINE_TIMEOUT + timeout)) \
    docker exec -e HOSTFILE="$nodes_file" "$container" bash -c '. /opt/dslab/nodes.sh && wait_for_nodes "$1"' check "$timeout"); then
    echo "the manager's container got no ssh answer within $timeout s from: $down" \
      "(is the overlay between the hosts carrying traffic? docker network inspect shows its peers)" >&2
    exit 1
  fi
fi
# shellcheck disable=SC2016  # expanded by the check, in the container
mark_check "$container" reach "HOSTFILE=$nodes_file bash -c '. /opt/dslab/nodes.sh; down=\$(unreachable_nodes); [ -z \"\$down\" ] || { echo \"the manager container gets no ssh answer from: \$down\" >&2; exit 1; }'"
exit
