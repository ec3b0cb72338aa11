#!/usr/bin/env bash
# On the manager, a worker's membership in the swarm.
# Usage: swarm-node.sh prune WORKER_ADDRESS NODE_ID   right after the worker joined (as NODE_ID):
#          forget the nodes its host was before (it left behind our back and joined again as a
#          new node); a forgotten node holds tasks on the overlay, which then cannot be removed.
#        swarm-node.sh remove NODE_ID                 when the worker goes: forget its node,
#          whose entry stays "down" otherwise.
set -euo pipefail
# dslab:include host/lib/engine-bound.sh

prune() {
  local address=$1 current=$2 id addr
  docker node ls --quiet | xargs docker node inspect --format '{{.ID}} {{.Status.Addr}}' |
    while read -r id addr; do
      if [[ "$addr" == "$address" && "$id" != "$current" ]]; then
        echo "forgetting node $id, which $address was before it joined again" >&2
        docker node rm --force "$id" >/dev/null
      fi
    done
}

remove() {
  local node=$1
  if [[ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]]; then
    return 0  # no swarm any more: nothing to forget
  fi
  if docker node inspect "$node" >/dev/null 2>&1; then
    echo "removing node $node from the swarm" >&2
    docker node rm --force "$node" >/dev/null
  fi
}

usage() {
  echo "usage: swarm-node.sh prune WORKER_ADDRESS NODE_ID | remove NODE_ID" >&2
  exit 64
}

case "${1:-}:$#" in
  prune:3) prune "$2" "$3" ;;
  remove:2) remove "$2" ;;
  *) usage ;;
esac
