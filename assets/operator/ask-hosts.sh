#!/usr/bin/env bash
# Ask every host at once what the program must know before it plans (assets/host/host-facts.sh
# over ssh): its interface MTU, the overlay address its container of the stack holds, the
# addresses in use on the overlay. Always exits 0; prints each host's lines prefixed with its
# name, or one line for a host that could not be asked:
#   HOST host-key-changed     ssh refused the host: its key is not the one known_hosts holds
#   HOST unreachable MESSAGE  ssh could not log in (the host down, its key unknown, ...)
#   HOST silent SECONDS       no answer within TIMEOUT_S (a hung sshd, a network that drops
#                             everything); an engine that does not answer within
#                             ENGINE_TIMEOUT_S is the host script's `engine-silent` line
#   HOST failed MESSAGE       the host script failed
# With a jump host (`@jump=USER@ADDRESS:PORT` first among the hosts; SSH_OPTION then holds the
# ProxyCommand through it), the jump host is asked first, with the same options but that one:
#   @jump host-key-changed | unreachable MESSAGE | silent SECONDS
#                             it could not be logged in to; then `HOST behind-jump` for every
#                             host, none of them asked
#   HOST unreachable-behind-jump MESSAGE
#                             the jump host answered, the host could not be reached from it
# Usage: ask-hosts.sh HOST_SCRIPT OWNER NETWORK MTU ENGINE_TIMEOUT_S TIMEOUT_S IMAGES RESULTS INPUTS [@jump=USER@ADDRESS:PORT] NAME=USER@ADDRESS:PORT... -- SSH_OPTION...
#   IMAGES: the image tags to look for, comma-separated; RESULTS: the results directory;
#   INPUTS: the workload's input directories, one per line.
set -uo pipefail
host_script=$1 owner=$2 network=$3 want_mtu=$4 engine_timeout_s=$5 timeout_s=$6 images=$7 results=$8 inputs=$9
shift 9
hosts=() jump=""
while [[ $# -gt 0 && $1 != -- ]]; do
  if [[ $1 == @jump=* ]]; then jump=${1#@jump=}; else hosts+=("$1"); fi
  shift
done
shift  # --
ssh_options=("$@")

answers=$(mktemp -d)
trap 'rm -rf "$answers"' EXIT

# The jump host itself, logged in to as every connection through it is (ProxyCommand left out).
if [[ -n $jump ]]; then
  direct=()
  for option in "${ssh_options[@]}"; do
    if [[ $option == ProxyCommand=* ]]; then unset 'direct[${#direct[@]}-1]'; else direct+=("$option"); fi
  done
  rc=0
  timeout "$timeout_s" ssh "${direct[@]}" -p "${jump##*:}" "${jump%:*}" true </dev/null 2>"$answers/@jump.err" || rc=$?
  if [[ $rc -ne 0 ]]; then
    case $rc in
      124) echo "@jump silent $timeout_s" ;;
      *)
        if grep -q 'REMOTE HOST IDENTIFICATION HAS CHANGED' "$answers/@jump.err"; then
          echo "@jump host-key-changed"
        else
          echo "@jump unreachable $(tail -n 1 "$answers/@jump.err" | tr -d '\r')"
        fi
        ;;
    esac
    for spec in "${hosts[@]}"; do echo "${spec%%=*} behind-jump"; done
    exit 0
  fi
fi

ask() {
  local name=$1 target=$2 port=$3 rc=0
  # ssh hands the host's shell one line: each argument quoted for it.
  timeout "$timeout_s" ssh "${ssh_options[@]}" -p "$port" "$target" \
    "bash -s -- $(printf '%q ' "$owner" "$network" "${target#*@}" "$want_mtu" "$engine_timeout_s" "$images" "$results" "$inputs")" \
    <"$host_script" >"$answers/$name.out" 2>"$answers/$name.err" || rc=$?
  echo "$rc" >"$answers/$name.rc"
}

for spec in "${hosts[@]}"; do
  name=${spec%%=*} destination=${spec#*=}
  ask "$name" "${destination%:*}" "${destination##*:}" &
done
wait

for spec in "${hosts[@]}"; do
  name=${spec%%=*}
  rc=$(cat "$answers/$name.rc")
  last_error=$(tail -n 1 "$answers/$name.err" | tr -d '\r')
  case $rc in
    0) sed "s/^/$name /" "$answers/$name.out" ;;
    124) echo "$name silent $timeout_s" ;;
    255)
      if grep -q 'REMOTE HOST IDENTIFICATION HAS CHANGED' "$answers/$name.err"; then
        echo "$name host-key-changed"
      elif [[ -n $jump ]]; then
        # The hop that failed, as assets/operator/jump-host.sh named it (ssh's own last line is not).
        said=$(grep -m 1 -e 'from the jump host' -e '(operator.jump_host)' "$answers/$name.err" | tr -d '\r')
        echo "$name unreachable-behind-jump ${said:-$last_error}"
      else
        echo "$name unreachable $last_error"
      fi
      ;;
    *) echo "$name failed $last_error" ;;
  esac
done
