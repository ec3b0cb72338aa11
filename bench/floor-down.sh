#!/usr/bin/env bash
# Undo floor-up.sh: containers, network, swarm and the image on every host (the manager's
# build cache stays, as it does after `pulumi destroy`).
# usage: floor-down.sh SSH_CONFIG TAG NETWORK MANAGER [WORKER]...
set -uo pipefail
ssh_config=$1 tag=$2 network=$3
shift 3
manager=$1
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$(printf '%q ' "$@")"; }
for host in "$@"; do on "$host" docker rm --force llm >/dev/null 2>&1 & done
wait
on "$manager" docker network rm "$network" >/dev/null 2>&1
# Workers first, then the manager, as pulumi destroy does: a worker leaving while its manager
# leaves too can keep its old gossip listener open for good (moby/moby#31913), and the next
# swarm on that host then carries no overlay traffic.
for host in "${@:2}"; do on "$host" docker swarm leave --force >/dev/null 2>&1 & done
wait
on "$manager" docker swarm leave --force >/dev/null 2>&1
for host in "$@"; do on "$host" docker image rm "$tag" >/dev/null 2>&1 & done
wait
exit 0
