#!/bin/bash
# Cuts or restores this host's network like a pulled cable: `dslab-netcut cut|restore|status`.
# Every packet in or out of eth0 is dropped in the mangle table, which the host's own
# Docker engine never edits, so its rules cannot overtake ours and restore is exact:
# one chain and its jumps, removed again.
set -euo pipefail

chain=DSLAB-CUT
ipt=(iptables -w -t mangle)

is_cut() { "${ipt[@]}" -S "$chain" >/dev/null 2>&1; }

case "${1:-}" in
  cut)
    is_cut && exit 0
    "${ipt[@]}" -N "$chain"
    "${ipt[@]}" -A "$chain" -j DROP
    "${ipt[@]}" -I PREROUTING 1 -i eth0 -j "$chain"
    "${ipt[@]}" -I POSTROUTING 1 -o eth0 -j "$chain"
    ;;
  restore)
    is_cut || exit 0
    while "${ipt[@]}" -D PREROUTING -i eth0 -j "$chain" 2>/dev/null; do :; done
    while "${ipt[@]}" -D POSTROUTING -o eth0 -j "$chain" 2>/dev/null; do :; done
    "${ipt[@]}" -F "$chain"
    "${ipt[@]}" -X "$chain"
    ;;
  status)
    if is_cut; then echo cut; else echo connected; fi
    ;;
  *)
    echo "usage: dslab-netcut cut|restore|status" >&2
    exit 2
    ;;
esac
