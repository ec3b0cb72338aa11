#!/usr/bin/env bash
# The image built on one host passed on from host to host over the lab's network
# (image.distribution: relay): FROM's `docker save` streams to the first host that lacks the
# image, which loads it while it forwards the same bytes to the next, and so on. Every link
# carries the image once and all hosts receive at once: about one copy's time for the whole lab,
# and nothing but commands crosses this machine's link.
#   image-relay.sh TAG ID KNOWN_HOSTS -- FROM SSH_OPTION... -- TO SSH_OPTION... [-- TO SSH_OPTION...]
# FROM, TO: USER@ADDRESS:PORT, each with the options this machine's ssh reaches it with. A TO
# that already holds TAG as image ID (the builder's) is left out of the chain, and so is one
# that holds image ID under another name only, which gets TAG.
# stdin: host/image-relay-hop.sh, each host's part. The hosts log in to each other with a key
# made for this run only, authorized on each receiving host for the hop's `receive` alone
# (sshd's `restrict` and a forced command), each next hop's host key checked against
# KNOWN_HOSTS; the key, its authorizations and the hops' folders are removed from every host
# when the relay ends, however it ends (a killed run's, by the next relay). A hop that fails is
# named with what its load said; the hosts after it lack the image, and the next run relays to
# them only.
set -euo pipefail
# shellcheck source=../host/lib/ticker.sh
source "$(dirname "${BASH_SOURCE[0]}")/../host/lib/ticker.sh"
tag=$1 id=$2 known_hosts=${3/#\~/$HOME}
shift 3
[[ ${1:-} == -- ]] || { echo "usage: image-relay.sh TAG ID KNOWN_HOSTS -- FROM SSH_OPTION... -- TO SSH_OPTION..." >&2; exit 64; }
shift
# Host I: destinations[I], and its ssh options in options_I (an array, read by name).
destinations=()
while [[ $# -gt 0 ]]; do
  index=${#destinations[@]}
  destinations+=("$1")
  declare -a "options_$index=()"
  declare -n group="options_$index"
  shift
  while [[ $# -gt 0 && $1 != -- ]]; do group+=("$1"); shift; done
  unset -n group
  [[ $# -eq 0 ]] || shift
done
hop_script=$(cat)

on() {  # on I COMMAND_LINE: COMMAND_LINE run by host I's shell, as this machine reaches it
  local -n options="options_$1"
  local destination=${destinations[$1]}
  ssh "${options[@]}" -p "${destination##*:}" "${destination%:*}" "$2"
}
hop() {  # hop I ACTION ARG...: host/image-relay-hop.sh ACTION DIR ARG... on host I
  local index=$1
  shift
  on "$index" "bash -c $(printf '%q' "$hop_script") image-relay-hop $(printf '%q ' "$@")"
}
holds_it() {  # holds_it I: host I has TAG as image ID, or ID under another name only (named TAG then)
  local quoted_tag quoted_id
  quoted_tag=$(printf '%q' "$tag") quoted_id=$(printf '%q' "$id")
  on "$1" "[ \"\$(docker image inspect $quoted_tag --format '{{.Id}}' 2>/dev/null)\" = $quoted_id ] ||
    { docker image inspect $quoted_id >/dev/null 2>&1 && docker tag $quoted_id $quoted_tag; }" </dev/null >/dev/null 2>&1
}
where() { echo "${destinations[$1]%:*}"; }

# Every host is asked at once: a lab of many hosts waits for one round trip, not one per host.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The chain: FROM, then each host that lacks the image, in the order given.
for ((index = 1; index < ${#destinations[@]}; index++)); do
  { ! holds_it "$index" || touch "$work/holds-$index"; } &
done
wait
chain=(0)
for ((index = 1; index < ${#destinations[@]}; index++)); do
  if [[ -e $work/holds-$index ]]; then
    echo "$tag already on $(where "$index")" >&2
  else
    chain+=("$index")
  fi
done
((${#chain[@]} > 1)) || exit 0

# How each hop reaches the next one, its host key checked first: nothing is touched on a host
# before every key is known.
nexts=() ports=() known=()
for ((position = 0; position < ${#chain[@]}; position++)); do
  next=- port=22 known_host=""
  if ((position + 1 < ${#chain[@]})); then
    following=${destinations[${chain[$((position + 1))]}]}
    next=${following%:*} port=${following##*:}
    address=${next#*@}
    [[ $port == 22 ]] || address="[$address]:$port"
    known_host=$(ssh-keygen -F "$address" -f "$known_hosts" | grep -v '^#' | head -n 1 || true)
    [[ -n $known_host ]] || { echo "$known_hosts holds no key for $address: the relay cannot check it" >&2; exit 1; }
  fi
  nexts+=("$next") ports+=("$port") known+=("$known_host")
done

run=dslab-relay-$(date +%s)-$$
clean_up() {
  stop_ticking
  for index in "${chain[@]}"; do hop "$index" clean "$run" </dev/null & done
  wait
  rm -rf "$work"
}
trap clean_up EXIT
ssh-keygen -q -t ed25519 -N '' -C "$run" -f "$work/key"

# Each hop's folder, and on a receiving host the key's authorization for the hop alone.
preparing=()
for ((position = 0; position < ${#chain[@]}; position++)); do
  authorize=()
  ((position == 0)) || authorize=("$(cat "$work/key.pub")")
  { echo "${known[$position]}"; cat "$work/key"; } |
    hop "${chain[$position]}" prepare "$run" "${nexts[$position]}" "${ports[$position]}" "${authorize[@]}" &
  preparing+=($!)
done
for pid in "${preparing[@]}"; do wait "$pid"; done

still_relaying() { echo "still relaying $tag from $(where 0) to $((${#chain[@]} - 1)) host(s): $SECONDS s" >&2; }
tick_while_running still_relaying
trap clean_up EXIT
rc=0
hop 0 send "$run" "$tag" </dev/null || rc=$?
stop_ticking

# Which hosts hold the image now: those that do not are named, with what their load said.
for index in "${chain[@]:1}"; do
  { holds_it "$index" || hop "$index" said "$run" </dev/null >"$work/missing-$index" || true; } &
done
wait
failed=0
for index in "${chain[@]:1}"; do
  [[ -e $work/missing-$index ]] || continue
  said=$(cat "$work/missing-$index")
  echo "$(where "$index"): $tag did not arrive by the relay${said:+ (its load: $said)}" >&2
  failed=1
done
if ((failed)); then
  echo "the relay of $tag from $(where 0) failed (exit $rc); the next run relays to the hosts named above only" >&2
  exit 1
fi
echo "relayed $tag from $(where 0) to $((${#chain[@]} - 1)) host(s) in $SECONDS s" >&2
