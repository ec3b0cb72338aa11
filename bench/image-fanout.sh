#!/usr/bin/env bash
# The image copy a person scripts by hand: `docker save` once on the manager, streamed through
# this machine to every worker's `docker load` at the same time (tee into one fifo per worker).
# Shared by floor-up.sh and registry-ship.sh's `copy`.
# usage: image-fanout.sh SSH_CONFIG IMAGE MANAGER [WORKER]...
set -euo pipefail
ssh_config=$1 image=$2 manager=$3
shift 3
workers=("$@")
[ ${#workers[@]} -gt 0 ] || exit 0
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$(printf '%q ' "$@")"; }
fifos=$(mktemp -d)
trap 'rm -rf "$fifos"' EXIT
loads=()
for worker in "${workers[@]}"; do
  mkfifo "$fifos/$worker"
  on "$worker" docker load <"$fifos/$worker" >/dev/null &
  loads+=($!)
done
on "$manager" docker save "$image" | tee "${workers[@]/#/$fifos/}" >/dev/null
for load in "${loads[@]}"; do wait "$load"; done
