#!/usr/bin/env bash
# On the manager: create the attachable overlay network (idempotent when it exists with
# the same subnet). Usage: network-create.sh NAME SUBNET IP_RANGE GATEWAY DRIVER_MTU|"" ENCRYPTED(true|false)
# DRIVER_MTU is the overlay driver's mtu option: the underlay's MTU, containers get 50 less.
set -euo pipefail
name=$1 subnet=$2 ip_range=$3 gateway=$4 mtu=$5 encrypted=$6

if existing=$(docker network inspect "$name" --format '{{range .IPAM.Config}}{{.Subnet}}{{end}}' 2>/dev/null); then
  if [[ "$existing" != "$subnet" ]]; then
    echo "network $name exists with subnet $existing, not $subnet; remove it or pick another network.name" >&2
    exit 1
  fi
  existing_mtu=$(docker network inspect "$name" --format '{{index .Options "com.docker.network.driver.mtu"}}')
  if [[ -n "$mtu" && "${existing_mtu:-1500}" != "$mtu" ]]; then
    echo "network $name exists with driver MTU ${existing_mtu:-1500}, not $mtu; remove it or pick another network.name" >&2
    exit 1
  fi
  echo "network $name already exists" >&2
else
  options=(--driver overlay --attachable --subnet "$subnet" --ip-range "$ip_range" --gateway "$gateway")
  [[ -n "$mtu" ]] && options+=(--opt "com.docker.network.driver.mtu=$mtu")
  [[ "$encrypted" == true ]] && options+=(--opt encrypted)
  echo "creating overlay network $name ($subnet)" >&2
  docker network create "${options[@]}" "$name" >/dev/null
fi
printf '{"id": "%s"}\n' "$(docker network inspect "$name" --format '{{.Id}}')"
