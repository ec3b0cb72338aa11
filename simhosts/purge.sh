#!/usr/bin/env bash
# What `make demo-down` leaves on the machine, removed: the simulator's two images, the caches under
# ${DSLAB_CACHE:-~/.cache/dslab} (toolchain builds, lab image tarballs), and the Docker engine
# when simhosts/engine.sh started it (its pidfile says so; an engine the machine ran before is left).
# Run after `make demo-down`: a lab still up keeps its hosts on that engine.
set -euo pipefail

cache="${DSLAB_CACHE:-$HOME/.cache/dslab}"
pidfile=${DSLAB_ENGINE_PIDFILE:-/var/run/dslab-dockerd.pid}

if docker info >/dev/null 2>&1; then
  if [ -n "$(docker ps --all --quiet --filter label=dslab.lab)" ]; then
    echo "purge: the simulated hosts is still up; run 'make demo-down' (or 'make hosts-down') first" >&2
    exit 1
  fi
  for image in local/dslab-host:trixie local/debian:trixie; do
    if docker image inspect "$image" >/dev/null 2>&1; then
      docker image rm --force "$image" >/dev/null
      echo "purge: removed image $image"
    fi
  done
fi

if [ -d "$cache" ]; then
  echo "purge: removing $cache ($(du -sh "$cache" | cut -f1))"
  rm -rf "$cache"
fi

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "purge: stopping the Docker engine started by the simulator (pid $(cat "$pidfile"))"
  kill "$(cat "$pidfile")"
  for _ in $(seq 1 30); do
    [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null || exit 0
    sleep 1
  done
  echo "purge: the engine did not stop within 30 s; see /var/log/dslab-dockerd.log" >&2
  exit 1
fi
