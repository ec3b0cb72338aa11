#!/usr/bin/env bash
# Installs and starts the machine's own Docker engine (the one that runs the simulated
# hosts). Idempotent: does nothing when an engine already answers on the default socket.
set -euo pipefail

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    docker.io iptables debootstrap openssh-client >/dev/null
fi

log=/var/log/dslab-dockerd.log
# setsid: the engine must outlive the shell (and the make target) that started it.
setsid dockerd --pidfile "${DSLAB_ENGINE_PIDFILE:-/var/run/dslab-dockerd.pid}" >>"$log" 2>&1 < /dev/null &

for _ in $(seq 1 60); do
  docker info >/dev/null 2>&1 && exit 0
  sleep 1
done
echo "dockerd did not start; last lines of $log:" >&2
tail -n 20 "$log" >&2
exit 1
