#!/usr/bin/env bash
# On the manager, right after a worker joined: forget the nodes the worker's host was before
# (it left the swarm behind our back and joined again as a new node). A forgotten node holds
# tasks on the overlay, which then cannot be removed.
# Usage: swarm-node-prune.sh WORKER_ADDRESS NODE_ID (the node the worker is now)
set -euo pipefail
address=$1 current=$2
docker node ls --quiet | xargs docker node inspect --format '{{.ID}} {{.Status.Addr}}' |
  while read -r id addr; do
    if [[ "$addr" == "$address" && "$id" != "$current" ]]; then
      echo "forgetting node $id, which $address was before it joined again" >&2
      docker node rm --force "$id" >/dev/null
    fi
  done
