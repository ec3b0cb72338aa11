#!/usr/bin/env bash
# A worker's place in the swarm.
#   join MANAGER_ADDRESS ADVERTISE_ADDR MANAGER_NODE: join the swarm whose manager is node
#     MANAGER_NODE at MANAGER_ADDRESS (host:2377) with the token that follows this script on
#     stdin (never argv: ps shows argv); idempotent; prints the node id as JSON; marks the
#     step's generation (host/lib/step-mark.sh). A swarm with that manager address but
#     another manager node (the manager's machine reinstalled, its swarm made anew) is left
#     first: its manager is gone.
#   leave: leave the swarm (the step's delete).
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/gossip-port.sh
# dslab:include host/lib/step-mark.sh
# dslab:include host/lib/swarm-leave.sh

join() {
  local manager_address=$1 advertise_addr=$2 manager_node=$3 token="" managers
  # The token has no trailing newline: read returns 1 at EOF even though it read it.
  read -r token || true
  if [[ -z "$token" ]]; then
    echo "no join token on stdin" >&2
    exit 1
  fi
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" == active ]]; then
    managers=$(docker info --format '{{range .Swarm.RemoteManagers}}{{.NodeID}}@{{.Addr}} {{end}}')
    if [[ " $managers " != *" $manager_node@$manager_address "* ]]; then
      echo "in another swarm (managers: $managers); leaving it to join $manager_node@$manager_address" >&2
      docker swarm leave --force >/dev/null
    fi
  fi
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]]; then
    wait_for_gossip_port_free
    echo "joining the swarm at $manager_address" >&2
    docker swarm join --advertise-addr "$advertise_addr" --token "$token" "$manager_address" >/dev/null
  fi
  mark_host swarm
  printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
}

# One line: bash has read it whole before the token that follows it on stdin.
case $1 in join) join "$2" "$3" "$4" ;; leave) leave_swarm && unmark_host swarm ;; *) echo "usage: swarm-worker.sh join MANAGER_ADDRESS ADVERTISE_ADDR MANAGER_NODE | leave" >&2; exit 64 ;; esac; exit
