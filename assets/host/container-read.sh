#!/usr/bin/env bash
# Exit 3 when the container is gone, 4 when it is not running or not on its address.
# Usage: container-read.sh NAME NETWORK|host EXPECTED_IP
set -euo pipefail
name=$1 network=$2 expected_ip=$3
docker container inspect "$name" >/dev/null 2>&1 || exit 3
[[ "$(docker inspect "$name" --format '{{.State.Running}}')" == true ]] || exit 4
if [[ "$network" == host ]]; then
  # The hosts' network: the container has the host's address as long as it is on it.
  [[ "$(docker inspect "$name" --format '{{.HostConfig.NetworkMode}}')" == host ]] || exit 4
  ip=$expected_ip
else
  ip=$(docker inspect "$name" --format "{{with index .NetworkSettings.Networks \"$network\"}}{{.IPAddress}}{{end}}")
  [[ "$ip" == "$expected_ip" ]] || exit 4
fi
printf '{"container_id": "%s", "ip": "%s"}\n' "$(docker inspect "$name" --format '{{.Id}}')" "$ip"
