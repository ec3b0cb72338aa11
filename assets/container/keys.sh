#!/usr/bin/env bash
# The container's ssh keys: sshd's host keys and root's ed25519 key pair, kept in the
# container's filesystem (the private keys never leave it; callers read the .pub files).
#
# Usage: keys.sh make [--reload-sshd]   make what is missing (a public key is derived again
#                                       from its private key); with --reload-sshd, a sshd
#                                       running as PID 1 is told to load a host key made now
#        keys.sh check                  exit 1, naming the file, unless every key pair is
#                                       there and each public key matches its private key
set -euo pipefail

USER_KEY=/root/.ssh/id_ed25519
HOST_KEY=/etc/ssh/ssh_host_ed25519_key

# Whether PRIVATE exists and PRIVATE.pub holds the public half of it.
pair_ok() {
  [ -s "$1" ] && [ -s "$1.pub" ] || return 1
  [ "$(ssh-keygen -y -f "$1" 2>/dev/null | cut -d' ' -f1,2)" = "$(cut -d' ' -f1,2 "$1.pub")" ]
}

make_keys() {
  local reload=$1 made_host_key=""
  [ -s "$HOST_KEY" ] || { rm -f "$HOST_KEY" "$HOST_KEY.pub"; made_host_key=yes; }
  ssh-keygen -A >/dev/null  # only the host key types that are missing
  pair_ok "$HOST_KEY" || ssh-keygen -y -f "$HOST_KEY" >"$HOST_KEY.pub"
  install -d -m 0700 /root/.ssh
  if [ ! -s "$USER_KEY" ]; then
    rm -f "$USER_KEY" "$USER_KEY.pub"
    ssh-keygen -q -t ed25519 -N '' -C "root@$(hostname)" -f "$USER_KEY"
  fi
  pair_ok "$USER_KEY" || ssh-keygen -y -f "$USER_KEY" >"$USER_KEY.pub"
  touch /root/.ssh/authorized_keys /root/.ssh/known_hosts
  chmod 0600 /root/.ssh/authorized_keys "$USER_KEY"
  chmod 0644 /root/.ssh/known_hosts "$USER_KEY.pub"
  # sshd read its host keys when it started; SIGHUP makes it start again in place.
  if [ -n "$made_host_key" ] && [ "$reload" = --reload-sshd ] && [ "$(cat /proc/1/comm)" = sshd ]; then
    kill -HUP 1
  fi
}

case "${1:-}" in
  make) make_keys "${2:-}" ;;
  check)
    for key in "$HOST_KEY" "$USER_KEY"; do
      pair_ok "$key" || { echo "$key: missing, or its .pub does not match it (the next up makes it again)" >&2; exit 1; }
    done
    ;;
  *) echo "usage: keys.sh make [--reload-sshd] | keys.sh check" >&2; exit 64 ;;
esac
