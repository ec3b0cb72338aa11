#!/usr/bin/env bash
# The manager's swarm.
#   init ADVERTISE_ADDR: make this engine a swarm manager advertising ADVERTISE_ADDR
#     (idempotent) and print the worker join token and the node id as JSON; marks the step's
#     generation (host/lib/step-mark.sh); the hosts' probe reads the swarm state itself.
#   leave: leave the swarm (the step's delete).
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/gossip-port.sh
# dslab:include host/lib/step-mark.sh
# dslab:include host/lib/swarm-leave.sh

init() {
  local advertise_addr=$1 token node_id
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" == active ]]; then
    if [[ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]]; then
      echo "this engine is already a worker of another swarm; leave it first (docker swarm leave)" >&2
      exit 1
    fi
  else
    wait_for_gossip_port_free
    echo "initialising the swarm, advertising $advertise_addr" >&2
    docker swarm init --advertise-addr "$advertise_addr" >/dev/null
  fi
  mark_host swarm
  token=$(docker swarm join-token --quiet worker)
  node_id=$(docker info --format '{{.Swarm.NodeID}}')
  printf '{"join_token": "%s", "node_id": "%s"}\n' "$token" "$node_id"
}

case $1 in
  init) init "$2" ;;
  leave) leave_swarm && unmark_host swarm ;;
  *) echo "usage: swarm-manager.sh init ADVERTISE_ADDR | leave" >&2; exit 64 ;;
esac
exit
