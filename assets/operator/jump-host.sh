#!/usr/bin/env bash
# ssh's ProxyCommand through a host's jump host (SETTING: operator.jump_host, or the host's own
# jump_host): forwards this connection to HOST:PORT (ssh -W), and when that fails says which hop
# did: the jump host itself (down, its host key changed, the login refused) or HOST, not
# reachable from it. ssh prints only its own last word ("Connection closed by UNKNOWN port
# 65535") otherwise.
# Usage: jump-host.sh HOST PORT JUMP_USER@JUMP_ADDRESS JUMP_PORT SETTING SSH_OPTION...
set -uo pipefail
host=$1 port=$2 jump=$3 jump_port=$4 setting=$5
shift 5
errors=$(mktemp)
trap 'rm -f "$errors"' EXIT
rc=0
ssh "$@" -p "$jump_port" -W "$host:$port" "$jump" 2>"$errors" || rc=$?
if [[ $rc -ne 0 ]]; then
  said=$(grep -m 1 -e 'open failed' "$errors" || tail -n 1 "$errors")
  said=${said//$'\r'/}
  if grep -q -e 'open failed' -e 'stdio forwarding failed' "$errors"; then
    echo "cannot reach $host:$port from the jump host ${jump#*@}:$jump_port: $said" >&2
  else
    echo "the jump host ${jump#*@}:$jump_port ($setting) refused or did not answer: $said" >&2
  fi
fi
exit "$rc"
