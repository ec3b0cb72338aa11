#!/usr/bin/env bash
# One host's part in an image relay (assets/operator/image-relay.sh, which runs it with
# `bash -c`). RUN names the relay; its folder on this host is ~/.dslab/relay/RUN.
#   prepare RUN NEXT PORT [PUBLIC_KEY]
#       makes the folder: the next hop (NEXT, `USER@ADDRESS` or `-` on the last, at PORT), and
#       from stdin its known_hosts line (the first line) and the relay's private key (the rest),
#       to log in to it; with PUBLIC_KEY (the relay's, its comment RUN), authorizes it for
#       `receive RUN` alone. What an earlier relay left (its folder, its authorization) is
#       removed first.
#   send RUN TAG    `docker save TAG` to the next hop
#   receive RUN     (the key's forced command) loads the image arriving on stdin while it
#                   passes the same bytes to the next hop; its load's words and status stay in
#                   the folder (load.out, load.rc)
#   said RUN        the last words of this host's load
#   clean RUN       removes the folder and the key's authorization (and any an earlier relay
#                   left)
set -uo pipefail
action=$1 run=$2
relays=$HOME/.dslab/relay
dir=$relays/$run

to_next() {  # ssh to the next hop, strict host key, with the relay's key only
  local destination port
  read -r destination port <"$dir/next"
  ssh -i "$dir/key" -o IdentitiesOnly=yes -o UserKnownHostsFile="$dir/known_hosts" -o StrictHostKeyChecking=yes \
    -o BatchMode=yes -o ConnectTimeout=10 -o ServerAliveInterval=5 -o ServerAliveCountMax=4 -p "$port" "$destination"
}

forget() {  # forget PATTERN: the authorizations whose comment matches PATTERN
  [[ ! -f ~/.ssh/authorized_keys ]] || sed -i "/ $1\$/d" ~/.ssh/authorized_keys
}

case $action in
  prepare)
    set -e
    next=$3 port=$4 public_key=${5:-}
    forget 'dslab-relay-[0-9a-z-]*'
    rm -rf "$relays"
    umask 077
    mkdir -p "$dir" ~/.ssh
    IFS= read -r known_host
    printf '%s\n' "$known_host" >"$dir/known_hosts"
    cat >"$dir/key"
    [[ $next == - ]] || echo "$next $port" >"$dir/next"
    printf '%s\n' "$BASH_EXECUTION_STRING" >"$dir/hop.sh"
    if [[ -n $public_key ]]; then
      echo "restrict,command=\"bash $dir/hop.sh receive $run\" $public_key" >>~/.ssh/authorized_keys
    fi
    ;;
  send)
    set -o pipefail
    docker save "$3" | to_next
    ;;
  receive)
    if [[ ! -f $dir/next ]]; then
      docker load >"$dir/load.out" 2>&1
      rc=$?
      echo "$rc" >"$dir/load.rc"
      exit "$rc"
    fi
    rm -f "$dir/stream"
    mkfifo "$dir/stream"
    docker load <"$dir/stream" >"$dir/load.out" 2>&1 &
    loader=$!
    # A next hop that fails does not stop this host's load (-p: tee goes on without the pipe).
    tee -p "$dir/stream" | to_next
    forwarded=$?
    wait "$loader"
    rc=$?
    echo "$rc" >"$dir/load.rc"
    ((rc != 0)) || rc=$forwarded
    exit "$rc"
    ;;
  said)
    tail -n 3 "$dir/load.out" 2>/dev/null | tr '\n' ' '
    ;;
  clean)
    # With this relay's, any that a killed relay left.
    forget 'dslab-relay-[0-9a-z-]*'
    rm -rf "$relays"
    ;;
  *) echo "usage: image-relay-hop.sh prepare|send|receive|said|clean RUN ..." >&2; exit 64 ;;
esac
