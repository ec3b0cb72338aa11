#!/usr/bin/env bash
# On the manager: make this engine a swarm manager advertising ADVERTISE_ADDR (idempotent),
# and print the worker join token as JSON. Usage: swarm-init.sh ADVERTISE_ADDR
set -euo pipefail
# dslab:include host/lib/gossip-port.sh
advertise_addr=$1

state=$(docker info --format '{{.Swarm.LocalNodeState}}')
if [[ "$state" == active ]]; then
  if [[ "$(docker info --format '{{.Swarm.ControlAvailable}}')" != true ]]; then
    echo "this engine is already a worker of another swarm; leave it first (docker swarm leave)" >&2
    exit 1
  fi
  echo "already a swarm manager; reusing the swarm" >&2
else
  wait_for_gossip_port_free
  echo "initialising the swarm, advertising $advertise_addr" >&2
  docker swarm init --advertise-addr "$advertise_addr" >/dev/null
fi
token=$(docker swarm join-token --quiet worker)
node_id=$(docker info --format '{{.Swarm.NodeID}}')
printf '{"join_token": "%s", "manager_address": "%s:2377", "node_id": "%s"}\n' "$token" "$advertise_addr" "$node_id"
