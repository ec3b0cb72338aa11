#!/usr/bin/env bash
# This host's IPsec tunnels (network.ipsec: strongswan; the container runs
# assets/ipsec/ipsec-peers.sh, made by the stack as a docker container on the host's network).
#   wait CONTAINER LOCAL_ADDRESS WAIT_SECONDS PEER_ADDRESS...
#       waits until the IPsec container (its id) has its tunnel to every peer (a peer's
#       container may start a little later); names the peers without one, with the
#       container's log, when not
#   down IMAGE TABLE
#       removes the routing rules the containers leave behind on purpose (without a tunnel,
#       VXLAN to a peer is dropped, not sent in the clear): only this removes them
set -euo pipefail
# dslab:include host/lib/engine-bound.sh

wait_for_tunnels() {
  local container=$1 local_address=$2 wait_seconds=$3 every pending
  shift 3
  echo "waiting for IPsec with $* (at most ${wait_seconds} s)" >&2
  local started_at=$SECONDS deadline=$((SECONDS + wait_seconds))
  while true; do
    if [[ "$(docker inspect "$container" --format '{{.State.Running}}' 2>/dev/null)" != true ]]; then
      echo "the IPsec container is not running; its log:" >&2
      docker logs --tail 30 "$container" >&2 || true
      exit 1
    fi
    every=no
    ((SECONDS < started_at + 5)) || every=yes
    pending=$(docker exec "$container" ipsec-peers initiate "$local_address" "$every" "$@" 2>/dev/null || echo "$*")
    [[ -n "$pending" ]] || break
    if ((SECONDS >= deadline)); then
      echo "no IPsec tunnel to $(tr "\n" " " <<<"$pending")after ${wait_seconds} s: is the IPsec container running on those hosts, and UDP 500 and 4500 open between them? The last of its container's log:" >&2
      docker logs --tail 20 "$container" >&2
      exit 1
    fi
    sleep 1
  done
}

rules_down() {
  local image=$1 table=$2
  if docker image inspect "$image" >/dev/null 2>&1; then
    docker run --rm --network host --cap-add NET_ADMIN "$image" down "$table" >&2
  else
    echo "image $image is gone: the routing rules of table $table stay (ip rule show; ip route show table $table)" >&2
  fi
}

case $1 in
  wait) shift; wait_for_tunnels "$@" ;;
  down) rules_down "$2" "$3" ;;
  *) echo "usage: ipsec-tunnels.sh wait CONTAINER LOCAL_ADDRESS WAIT_SECONDS PEER_ADDRESS... | down IMAGE TABLE" >&2; exit 64 ;;
esac
