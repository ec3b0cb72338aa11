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
# A host behind a jump host is preceded by `@jump=USER@ADDRESS:PORT PROXY_OPTION`: the jump host
# is asked first (once however many hosts sit behind it), with SSH_OPTION only; the host then
# with SSH_OPTION and `-o PROXY_OPTION` (the ProxyCommand through it):
#   @jump=USER@ADDRESS:PORT host-key-changed | unreachable MESSAGE | silent SECONDS
#                             the jump host could not be logged in to; then `HOST behind-jump`
#                             for every host behind it, none of them asked
#   HOST unreachable-behind-jump MESSAGE
#                             the jump host answered, the host could not be reached from it
# Usage: ask-hosts.sh HOST_SCRIPT OWNER NETWORK MTU ENGINE_TIMEOUT_S TIMEOUT_S IMAGES RESULTS INPUTS [@jump=USER@ADDRESS:PORT PROXY_OPTION] NAME=USER@ADDRESS:PORT... -- SSH_OPTION...
#   IMAGES: the image tags to look for, comma-separated; RESULTS: the results directory;
#   INPUTS: the workload's input directories, one per line.
set -uo pipefail
host_script=$1 owner=$2 network=$3 want_mtu=$4 engine_timeout_s=$5 timeout_s=$6 images=$7 results=$8 inputs=$9
shift 9
hosts=() jump="" proxy=""
declare -A jump_of=() proxy_of=()  # host name -> the jump host in front of it, its ProxyCommand
while [[ $# -gt 0 && $1 != -- ]]; do
  if [[ $1 == @jump=* ]]; then
    jump=${1#@jump=} proxy=$2
    shift 2
    continue
  fi
  hosts+=("$1") jump_of[${1%%=*}]=$jump proxy_of[${1%%=*}]=$proxy
  jump="" proxy=""
  shift
done
shift  # --
ssh_options=("$@")

answers=$(mktemp -d)
trap 'rm -rf "$answers"' EXIT

# Each jump host itself, logged in to as every connection through it is; all at once.
declare -A jump_failed=()
jump_file() { echo "$answers/@jump-${1//[^A-Za-z0-9.]/_}"; }
ask_jump() {
  local jump=$1 file rc=0
  file=$(jump_file "$jump")
  timeout "$timeout_s" ssh "${ssh_options[@]}" -p "${jump##*:}" "${jump%:*}" true </dev/null 2>"$file.err" || rc=$?
  echo "$rc" >"$file.rc"
}
mapfile -t jumps < <(printf '%s\n' "${jump_of[@]}" | sed '/^$/d' | sort -u)
for jump in "${jumps[@]}"; do ask_jump "$jump" & done
wait
for jump in "${jumps[@]}"; do
  file=$(jump_file "$jump")
  rc=$(cat "$file.rc")
  [[ $rc -ne 0 ]] || continue
  jump_failed[$jump]=1
  if [[ $rc -eq 124 ]]; then
    echo "@jump=$jump silent $timeout_s"
  elif grep -q 'REMOTE HOST IDENTIFICATION HAS CHANGED' "$file.err"; then
    echo "@jump=$jump host-key-changed"
  else
    echo "@jump=$jump unreachable $(tail -n 1 "$file.err" | tr -d '\r')"
  fi
done

ask() {
  local name=$1 target=$2 port=$3 rc=0 through=()
  [[ -z ${proxy_of[$name]} ]] || through=(-o "${proxy_of[$name]}")
  # ssh hands the host's shell one line: each argument quoted for it.
  timeout "$timeout_s" ssh "${ssh_options[@]}" "${through[@]}" -p "$port" "$target" \
    "bash -s -- $(printf '%q ' "$owner" "$network" "${target#*@}" "$want_mtu" "$engine_timeout_s" "$images" "$results" "$inputs")" \
    <"$host_script" >"$answers/$name.out" 2>"$answers/$name.err" || rc=$?
  echo "$rc" >"$answers/$name.rc"
}

for spec in "${hosts[@]}"; do
  name=${spec%%=*} destination=${spec#*=}
  [[ -z ${jump_failed[${jump_of[$name]:-@}]:-} ]] || continue
  ask "$name" "${destination%:*}" "${destination##*:}" &
done
wait

for spec in "${hosts[@]}"; do
  name=${spec%%=*}
  if [[ -n ${jump_failed[${jump_of[$name]:-@}]:-} ]]; then
    echo "$name behind-jump"
    continue
  fi
  rc=$(cat "$answers/$name.rc")
  last_error=$(tail -n 1 "$answers/$name.err" | tr -d '\r')
  case $rc in
    0) sed "s/^/$name /" "$answers/$name.out" ;;
    124) echo "$name silent $timeout_s" ;;
    255)
      if grep -q 'REMOTE HOST IDENTIFICATION HAS CHANGED' "$answers/$name.err"; then
        echo "$name host-key-changed"
      elif [[ -n ${jump_of[$name]} ]]; then
        # The hop that failed, as assets/operator/jump-host.sh named it (ssh's own last line is not).
        said=$(grep -m 1 -e 'from the jump host' -e 'jump_host) refused' "$answers/$name.err" | tr -d '\r')
        echo "$name unreachable-behind-jump ${said:-$last_error}"
      else
        echo "$name unreachable $last_error"
      fi
      ;;
    *) echo "$name failed $last_error" ;;
  esac
done
