#!/bin/sh
# Run inside a simulated host: new SSH host keys, served at once (sshd re-reads them on HUP).
set -eu
rm -f /etc/ssh/ssh_host_*
ssh-keygen -A >/dev/null
pkill -HUP -o -x sshd
