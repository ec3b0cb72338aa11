#!/usr/bin/env bash
# What the program must know about this host before it plans anything. Reads only. Prints
#   mtu N              the MTU of the interface that holds ADDRESS (the overlay's VXLAN
#                      packets leave through it), when asked for (MTU = yes)
#   mtu-unknown WHY    when it cannot be found
#   held HOST ADDRESS  for each container here labelled dslab.owner=OWNER with a static
#                      address on NETWORK (running or not; HOST is its dslab.host label)
#   in-use ADDRESS HOST_ADDRESS
#                      for each container on NETWORK anywhere in the swarm, and the address
#                      of the host it is on, as the overlay's gossip tells a host that has a
#                      container on it (those on hosts that left the stack's list hold theirs
#                      until they are removed)
#   network-mtu N      the overlay's driver MTU as the program set it (its dslab.driver-mtu
#                      label), when NETWORK is seen here
#   swarm-node ID manager|worker
#                      the swarm node this engine is, when in a swarm (active)
#   swarm-manager ID ADDRESS
#                      for each manager that node knows (its node id, ADDRESS:2377)
#   swarm-member ID ADDRESS
#                      on a manager, for each node of its swarm (its node id, its address)
#   image TAG ID       for each of IMAGES (comma-separated tags) this engine holds
#   host-timeout N     the engine's bound this host keeps (host/host-timeout.sh), when it does
#   results writable|absent|read-only
#                      the results directory RESULTS, as the containers will mount it
#   results-mount DIR  the host directory this stack's container here mounts as its results
#                      (RESULTS_MOUNT inside): where its runs write, RESULTS until that changed
#   run NAME STATUS    the last run started here (last-run in the mounted directory, else in
#                      RESULTS) and the first word of the status it wrote in its directory
#                      (running, succeeded, failed, stopped; finished by an earlier release:
#                      succeeded; none written: none)
#   run-alive          when that run says running (or nothing yet) and run-deepspeed.sh is
#                      in a running container of the stack here
#   run-reported NAME STATE
#                      what the training step last reported (deepspeed-launch.sh)
#   input I SIZE SHA256 PATH
#                      for each file under the I-th of INPUTS (0, 1, ...; one per line):
#                      its size and a digest that stays cheap on a model of many GB (a file
#                      up to 1 MiB whole; a larger one by its size and three 64 KiB blocks:
#                      the first, the middle, the last), PATH relative to that input
#   input-absent I     when the I-th of INPUTS is not here
#   claimed-by OWNER   the stack whose claim (docker volume dslab-claim) this host holds
#   used-by OWNER      another stack whose containers run here
#   host-step STEP N   for each step done on this host: the generation it last ran with
#                      (host/lib/step-mark.sh); whether its work is still there is read above
#   step STEP N [WHAT] for each step kept inside a running container of the stack (below)
#   engine-silent N    instead of the engine's lines when it gave no reply within N seconds
# Usage: host-facts.sh OWNER NETWORK ADDRESS MTU ENGINE_TIMEOUT_S IMAGES RESULTS INPUTS
set -euo pipefail
owner=$1 network=$2 address=$3 want_mtu=$4 engine_timeout_s=$5 images=$6 results=$7 inputs=${8:-}

# An engine that accepts connections but never answers (hung, swamped) would hold every call,
# and the preview with it: each call is bounded, and one that ran out says so once.
docker() { timeout "$engine_timeout_s" docker "$@"; }  # timeout runs the program, not this function
engine_failed() {
  if [[ $1 -eq 124 ]]; then
    echo "engine-silent $engine_timeout_s"
    exit 0
  fi
  exit "$1"
}

if [[ "$want_mtu" == yes ]]; then
  if ! command -v ip >/dev/null; then
    echo "mtu-unknown the 'ip' command (iproute2) is needed on this host to find its MTU; or set network.mtu"
  else
    interface=$(ip -o -4 addr show | awk -v address="$address" '{split($4, cidr, "/"); if (cidr[1] == address) {print $2; exit}}')
    interface=${interface%%@*}
    if [[ -z "$interface" ]]; then
      echo "mtu-unknown no interface holds $address on this host (hosts[].address); its MTU is unknown: set network.mtu"
    else
      echo "mtu $(cat "/sys/class/net/$interface/mtu")"
    fi
  fi
fi

# The engine's answers are asked for all at once (each docker call is a round trip to the
# engine, the containers' checks the longest): every part writes its own file, printed in order.
facts=$(mktemp -d)
trap 'rm -rf "$facts"' EXIT
parts=()
part() {  # part NAME COMMAND...: COMMAND's output, in the background, as part NAME
  "${@:2}" >"$facts/$1" &
  parts+=($!)
}

# Every container of any stack here: ID STATE OWNER.
containers=$(docker ps --all --filter label=dslab.owner --format '{{.ID}} {{.State}} {{.Label "dslab.owner"}}') ||
  engine_failed $?
ours=$(awk -v owner="$owner" '$3 == owner {print $1}' <<<"$containers")
running=$(awk -v owner="$owner" '$3 == owner && $2 == "running" {print $1}' <<<"$containers")

held() {
  # shellcheck disable=SC2086  # one argument per container id
  docker inspect --format "{{index .Config.Labels \"dslab.host\"}} {{with index .NetworkSettings.Networks \"$network\"}}{{with .IPAMConfig}}{{.IPv4Address}}{{end}}{{end}}" $ours |
    awk 'NF == 2 {print "held", $1, $2}'
}
in_use() {
  # No such network here (no container on it yet): nothing in use that this host can see.
  # Each with the address of the host it is on (the swarm node's): what a host that does not
  # answer holds is still known from the others.
  docker network inspect --verbose --format '{{range .Services}}{{range .Tasks}}{{.EndpointIP}} {{index .Info "Host IP"}}{{"\n"}}{{end}}{{end}}' "$network" 2>/dev/null |
    awk 'NF >= 1 {print "in-use", $1, $2}' || true
}
network_mtu() {
  docker network inspect --format '{{index .Labels "dslab.driver-mtu"}}' "$network" 2>/dev/null |
    awk '$1 ~ /^[0-9]+$/ {print "network-mtu", $1}' || true
}
swarm_node() {
  local node state id manager
  node=$(docker info --format '{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}} {{.Swarm.ControlAvailable}}')
  read -r state id manager <<<"$node"
  [[ $state == active ]] || return 0
  echo "swarm-node $id $([[ $manager == true ]] && echo manager || echo worker)"
  docker info --format '{{range .Swarm.RemoteManagers}}swarm-manager {{.NodeID}} {{.Addr}}{{"\n"}}{{end}}' | awk 'NF == 3'
  if [[ $manager == true ]]; then
    # shellcheck disable=SC2046  # one argument per node id
    docker node inspect --format 'swarm-member {{.ID}} {{.Status.Addr}}' $(docker node ls --quiet)
  fi
}
images_held() {
  local tag id
  for tag in ${images//,/ }; do
    if id=$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null) && [[ -n $id ]]; then echo "image $tag $id"; fi
  done
}
results_dir() {
  if [[ ! -d $results ]]; then echo "results absent"
  elif [[ ! -w $results ]]; then echo "results read-only"
  else echo "results writable"
  fi
}
RESULTS_MOUNT=/opt/dslab/results  # components.render.results.RESULTS_MOUNT
results_mount() {
  [[ -n $ours ]] || return 0
  # shellcheck disable=SC2086  # one argument per container id
  docker inspect --format "{{range .Mounts}}{{if eq .Destination \"$RESULTS_MOUNT\"}}{{println .Source}}{{end}}{{end}}" $ours |
    awk 'NF' | head -n 1
}
last_run() {
  local name state dir=$results mounted
  mounted=$(results_mount)
  if [[ -n $mounted ]]; then
    echo "results-mount $mounted"
    dir=$mounted
  fi
  name=$(head -n 1 "$dir/last-run" 2>/dev/null) || return 0
  [[ -n $name && -d "$dir/$name" ]] || return 0
  state=$(head -n 1 "$dir/$name/status" 2>/dev/null || true)
  state=${state%%:*}
  state=${state%% *}
  if [[ -z $state && -e "$dir/$name/finished" ]]; then state=succeeded; fi
  echo "run $name ${state:-none}"
  # The same rule as deepspeed-launch.sh's run_state: the step's report is compared with this.
  if [[ -z $state || $state == running ]]; then
    for id in $running; do
      if docker exec "$id" pgrep -f 'run-deepspeed[.]sh' >/dev/null 2>&1; then echo run-alive; fi
    done
  fi
  if [[ -f "$HOME/.dslab/steps/run-report.seen" ]]; then echo "run-reported $(head -n 1 "$HOME/.dslab/steps/run-report.seen")"; fi
}
SAMPLE=65536
sampled_sha256() {
  local file=$1 size=$2
  if [[ $size -le $((16 * SAMPLE)) ]]; then
    sha256sum <"$file" | cut -d' ' -f1
  else
    { head -c "$SAMPLE" "$file"; dd if="$file" bs="$SAMPLE" skip=$((size / 2 / SAMPLE)) count=1 2>/dev/null
      tail -c "$SAMPLE" "$file"; } | sha256sum | cut -d' ' -f1
  fi
}
input_manifest() {
  local index=0 root file size
  while IFS= read -r root; do
    [[ -n $root ]] || continue
    if [[ -d $root ]]; then
      while IFS= read -r -d '' file; do
        [[ $file != *$'\n'* ]] || continue
        size=$(stat -c %s "$root/$file")
        echo "input $index $size $(sampled_sha256 "$root/$file" "$size") $file"
      done < <(cd "$root" && find . -type f -printf '%P\0' | LC_ALL=C sort -z)
    elif [[ -f $root ]]; then
      size=$(stat -c %s "$root")
      echo "input $index $size $(sampled_sha256 "$root" "$size") ."
    else
      echo "input-absent $index"
    fi
    index=$((index + 1))
  done <<<"$inputs"
}
claimed_by() {
  local claim
  claim=$(docker volume inspect dslab-claim --format '{{index .Labels "dslab.owner"}}' 2>/dev/null || true)
  [[ -z "$claim" ]] || echo "claimed-by $claim"
}

[[ -z "$ours" ]] || part 1-held held
part 2-in-use in_use
part 2-network-mtu network_mtu
part 3-swarm swarm_node
part 4-claim claimed_by
part 4-images images_held
results_dir >"$facts/4-results"
awk -v owner="$owner" 'NF == 3 && $3 != owner {print "used-by", $3}' <<<"$containers" | sort -u >"$facts/5-used-by"

# The generation each step on this host last ran with (host/lib/step-mark.sh): only that;
# whether its work is there is read from the host itself, above.
host_steps() {
  local mark generation
  for mark in "$HOME"/.dslab/steps/*.gen; do
    [[ -e $mark ]] || continue
    generation=$(cat "$mark")
    if [[ $generation =~ ^[0-9]+$ ]]; then echo "host-step $(basename "$mark" .gen) $generation"; fi
  done
}
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
host_steps >"$facts/6-host-steps"
# Where host/host-timeout.sh keeps the engine's bound (host/lib/host-timeout-file.sh: this
# script is sent as it is, without includes).
HOST_TIMEOUT_FILE=$HOME/.dslab/host-timeout
host_timeout() {
  local seconds
  if [[ -r $HOST_TIMEOUT_FILE ]] && read -r seconds <"$HOST_TIMEOUT_FILE" && [[ $seconds =~ ^[0-9]+$ ]]; then
    echo "host-timeout $seconds"
  fi
}
host_timeout >"$facts/6-host-timeout"
part 6-run last_run
part 8-inputs input_manifest

# What the program keeps inside this stack's running containers (host/lib/step-mark.sh),
# each mark checked by sh where it is (the containers need no bash):
#   step STEP N         intact as placed with generation N
#   step STEP N+1 WHAT  not: the next `up` runs the step again, with generation N+1
# shellcheck disable=SC2016  # expanded by the sh that runs it
report_marks='
  cd "$1" 2>/dev/null || exit 0
  for mark in *.gen; do
    [ -e "$mark" ] || continue
    step=${mark%.gen} generation=$(cat "$mark")
    case $generation in ""|*[!0-9]*) generation=0 ;; esac
    if [ -e "$step.sha256" ]; then
      differs=$(sha256sum --check --quiet "$step.sha256" 2>/dev/null | sed -n "s/: FAILED.*//p" | tr "\n" " ")
      [ -z "$differs" ] || differs="changed or removed: $differs"
    elif [ -e "$step.check" ]; then
      if found=$(timeout 15 sh "$step.check" 2>&1); then
        differs=""
      else
        differs=$(printf "%s\n" "$found" | tail -n 1)
        [ -n "$differs" ] || differs="its check failed"
      fi
    else
      differs="its check is gone"
    fi
    if [ -z "$differs" ]; then echo "step $step $generation"; else echo "step $step $((generation + 1)) $differs"; fi
  done
'
container_steps() {
  docker exec "$1" sh -c "$report_marks" marks /opt/dslab/steps || true
}
for id in $running; do
  part "7-steps-$id" container_steps "$id"
done

# A part that failed (the engine gone mid-way) fails the whole answer, as one command would.
for pid in "${parts[@]}"; do
  wait "$pid" || engine_failed $?
done
cat "$facts"/*
