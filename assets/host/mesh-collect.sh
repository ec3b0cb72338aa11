#!/usr/bin/env bash
# Print the container's public user key and sshd host key (the private keys never leave
# the container), and the interface its entrypoint found on the overlay (for NCCL/gloo).
# Usage: mesh-collect.sh CONTAINER
set -euo pipefail
user_key=$(docker exec "$1" cat /root/.ssh/id_ed25519.pub)
host_key=$(docker exec "$1" sh -c 'cut -d" " -f1,2 /etc/ssh/ssh_host_ed25519_key.pub')
socket_ifname=$(docker exec "$1" cat /run/dslab/socket_ifname)
printf '{"user_key": "%s", "host_key": "%s", "socket_ifname": "%s"}\n' "$user_key" "$host_key" "$socket_ifname"
