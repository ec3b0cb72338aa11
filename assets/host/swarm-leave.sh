#!/usr/bin/env bash
# Leave the swarm (manager or worker); nothing to do when not in one.
set -euo pipefail
# dslab:include host/lib/gossip-port.sh
if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != inactive ]]; then
  echo "leaving the swarm" >&2
  docker swarm leave --force >/dev/null
fi
# A join right after this one must find the gossip port closed; a leaked listener is reported
# here too, but destroy goes on.
wait_for_gossip_port_free || true
