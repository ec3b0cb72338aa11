#!/usr/bin/env bash
# Leave the swarm (manager or worker); nothing to do when not in one.
set -euo pipefail
if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != inactive ]]; then
  echo "leaving the swarm" >&2
  docker swarm leave --force >/dev/null
fi
