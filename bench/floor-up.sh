#!/usr/bin/env bash
# The floor for a cold `pulumi up`: the same steps a person would script by hand, as fast as
# a shell script can do them. Everything that can overlap does: the image build starts at
# once beside the swarm and network; the image is saved once and streamed to every worker
# at the same time; containers start on all hosts at once; keys are exchanged in parallel.
# No checks, no state, no error reporting beyond `set -e`: a lower bound, not a tool.
#
# usage: floor-up.sh SSH_CONFIG CONTEXT_TAR TAG NETWORK SUBNET IP_RANGE GATEWAY MTU ARGS_DIR
#                    MANAGER=ADDRESS [WORKER=ADDRESS]...
#   ARGS_DIR/<host>.args: the host's `docker run` arguments after `--name llm`, NUL-separated
#   BUILD_FLAGS (environment): `--build-arg=NAME=VALUE ...`, space-separated
set -euo pipefail
ssh_config=$1 context=$2 tag=$3 network=$4 subnet=$5 ip_range=$6 gateway=$7 mtu=$8 args_dir=$9
shift 9
manager=${1%%=*} manager_address=${1#*=}
shift
workers=()
declare -A address_of
for worker in "$@"; do workers+=("${worker%%=*}"); address_of[${worker%%=*}]=${worker#*=}; done
all=("$manager" "${workers[@]}")
# ARGV on a host, each word passed as is; on_sh: a shell command line on a host.
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$(printf '%q ' "$@")"; }
on_sh() { ssh -F "$ssh_config" "$1" "$2"; }

# shellcheck disable=SC2086  # BUILD_FLAGS is a list of words
on_sh "$manager" "if docker buildx version >/dev/null 2>&1; then docker buildx build --load --quiet ${BUILD_FLAGS:-} -t $tag -;
  else DOCKER_BUILDKIT=0 docker build --quiet ${BUILD_FLAGS:-} -t $tag -; fi" <"$context" >/dev/null &
build=$!

on "$manager" docker swarm init --advertise-addr "$manager_address" >/dev/null
token=$(on "$manager" docker swarm join-token --quiet worker)
joins=()
for worker in "${workers[@]}"; do
  # Without --advertise-addr a lab host advertises another interface, and VXLAN goes nowhere.
  on "$worker" docker swarm join --advertise-addr "${address_of[$worker]}" --token "$token" "$manager_address:2377" >/dev/null &
  joins+=($!)
done
for join in "${joins[@]}"; do wait "$join"; done
on "$manager" docker network create --driver overlay --attachable --subnet "$subnet" \
  --ip-range "$ip_range" --gateway "$gateway" --opt "com.docker.network.driver.mtu=$mtu" "$network" >/dev/null

wait "$build"
bash "$(dirname "$0")/image-fanout.sh" "$ssh_config" "$tag" "$manager" "${workers[@]}"

starts=()
for host in "${all[@]}"; do
  (
    mapfile -d '' run_args <"$args_dir/$host.args"
    on "$host" docker run --detach --name llm "${run_args[@]}" >/dev/null
    for _ in $(seq 1 240); do
      on "$host" docker exec llm test -e /run/dslab/ready 2>/dev/null && exit 0
      sleep 0.5
    done
    echo "floor-up.sh: the container on $host did not get ready" >&2
    exit 1
  ) &
  starts+=($!)
done
for start in "${starts[@]}"; do wait "$start"; done

keys=$(mktemp -d)
for host in "${all[@]}"; do
  address=$(on "$host" docker inspect llm --format "{{(index .NetworkSettings.Networks \"$network\").IPAddress}}")
  on "$host" docker exec llm sh -c 'cat /root/.ssh/id_ed25519.pub' >"$keys/$host.user" &
  on "$host" docker exec llm sh -c 'cut -d" " -f1,2 /etc/ssh/ssh_host_ed25519_key.pub' \
    | sed "s/^/$host,$address /" >"$keys/$host.host" &
done
wait
cat "$keys"/*.user >"$keys/authorized_keys"
cat "$keys"/*.host >"$keys/known_hosts"
for host in "${all[@]}"; do
  tar -C "$keys" -c authorized_keys known_hosts | on "$host" docker exec -i llm tar -x -o -C /root/.ssh &
done
wait
rm -rf "$keys"
# The floor must build a working cluster, or its time means nothing; like pulumi up's reach
# check, it gives an overlay that is still settling up to 60 s.
for worker in "${workers[@]}"; do
  for attempt in $(seq 1 120); do
    on "$manager" docker exec llm ssh -o BatchMode=yes -o ConnectTimeout=5 "$worker" true 2>/dev/null && break
    [ "$attempt" -lt 120 ] || { echo "floor-up.sh: $worker does not answer ssh from the manager's container" >&2; exit 1; }
    sleep 0.5
  done
done
