#!/usr/bin/env bash
# Check this host's kernel can hold the IPsec state (ESP, AES-GCM) that an encrypted overlay
# uses: without it Docker creates the network all the same, but no traffic crosses it.
# A throwaway security association between two documentation addresses, used by no policy.
# Usage: ipsec-check.sh HOST_NAME (named in every message)
set -euo pipefail
host=$1
command -v ip >/dev/null || { echo "$host: network.encrypted needs the 'ip' command (iproute2) on this host to check IPsec support" >&2; exit 1; }
spi=0x$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
key=0x$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
if ! error=$(ip xfrm state add src 192.0.2.1 dst 192.0.2.2 proto esp spi "$spi" mode transport \
    aead 'rfc4106(gcm(aes))' "$key" 64 2>&1); then
  echo "$host: network.encrypted: this host's kernel cannot hold IPsec ESP state with AES-GCM ($error); load the esp4, xfrm_user and xfrm_algo modules, or set network.encrypted: false" >&2
  exit 1
fi
ip xfrm state delete src 192.0.2.1 dst 192.0.2.2 proto esp spi "$spi"
echo "$host: IPsec ESP with AES-GCM available" >&2
