#!/usr/bin/env bash
# On the manager: exit 3 when this engine is no longer a swarm manager.
set -euo pipefail
[[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" == active ]] || exit 3
[[ "$(docker info --format '{{.Swarm.ControlAvailable}}')" == true ]] || exit 3
printf '{"node_id": "%s"}\n' "$(docker info --format '{{.Swarm.NodeID}}')"
