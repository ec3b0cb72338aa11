#!/usr/bin/env bash
# A worker's place in the swarm.
#   join MANAGER_ADDRESS ADVERTISE_ADDR: join the swarm at MANAGER_ADDRESS (host:2377) with
#     the token that follows this script on stdin (never argv: ps shows argv); idempotent;
#     prints the node id as JSON; marks the step (host/lib/step-mark.sh) so the hosts' probe
#     sees a worker that left the swarm.
#   leave: leave the swarm (the step's delete).
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/gossip-port.sh
# dslab:include host/lib/step-mark.sh
# dslab:include host/lib/swarm-leave.sh

join() {
  local manager_address=$1 advertise_addr=$2 token="" managers
  # The token has no trailing newline: read returns 1 at EOF even though it read it.
  read -r token || true
  if [[ -z "$token" ]]; then
    echo "no join token on stdin" >&2
    exit 1
  fi
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" == active ]]; then
    managers=$(docker info --format '{{range .Swarm.RemoteManagers}}{{.Addr}} {{end}}')
    if [[ " $managers " != *" $manager_address "* ]]; then
      echo "in another swarm (managers: $managers); leaving it to join $manager_address" >&2
      docker swarm leave --force >/dev/null
    fi
  fi
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]]; then
    wait_for_gossip_port_free
    echo "joining the swarm at $manager_address" >&2
    docker swarm join --advertise-addr "$advertise_addr" --token "$token" "$manager_address" >/dev/null
  fi
  # shellcheck disable=SC2016  # expanded by the check
  mark_host_check swarm "[ \"\$(docker info --format '{{.Swarm.LocalNodeState}}')\" = active ] && docker info --format '{{range .Swarm.RemoteManagers}} {{.Addr}}{{end}}' | grep -q ' $manager_address' || { echo 'this host is no longer in the swarm of $manager_address' >&2; exit 1; }"
  printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
}

# One line: bash has read it whole before the token that follows it on stdin.
case $1 in join) join "$2" "$3" ;; leave) leave_swarm && unmark_host swarm ;; *) echo "usage: swarm-worker.sh join MANAGER_ADDRESS ADVERTISE_ADDR | leave" >&2; exit 64 ;; esac; exit
