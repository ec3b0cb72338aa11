#!/usr/bin/env bash
# Remove the IPsec container, then its routing rules (they outlive it on purpose: without the
# tunnel, VXLAN to the peers is dropped, not sent in the clear).
# Usage: ipsec-remove.sh NAME IMAGE TABLE
set -euo pipefail
name=$1 image=$2
shift 2
docker rm --force "$name" >/dev/null 2>&1 || true
if docker image inspect "$image" >/dev/null 2>&1; then
  docker run --rm --network host --cap-add NET_ADMIN "$image" down "$@"
else
  echo "image $image is gone: the routing rules of table $1 stay (ip rule show; ip route show table $1)" >&2
fi
