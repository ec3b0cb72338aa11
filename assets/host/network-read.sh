#!/usr/bin/env bash
# On the manager: exit 3 when the network is gone. Usage: network-read.sh NAME
set -euo pipefail
id=$(docker network inspect "$1" --format '{{.Id}}' 2>/dev/null) || exit 3
printf '{"id": "%s"}\n' "$id"
