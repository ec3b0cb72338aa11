#!/usr/bin/env bash
# Bounds a Docker engine that accepts connections but never answers (a hung or swamped dockerd):
# pulumi-docker would wait 20 minutes for each of its calls, and Ctrl-C does not end them.
# ssh runs this as its LocalCommand when one of pulumi-docker's connections to a host opens
# (components/hosts/engines.py). It returns at once, so the connection is not delayed; in the
# background it asks the host's engine for its version over a second ssh login, within the bound
# the host keeps (operator.host_timeout, written by host/host-timeout.sh; 60 s before that step
# ran), and when no reply comes in time, says so on the connection's stderr (pulumi-docker quotes
# it in its error) and ends that connection's ssh, so the call fails within the bound, naming the
# host. The bound is read there, not given here: the provider's settings, kept in the stack's
# state, then do not change with it.
# Usage: engine-watch.sh SSH_PID HOST_NAME USER@ADDRESS PORT -- SSH_OPTION...
set -uo pipefail
ssh_pid=$1 host_name=$2 destination=$3 port=$4
shift 5
ssh_options=("$@")
# What the watch's login runs on the host (its login shell, POSIX): the bound first, then the
# engine's answer within it. The path is host/lib/host-timeout-file.sh's.
# shellcheck disable=SC2016  # expanded there
ASK_ENGINE='bound=60; if [ -r ~/.dslab/host-timeout ]; then read -r bound <~/.dslab/host-timeout; fi
case $bound in ""|*[!0-9]*) bound=60 ;; esac
echo "$bound"; timeout "$bound" docker version --format "{{.Server.Version}}" >/dev/null'
# The whole login, sshd included, ends by then whatever the host keeps (a login that hangs
# leaves only this background watch behind, never the connection it watches).
LOGIN_CEILING_S=3600

watch() {
  local rc=0 bound
  # After the burst of logins that opens a refresh (every read of every host at once), not in
  # it: on a small operator machine the watch's own login slowed each preview by ~6 %.
  sleep 1
  kill -0 "$ssh_pid" 2>/dev/null || return 0
  # stdin and stdout are the Docker API stream of the watched connection: never touch them.
  bound=$(timeout "$LOGIN_CEILING_S" ssh -n "${ssh_options[@]}" -p "$port" "$destination" "$ASK_ENGINE" \
    2>/dev/null </dev/null) || rc=$?
  # 124: the engine (or, from the outer timeout, the whole login) gave no reply in time. Any
  # other failure is left to the watched connection, which meets it itself.
  # The watched ssh may have ended meanwhile and its pid gone to another process: only an ssh.
  if [[ $rc -eq 124 ]] && [[ "$(ps -o comm= -p "$ssh_pid" 2>/dev/null)" == *ssh ]]; then
    echo "$host_name: the Docker engine does not answer (no reply in ${bound:-$LOGIN_CEILING_S} s)" >&2
    kill -TERM "$ssh_pid" 2>/dev/null
  fi
}

watch </dev/null >/dev/null &
disown
exit 0
