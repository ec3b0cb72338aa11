#!/usr/bin/env bash
# Bounds a Docker engine that accepts connections but never answers (a hung or swamped dockerd):
# pulumi-docker would wait 20 minutes for each of its calls, and Ctrl-C does not end them.
# ssh runs this as its LocalCommand when one of pulumi-docker's connections to a host opens
# (components/hosts/engines.py). It returns at once, so the connection is not delayed; in the
# background it asks the host's engine for its version over a second ssh login and, when no
# reply comes within TIMEOUT_S, says so on the connection's stderr (pulumi-docker quotes it in
# its error) and ends that connection's ssh, so the call fails within the bound, naming the host.
# Usage: engine-watch.sh SSH_PID HOST_NAME USER@ADDRESS PORT TIMEOUT_S -- SSH_OPTION...
set -uo pipefail
ssh_pid=$1 host_name=$2 destination=$3 port=$4 timeout_s=$5
shift 6
ssh_options=("$@")

watch() {
  local rc=0
  # After the burst of logins that opens a refresh (every read of every host at once), not in
  # it: on a small operator machine the watch's own login slowed each preview by ~6 %.
  sleep 1
  kill -0 "$ssh_pid" 2>/dev/null || return 0
  # stdin and stdout are the Docker API stream of the watched connection: never touch them.
  timeout "$((timeout_s + 15))" ssh -n "${ssh_options[@]}" -p "$port" "$destination" \
    "timeout $timeout_s docker version --format '{{.Server.Version}}'" >/dev/null 2>&1 </dev/null || rc=$?
  # 124: the engine (or, from the outer timeout, the whole login) gave no reply in time. Any
  # other failure is left to the watched connection, which meets it itself.
  # The watched ssh may have ended meanwhile and its pid gone to another process: only an ssh.
  if [[ $rc -eq 124 ]] && [[ "$(ps -o comm= -p "$ssh_pid" 2>/dev/null)" == *ssh ]]; then
    echo "$host_name: the Docker engine does not answer (no reply in $timeout_s s)" >&2
    kill -TERM "$ssh_pid" 2>/dev/null
  fi
}

watch </dev/null >/dev/null &
disown
exit 0
