#!/usr/bin/env bash
# On the manager: remove the network; already gone is fine. Usage: network-remove.sh NAME
set -euo pipefail
if docker network inspect "$1" >/dev/null 2>&1; then
  echo "removing network $1" >&2
  # Swarm detaches endpoints of removed containers lazily: retry for a while.
  for _ in $(seq 1 30); do
    docker network rm "$1" >/dev/null 2>&1 && exit 0
    sleep 1
  done
  docker network rm "$1" >/dev/null
fi
