#!/bin/bash
# Replaces root's authorized_keys with the public keys read from stdin (one a line).
# Run by `simhosts up` on every host each time, so a regenerated operator key takes effect at once.
set -euo pipefail
install -d -m 0700 /root/.ssh
tmp="$(mktemp /root/.ssh/authorized_keys.XXXXXX)"
cat >"$tmp"
chmod 0600 "$tmp"
mv "$tmp" /root/.ssh/authorized_keys
