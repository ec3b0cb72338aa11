#!/usr/bin/env bash
# Which interface holds this host's lab address, and its MTU: the overlay's VXLAN packets
# leave through it, so the overlay's MTU must be 50 bytes below it.
# Usage: interface-mtu.sh HOST_NAME ADDRESS     prints the MTU (1500); HOST_NAME is named in every message
set -euo pipefail
host=$1 address=$2
command -v ip >/dev/null || { echo "$host: the 'ip' command (iproute2) is needed on this host to find its MTU; or set network.mtu" >&2; exit 1; }
interface=$(ip -o -4 addr show | awk -v address="$address" '{split($4, cidr, "/"); if (cidr[1] == address) {print $2; exit}}')
interface=${interface%%@*}
if [[ -z "$interface" ]]; then
  echo "$host: no interface holds $address on this host (hosts[].address); its MTU is unknown: set network.mtu" >&2
  exit 1
fi
mtu=$(cat "/sys/class/net/$interface/mtu")
echo "$host: $address is on $interface, MTU $mtu" >&2
echo "$mtu"
