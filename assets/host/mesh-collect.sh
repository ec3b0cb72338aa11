#!/usr/bin/env bash
# The container's public user key and sshd host key (the private keys never leave the
# container), and the interface its entrypoint found on the overlay (for NCCL/gloo), as JSON.
#   make: first makes the keys that are missing (removed inside the container, say) and has
#         sshd load a host key made now;
#   read: exit 3 when the container is not running, 4 when a key is missing or does not
#         match its public half (the next `up` makes it again).
# Usage: mesh-collect.sh make|read CONTAINER
set -euo pipefail
# dslab:include host/lib/container-read.sh
# dslab:include host/lib/container-output.sh
mode=$1 container=$2
if [[ "$mode" == read ]]; then
  exit_gone_unless_running "$container"
  docker exec "$container" /opt/dslab/keys.sh check || exit 4
else
  docker exec "$container" /opt/dslab/keys.sh make --reload-sshd
fi
user_key=$(container_output "$container" cat /root/.ssh/id_ed25519.pub)
host_key=$(container_output "$container" sh -c 'cut -d" " -f1,2 /etc/ssh/ssh_host_ed25519_key.pub')
socket_ifname=$(container_output "$container" cat /run/dslab/socket_ifname)
printf '{"user_key": "%s", "host_key": "%s", "socket_ifname": "%s"}\n' "$user_key" "$host_key" "$socket_ifname"
