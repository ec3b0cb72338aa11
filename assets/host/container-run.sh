#!/usr/bin/env bash
# Start the node's training container, replacing a stale one of the same name, and wait
# until its sshd answers. Usage: container-run.sh NAME NETWORK|host -- DOCKER_RUN_ARGS...
set -euo pipefail
name=$1 network=$2
shift 3  # NAME NETWORK --

if docker container inspect "$name" >/dev/null 2>&1; then
  echo "removing the old container $name" >&2
  docker rm --force "$name" >/dev/null
fi
echo "starting container $name" >&2
docker run --detach --name "$name" "$@" >/dev/null

for _ in $(seq 1 60); do
  # The entrypoint writes ready once keys and the overlay interface are settled.
  if docker exec "$name" test -e /run/dslab/ready 2>/dev/null \
     && docker exec "$name" pgrep -x sshd >/dev/null 2>&1; then
    break
  fi
  if [[ "$(docker inspect "$name" --format '{{.State.Running}}')" != true ]]; then
    echo "container $name stopped while starting; its log:" >&2
    docker logs --tail 30 "$name" >&2
    exit 1
  fi
  sleep 1
done
docker exec "$name" pgrep -x sshd >/dev/null || { echo "sshd did not start in $name" >&2; docker logs --tail 30 "$name" >&2; exit 1; }

id=$(docker inspect "$name" --format '{{.Id}}')
ifname=$(docker exec "$name" cat /run/dslab/socket_ifname)
if [[ "$network" == host ]]; then
  # The hosts' network: the address of the interface the entrypoint found, the host's own.
  ip=$(docker exec "$name" ip -o -4 addr show dev "$ifname" | awk '{split($4, cidr, "/"); print cidr[1]; exit}')
else
  ip=$(docker inspect "$name" --format "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}")
fi
printf '{"container_id": "%s", "ip": "%s", "socket_ifname": "%s"}\n' "$id" "$ip" "$ifname"
