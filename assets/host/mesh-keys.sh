#!/usr/bin/env bash
# The container's public user key and sshd host key (the private keys never leave the
# container), and the interface its entrypoint found on the overlay (for NCCL/gloo), as JSON.
# First makes the keys that are missing (removed inside the container, say) and has sshd load
# a host key made now; then marks the step (host/lib/step-mark.sh) with keys.sh's own check, so
# the hosts' probe sees a key lost inside the container and the next `up` makes it again.
# Usage: mesh-keys.sh CONTAINER
set -euo pipefail
# dslab:include host/lib/engine-bound.sh
# dslab:include host/lib/container-output.sh
# dslab:include host/lib/step-mark.sh
container=$1
docker exec "$container" /opt/dslab/keys.sh make --reload-sshd
mark_check "$container" keys "/opt/dslab/keys.sh check"
user_key=$(container_output "$container" cat /root/.ssh/id_ed25519.pub)
host_key=$(container_output "$container" sh -c 'cut -d" " -f1,2 /etc/ssh/ssh_host_ed25519_key.pub')
socket_ifname=$(container_output "$container" cat /run/dslab/socket_ifname)
printf '{"user_key": "%s", "host_key": "%s", "socket_ifname": "%s"}\n' "$user_key" "$host_key" "$socket_ifname"
exit
