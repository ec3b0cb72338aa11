#!/usr/bin/env bash
# Print the name of the interface that holds an IPv4 address inside SUBNET.
#
# usage: socket-ifname.sh SUBNET        e.g. socket-ifname.sh 10.0.3.0/24  ->  eth0
#
# Inside a container on an overlay network eth0 is usually the overlay and eth1
# docker_gwbridge, but the order is not promised; NCCL and gloo must use the overlay's.
# Exit status: 0 and the name when found; 1 when no interface holds such an address;
# 64 when SUBNET is not an IPv4 subnet.
set -euo pipefail

subnet="${1:-}"
if ! [[ "$subnet" =~ ^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})/([0-9]|[12][0-9]|3[0-2])$ ]] \
  || (( BASH_REMATCH[1] > 255 || BASH_REMATCH[2] > 255 || BASH_REMATCH[3] > 255 || BASH_REMATCH[4] > 255 )); then
  echo "socket-ifname.sh: expected an IPv4 subnet such as 10.0.3.0/24, got '$subnet'" >&2
  exit 64
fi

ip_to_int() {
  local IFS=. a b c d
  read -r a b c d <<<"$1"
  echo $(( (a << 24) | (b << 16) | (c << 8) | d ))
}

len="${subnet#*/}"
mask=$(( len == 0 ? 0 : (0xFFFFFFFF << (32 - len)) & 0xFFFFFFFF ))
want=$(( $(ip_to_int "${subnet%/*}") & mask ))

# `ip -o -4 addr show` lines: "2: eth0    inet 10.0.3.128/24 brd 10.0.3.255 scope global eth0"
while read -r _ ifname _ addr _; do
  if (( ($(ip_to_int "${addr%/*}") & mask) == want )); then
    echo "${ifname%%@*}"
    exit 0
  fi
done < <(ip -o -4 addr show)
exit 1
