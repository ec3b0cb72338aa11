#!/usr/bin/env bash
# Claim this host for one stack before anything else touches it: a docker volume
# `dslab-claim` labelled dslab.owner=OWNER (org/project/stack). A host that another stack
# claimed, or that runs another stack's containers, is refused, naming that stack.
# Usage: host-claim.sh OWNER
set -euo pipefail
owner=$1
volume=dslab-claim

claimed_by() { docker volume inspect "$volume" --format '{{index .Labels "dslab.owner"}}' 2>/dev/null || true; }

refuse_other_owner() {
  local other=$1 what=$2
  echo "this host is already used by stack '$other' ($what); destroy that stack first, or list this host in only one of them" >&2
  exit 1
}

current=$(claimed_by)
[[ -z "$current" || "$current" == "$owner" ]] || refuse_other_owner "$current" "docker volume $volume"
while read -r other; do
  [[ -z "$other" || "$other" == "$owner" ]] || refuse_other_owner "$other" "a container labelled dslab.owner"
done < <(docker ps --all --filter label=dslab.owner --format '{{.Label "dslab.owner"}}' | sort -u)

if [[ -z "$current" ]]; then
  docker volume create --label "dslab.owner=$owner" "$volume" >/dev/null
  # Two stacks claiming at the same moment: the label that stuck wins.
  current=$(claimed_by)
  [[ "$current" == "$owner" ]] || refuse_other_owner "$current" "docker volume $volume"
  echo "claimed for stack $owner" >&2
fi
printf '{"owner": "%s"}\n' "$owner"
