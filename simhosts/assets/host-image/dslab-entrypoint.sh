#!/bin/bash
# PID 2 of a simulated server (docker-init is PID 1): prepares the host, starts its Docker
# engine and sshd, and stops both cleanly on `docker stop`.
# Env: DSLAB_HOST_NAME (required),
#      DSLAB_NAMESERVERS (space-separated resolvers the host uses, like a real server's).
# The operator's key is installed separately (dslab-authorize) and kept across restarts.
set -euo pipefail
: "${DSLAB_HOST_NAME:?DSLAB_HOST_NAME must name the host, e.g. server1}"

# State under /run survives `docker stop`/`start` of the container; pid files and sockets
# from the previous run would make dockerd and containerd refuse to start.
rm -rf /run/docker /run/containerd /run/docker.pid /run/docker.sock /run/sshd.pid
mkdir -p /run/sshd

# Generates only missing keys: a host keeps its keys across restarts.
ssh-keygen -A >/dev/null

# Docker's embedded resolver (127.0.0.11) is unusable for the engine inside this host:
# nested containers on the default bridge would fall back to 8.8.8.8. A real server has
# a real resolver in /etc/resolv.conf, so give this one the machine's.
if [ -n "${DSLAB_NAMESERVERS:-}" ]; then
  {
    for ns in $DSLAB_NAMESERVERS; do echo "nameserver $ns"; done
  } >/etc/resolv.conf
fi

sshd_pid=""
shutdown() {
  /usr/local/sbin/dslab-engine stop || true
  [ -n "$sshd_pid" ] && kill -TERM "$sshd_pid" 2>/dev/null || true
  exit 0
}
trap shutdown TERM INT

/usr/local/sbin/dslab-engine start
/usr/sbin/sshd -D -e &
sshd_pid=$!

# Waits on sshd only; the engine can be stopped and started (fault injection) without
# ending the host.
while kill -0 "$sshd_pid" 2>/dev/null; do
  wait "$sshd_pid" || true
done
echo "sshd exited; stopping host" >&2
/usr/local/sbin/dslab-engine stop || true
exit 1
