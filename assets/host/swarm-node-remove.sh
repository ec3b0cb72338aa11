#!/usr/bin/env bash
# On the manager: forget a node that left (its entry stays "down" otherwise).
# Usage: swarm-node-remove.sh NODE_ID
set -euo pipefail
node=$1
if [[ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]]; then
  exit 0  # no swarm any more: nothing to forget
fi
if docker node inspect "$node" >/dev/null 2>&1; then
  echo "removing node $node from the swarm" >&2
  docker node rm --force "$node" >/dev/null
fi
