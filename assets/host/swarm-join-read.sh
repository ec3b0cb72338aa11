#!/usr/bin/env bash
# On a worker: exit 3 when it is no longer in a swarm.
set -euo pipefail
[[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" == active ]] || exit 3
printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
