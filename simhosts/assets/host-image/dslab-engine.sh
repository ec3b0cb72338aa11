#!/bin/bash
# Starts, stops or checks this host's Docker engine: `dslab-engine start|stop|status`.
# A server's dockerd normally runs under systemd; this is the simulator's stand-in.
set -euo pipefail

pidfile=/run/docker.pid
log=/var/log/dockerd.log
host="${DSLAB_HOST_NAME:-$(hostname)}"

running() {
  [ -s "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null
}

case "${1:-}" in
  start)
    if running && docker info >/dev/null 2>&1; then exit 0; fi
    if ! running; then
      rm -f "$pidfile"
      # The cgroup parent is the host container's name: cgroups are shared with the machine
      # (--cgroupns host), so each host's nested containers get a subtree of their own.
      setsid dockerd --cgroup-parent="${DSLAB_CGROUP_PARENT:-/dslab-$host}" --pidfile "$pidfile" \
        >>"$log" 2>&1 </dev/null &
    fi
    for _ in $(seq 1 120); do
      docker info >/dev/null 2>&1 && exit 0
      sleep 0.5
    done
    echo "dockerd on $host did not start; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
    ;;
  stop)
    running || exit 0
    pid="$(cat "$pidfile")"
    kill -TERM "$pid"
    for _ in $(seq 1 120); do
      kill -0 "$pid" 2>/dev/null || exit 0
      sleep 0.5
    done
    echo "dockerd on $host did not stop in 60 s" >&2
    exit 1
    ;;
  status)
    running && docker info >/dev/null 2>&1
    ;;
  *)
    echo "usage: dslab-engine start|stop|status" >&2
    exit 2
    ;;
esac
