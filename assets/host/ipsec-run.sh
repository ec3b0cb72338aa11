#!/usr/bin/env bash
# Start this host's IPsec container (network.ipsec: strongswan, see assets/ipsec/ipsec-peers.sh)
# and wait until its tunnel to every peer is up. The pre-shared key comes on stdin and reaches
# the container as a 0600 file, never as an argument or environment variable.
# Usage: ipsec-run.sh NAME IMAGE LOCAL_ADDRESS TUNNEL_MTU TABLE WAIT_SECONDS PEER_ADDRESS...
set -euo pipefail
# dslab:include host/lib/ipsec-teardown.sh
name=$1 image=$2 local_address=$3 tunnel_mtu=$4 table=$5 wait_seconds=$6
shift 6
peers=("$@")

if [[ ! -c /dev/net/tun ]]; then
  echo "network.ipsec strongswan needs /dev/net/tun on this host (load the tun module: modprobe tun), or set network.ipsec: docker" >&2
  exit 1
fi
if docker container inspect "$name" >/dev/null 2>&1; then
  echo "removing the old container $name" >&2
  docker rm --force "$name" >/dev/null
fi
# A failed start leaves nothing: no resource will own what it made.
started=false key_dir=
cleanup() {
  [[ -z "$key_dir" ]] || rm -rf "$key_dir"
  $started && return
  ipsec_teardown "$name" "$image" "$table" || true
}
trap cleanup EXIT
docker create --name "$name" --restart unless-stopped --network host \
  --cap-add NET_ADMIN --device /dev/net/tun \
  "$image" up "$local_address" "$tunnel_mtu" "$table" "${peers[@]}" >/dev/null

key_dir=$(mktemp -d)
(umask 077 && cat > "$key_dir/dslab.psk")
tar -C "$key_dir" --owner=0 --group=0 -c dslab.psk | docker cp - "$name:/etc/swanctl/"
rm -rf "$key_dir"
docker start "$name" >/dev/null

echo "waiting for IPsec with ${peers[*]} (at most ${wait_seconds} s)" >&2
started_at=$SECONDS
deadline=$((SECONDS + wait_seconds))
while true; do
  if [[ "$(docker inspect "$name" --format '{{.State.Running}} {{.RestartCount}}')" != "true 0" ]]; then
    echo "container $name stopped; its log:" >&2
    docker logs --tail 30 "$name" >&2
    exit 1
  fi
  every=no
  ((SECONDS < started_at + 5)) || every=yes
  pending=$(docker exec "$name" ipsec-peers initiate "$local_address" "$every" "${peers[@]}" 2>/dev/null || echo "${peers[*]}")
  [[ -n "$pending" ]] || break
  if ((SECONDS >= deadline)); then
    echo "no IPsec tunnel to $(tr "\n" " " <<<"$pending")after ${wait_seconds} s: is the IPsec container running on those hosts, and UDP 500 and 4500 open between them? The last of $name's log:" >&2
    docker logs --tail 20 "$name" >&2
    exit 1
  fi
  sleep 1
done
started=true
echo "tunnels up to ${peers[*]}" >&2
printf '{"container_id": "%s"}\n' "$(docker inspect "$name" --format '{{.Id}}')"
