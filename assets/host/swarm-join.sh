#!/usr/bin/env bash
# On a worker: join the swarm at MANAGER_ADDRESS (host:2377) with the token read from
# stdin (never from argv: argv is visible in ps). Idempotent.
# Usage: swarm-join.sh MANAGER_ADDRESS ADVERTISE_ADDR < token
set -euo pipefail
# dslab:include host/lib/gossip-port.sh
manager_address=$1
advertise_addr=$2
# The token has no trailing newline: read returns 1 at EOF even though it read it.
read -r token || true
if [[ -z "$token" ]]; then
  echo "no join token on stdin" >&2
  exit 1
fi

state=$(docker info --format '{{.Swarm.LocalNodeState}}')
if [[ "$state" == active ]]; then
  managers=$(docker info --format '{{range .Swarm.RemoteManagers}}{{.Addr}} {{end}}')
  if [[ " $managers " == *" $manager_address "* ]]; then
    echo "already in the swarm of $manager_address" >&2
    printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
    exit 0
  fi
  echo "in another swarm (managers: $managers); leaving it to join $manager_address" >&2
  docker swarm leave --force >/dev/null
fi
wait_for_gossip_port_free
echo "joining the swarm at $manager_address" >&2
docker swarm join --advertise-addr "$advertise_addr" --token "$token" "$manager_address" >/dev/null
printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
