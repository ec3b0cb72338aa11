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
for worker in "$@"; do workers+=("${worker%%=*}"); done
all=("$manager" "${workers[@]}")
on() { local host=$1; shift; ssh -F "$ssh_config" "$host" "$@"; }

# shellcheck disable=SC2086  # BUILD_FLAGS is a list of words
on "$manager" "if docker buildx version >/dev/null 2>&1; then docker buildx build --load --quiet ${BUILD_FLAGS:-} -t $tag -;
  else DOCKER_BUILDKIT=0 docker build --quiet ${BUILD_FLAGS:-} -t $tag -; fi" <"$context" >/dev/null &
build=$!

on "$manager" docker swarm init --advertise-addr "$manager_address" >/dev/null
token=$(on "$manager" docker swarm join-token --quiet worker)
for worker in "${workers[@]}"; do
  on "$worker" docker swarm join --token "$token" "$manager_address:2377" >/dev/null &
done
on "$manager" docker network create --driver overlay --attachable --subnet "$subnet" \
  --ip-range "$ip_range" --gateway "$gateway" --opt "com.docker.network.driver.mtu=$mtu" "$network" >/dev/null
wait

wait "$build"
if [ ${#workers[@]} -gt 0 ]; then
  loads=()
  for worker in "${workers[@]}"; do loads+=(">(ssh -F '$ssh_config' '$worker' docker load >/dev/null)"); done
  eval "on \"\$manager\" docker save \"\$tag\" | tee ${loads[*]} >/dev/null"
  wait
fi

for host in "${all[@]}"; do
  (
    mapfile -d '' run_args <"$args_dir/$host.args"
    on "$host" docker run --detach --name llm "${run_args[@]}" >/dev/null
    until on "$host" docker exec llm test -e /run/dslab/ready 2>/dev/null; do sleep 0.5; done
  ) &
done
wait

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
