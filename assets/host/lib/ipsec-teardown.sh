# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/ipsec-teardown.sh` (components/remote_script.py).
# The IPsec container goes, then its routing rules: they outlive it on purpose (without the
# tunnel, VXLAN to the peers is dropped, not sent in the clear), so only this removes them.

# Usage: ipsec_teardown NAME IMAGE TABLE
ipsec_teardown() {
  local name=$1 image=$2 table=$3
  docker rm --force "$name" >/dev/null 2>&1 || true
  if docker image inspect "$image" >/dev/null 2>&1; then
    docker run --rm --network host --cap-add NET_ADMIN "$image" down "$table" >&2
  else
    echo "image $image is gone: the routing rules of table $table stay (ip rule show; ip route show table $table)" >&2
    return 1
  fi
}
