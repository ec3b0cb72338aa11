#!/usr/bin/env bash
# The training container's entrypoint: runs at every start, also after an engine restart.
#
#  1. ssh host keys and root's key pair, made once and kept in the container's filesystem
#     (keys.sh; the private key never leaves the container; callers read the .pub files);
#  2. sshd, root by key only, on port DSLAB_SSH_PORT; its sessions get the image's PATH and
#     friends and NCCL/GLOO_SOCKET_IFNAME (SetEnv), which non-login ssh shells lack;
#  3. the interface holding the overlay subnet DSLAB_OVERLAY_SUBNET, written to
#     /run/dslab/socket_ifname and exported for login shells in /etc/profile.d/dslab.sh;
#     its ssh client gives up on a silent node after ~30 s and uses the same port;
#  4. /run/dslab/ready, then sshd in the foreground as PID 1: `docker logs` shows its log,
#     and the container stops when sshd dies (its restart policy brings it back).
#
# Environment:
#   DSLAB_SSH_PORT        sshd port (default 22)
#   DSLAB_OVERLAY_SUBNET  overlay subnet, e.g. 10.0.3.0/24; without it no interface is
#                         detected and socket_ifname is not written
#   DSLAB_IFNAME_WAIT_S   seconds to wait for an address in that subnet (default 15)
#   DSLAB_SESSION_ENV     extra variable names (space separated) handed to ssh sessions,
#                         besides PATH, USE_LIBUV, LD_LIBRARY_PATH, CUDA_HOME and the CA ones
set -euo pipefail

here="$(dirname "$(readlink -f "$0")")"
state=/run/dslab
port="${DSLAB_SSH_PORT:-22}"
subnet="${DSLAB_OVERLAY_SUBNET:-}"
wait_s="${DSLAB_IFNAME_WAIT_S:-15}"

log() { echo "dslab-entrypoint: $*" >&2; }

mkdir -p "$state"
rm -f "$state/ready" "$state/socket_ifname"

case "$port" in
  ''|*[!0-9]*) log "DSLAB_SSH_PORT must be a port number, got '$port'"; exit 64 ;;
esac

# --- keys -------------------------------------------------------------------------------
"$here/keys.sh" make

# --- overlay interface ------------------------------------------------------------------
if [ -z "$subnet" ]; then
  log "DSLAB_OVERLAY_SUBNET is not set: no socket interface detected"
else
  ifname=""
  for _ in $(seq 0 "$wait_s"); do
    rc=0
    ifname="$("$here/socket-ifname.sh" "$subnet")" || rc=$?
    if [ "$rc" = 64 ]; then log "DSLAB_OVERLAY_SUBNET is not usable"; exit 64; fi
    [ -n "$ifname" ] && break
    sleep 1
  done
  if [ -n "$ifname" ]; then
    echo "$ifname" > "$state/socket_ifname.tmp"
    mv "$state/socket_ifname.tmp" "$state/socket_ifname"
    log "interface $ifname holds $subnet"
  else
    log "no interface holds an address in $subnet after ${wait_s}s: $(ip -o -4 addr show | awk '{print $2, $4}' | tr '\n' ' ')"
  fi
fi

# ssh sessions start with a fresh environment, without the image's ENV or `docker run -e`:
# these variables (if set) are handed to every session through sshd's SetEnv, so that
# `ssh server2 python` finds the venv and ranks find the socket interface.
SESSION_VARS="PATH VIRTUAL_ENV USE_LIBUV LD_LIBRARY_PATH CUDA_HOME PIP_CERT REQUESTS_CA_BUNDLE SSL_CERT_FILE PIP_FIND_LINKS NVIDIA_VISIBLE_DEVICES NVIDIA_DRIVER_CAPABILITIES ${DSLAB_SESSION_ENV:-}"

# NAME=VALUE pairs, NUL-terminated: SESSION_VARS that are set, then the socket interface.
session_vars() {
  local name
  for name in $SESSION_VARS; do
    [[ "$name" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || { log "ignoring '$name' in DSLAB_SESSION_ENV: not a variable name"; continue; }
    if [ -n "${!name:-}" ]; then printf '%s=%s\0' "$name" "${!name}"; fi
  done
  if [ -n "${ifname:-}" ]; then
    printf 'NCCL_SOCKET_IFNAME=%s\0GLOO_SOCKET_IFNAME=%s\0' "$ifname" "$ifname"
  fi
}

# One SetEnv line; sshd_config takes double-quoted arguments, values hold no quote or newline.
session_env() {
  local line="SetEnv" pair
  while IFS= read -r -d '' pair; do
    case "$pair" in *'"'*|*$'\n'*) log "not passing ${pair%%=*} to ssh sessions: its value holds a quote or newline"; continue ;; esac
    line+=" \"$pair\""
  done < <(session_vars)
  [ "$line" = "SetEnv" ] || echo "$line"
}

# --- sshd -------------------------------------------------------------------------------
mkdir -p /run/sshd /etc/ssh/sshd_config.d
cat > /etc/ssh/sshd_config.d/00-dslab.conf <<CONF
# Written by /opt/dslab/entrypoint.sh at every container start.
Port $port
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# pdsh opens one session per rank; the default 10 startups would refuse bursts.
MaxStartups 200:30:400
MaxSessions 200
CONF
session_env >> /etc/ssh/sshd_config.d/00-dslab.conf
if ! grep -q '^Include /etc/ssh/sshd_config.d/\*.conf' /etc/ssh/sshd_config; then
  # Older sshd_config (Ubuntu 20.04's) lacks the include; the first value of a keyword wins.
  sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
fi
# pam_loginuid cannot set the login uid without CAP_AUDIT_CONTROL, which containers lack
# by default; "required" would close every session right after login.
if [ -f /etc/pam.d/sshd ]; then
  sed -i 's/^session\s\+required\s\+pam_loginuid\.so/session optional pam_loginuid.so/' /etc/pam.d/sshd
fi
/usr/sbin/sshd -t

# The ssh client (pdsh's, the watchdog's): a node that stops answering ends its session
# within ~30 s instead of TCP's hours, so a cut network fails the run instead of hanging it.
# known_hosts is the program's (it puts it back when it changes): the client must not add
# the other host key types a server offers to it.
mkdir -p /etc/ssh/ssh_config.d
cat > /etc/ssh/ssh_config.d/00-dslab.conf <<CONF
# Written by /opt/dslab/entrypoint.sh at every container start.
Host *
    Port $port
    BatchMode yes
    ConnectTimeout 10
    ServerAliveInterval 5
    ServerAliveCountMax 6
    UpdateHostKeys no
CONF
if ! grep -q '^Include /etc/ssh/ssh_config.d/\*.conf' /etc/ssh/ssh_config; then
  sed -i '1i Include /etc/ssh/ssh_config.d/*.conf' /etc/ssh/ssh_config
fi

# Login shells (interactive ssh) get the same variables. Ranks started by pdsh also read
# the launcher's .deepspeed_env, which wins over both.
{
  echo "# Written by /opt/dslab/entrypoint.sh at every container start."
  session_vars | while IFS= read -r -d '' pair; do
    printf 'export %s=%q\n' "${pair%%=*}" "${pair#*=}"
  done
} > /etc/profile.d/dslab.sh

touch "$state/ready"
log "sshd on port $port"
exec /usr/sbin/sshd -D -e
