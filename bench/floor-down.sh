#!/usr/bin/env bash
# Undo floor-up.sh: containers, network, swarm and the image on every host (the manager's
# build cache stays, as it does after `pulumi destroy`).
# usage: floor-down.sh SSH_CONFIG TAG NETWORK MANAGER [WORKER]...
set -uo pipefail
ssh_config=$1 tag=$2 network=$3
shift 3
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$(printf '%q ' "$@")"; }
for host in "$@"; do on "$host" docker rm --force llm >/dev/null 2>&1 & done
wait
on "$1" docker network rm "$network" >/dev/null 2>&1
for host in "$@"; do
  { on "$host" docker swarm leave --force >/dev/null 2>&1; on "$host" docker image rm "$tag" >/dev/null 2>&1; } &
done
wait
exit 0
