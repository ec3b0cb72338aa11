#!/usr/bin/env bash
# Image distribution two ways, for the bench: today's copy through the operator
# (image-fanout.sh, as floor-up.sh and the program do) against a registry on the manager
# (Debian's docker-registry, TLS with a throwaway self-signed certificate every engine trusts
# through /etc/docker/certs.d, so no engine is reconfigured or restarted): push once, every
# worker pulls at once.
#
# usage: registry-ship.sh SSH_CONFIG setup|copy|registry|teardown IMAGE MANAGER=ADDRESS [WORKER=ADDRESS]...
#   setup: certificate, registry image on the manager, trust on every host, IMAGE off every
#     worker (every tag of it: new hosts hold none of its layers); idempotent
#   copy, registry: one timed distribution of IMAGE to every worker, which must not hold it;
#     prints "seconds" (registry: "push_seconds pull_seconds"); the workers' copies are removed after
#   teardown: the registry container, image, certificates and trust removed from every host
set -euo pipefail
ssh_config=$1 mode=$2 image=$3
shift 3
manager=${1%%=*} address=${1#*=}
shift
workers=()
for worker in "$@"; do workers+=("${worker%%=*}"); done
all=("$manager" "${workers[@]}")
here=$(cd "$(dirname "$0")" && pwd)
registry="$address:5000"
pushed="$registry/dslab-bench/ship:latest"
certs="/etc/dslab-bench-registry"
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$(printf '%q ' "$@")"; }
since() { awk -v from="$1" -v to="$EPOCHREALTIME" 'BEGIN { printf "%.3f", to - from }'; }
# By id: every tag and digest of the image goes, so no worker keeps its layers.
remove_from_workers() {
  local id
  id=$(on "$manager" docker image inspect --format '{{.Id}}' "$image")
  for worker in "${workers[@]}"; do on "$worker" docker image rm --force "$id" >/dev/null 2>&1 || true; done
}

case "$mode" in
  setup)
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$address" \
      -addext "subjectAltName=IP:$address" -keyout "$work/registry.key" -out "$work/registry.crt" 2>/dev/null
    tar -C "$work" -c registry.key registry.crt | on "$manager" sh -c "mkdir -p $certs && tar -x -o -C $certs"
    for host in "${all[@]}"; do
      on "$host" sh -c "mkdir -p /etc/docker/certs.d/$registry && cat > /etc/docker/certs.d/$registry/ca.crt" <"$work/registry.crt"
    done
    # New hosts hold none of the image's layers: no tag on a worker may keep them.
    remove_from_workers
    if ! on "$manager" docker image inspect dslab-bench/registry >/dev/null 2>&1; then
      tar -C "$here/registry" -c Dockerfile config.yml | on "$manager" docker build --quiet -t dslab-bench/registry - >/dev/null
    fi
    ;;
  copy)
    started=$EPOCHREALTIME
    bash "$here/image-fanout.sh" "$ssh_config" "$image" "$manager" "${workers[@]}"
    since "$started"; echo
    remove_from_workers
    ;;
  registry)
    # A new, empty registry each time: a push into a registry that holds the layers is free.
    on "$manager" docker rm --force --volumes dslab-bench-registry >/dev/null 2>&1 || true
    on "$manager" docker run --detach --name dslab-bench-registry --publish "$address:5000:5000" \
      --volume "$certs:/certs:ro" --volume /var/lib/docker-registry dslab-bench/registry >/dev/null
    for _ in $(seq 1 60); do
      on "$manager" docker logs dslab-bench-registry 2>&1 | grep -q "listening on" && break
      sleep 0.5
    done
    started=$EPOCHREALTIME
    on "$manager" docker tag "$image" "$pushed"
    on "$manager" docker push --quiet "$pushed" >/dev/null
    push_seconds=$(since "$started")
    pushed_at=$EPOCHREALTIME
    pulls=()
    for worker in "${workers[@]}"; do
      on "$worker" docker pull --quiet "$pushed" >/dev/null &
      pulls+=($!)
    done
    for pull in "${pulls[@]}"; do wait "$pull"; done
    echo "$push_seconds $(since "$pushed_at")"
    remove_from_workers
    on "$manager" docker image rm "$pushed" >/dev/null
    on "$manager" docker rm --force --volumes dslab-bench-registry >/dev/null
    ;;
  teardown)
    on "$manager" docker rm --force --volumes dslab-bench-registry >/dev/null 2>&1 || true
    on "$manager" docker image rm --force dslab-bench/registry >/dev/null 2>&1 || true
    on "$manager" rm -rf "$certs"
    for host in "${all[@]}"; do on "$host" rm -rf "/etc/docker/certs.d/$registry"; done
    ;;
  *) echo "usage: registry-ship.sh SSH_CONFIG setup|copy|registry|teardown IMAGE MANAGER=ADDRESS [WORKER=ADDRESS]..." >&2; exit 64 ;;
esac
