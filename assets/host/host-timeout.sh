#!/usr/bin/env bash
# How long this host's Docker engine may take to answer a call of our scripts (the stack's
# operator.host_timeout), kept on the host: the scripts of every step read it here
# (host/lib/engine-bound.sh), and so does the operator's engine watch (engine-watch.sh), so a
# new timeout is one step on each host, not every step run again.
#   set SECONDS   writes it (the step's create and update) and marks the step's generation
#                 (host/lib/step-mark.sh); the hosts' probe reads the file itself
#   forget        the step's delete: the file and the mark go
set -euo pipefail
# dslab:include host/lib/step-mark.sh
# dslab:include host/lib/host-timeout-file.sh

case ${1:-} in
  set)
    [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "usage: host-timeout.sh set SECONDS" >&2; exit 64; }
    mkdir -p "$(dirname "$HOST_TIMEOUT_FILE")"
    echo "$2" >"$HOST_TIMEOUT_FILE.new" && mv -f "$HOST_TIMEOUT_FILE.new" "$HOST_TIMEOUT_FILE"
    mark_host host-timeout
    ;;
  forget) rm -f "$HOST_TIMEOUT_FILE" && unmark_host host-timeout ;;
  *) echo "usage: host-timeout.sh set SECONDS | forget" >&2; exit 64 ;;
esac
