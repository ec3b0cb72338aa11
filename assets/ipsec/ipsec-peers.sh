#!/usr/bin/env bash
# IPsec between this host and its peers for the overlay's VXLAN traffic, in userspace:
# strongSwan's charon negotiates IKEv2 with each peer (pre-shared key) and its kernel-libipsec
# plugin does ESP itself, through a TUN device, so the host kernel needs no ESP support.
#
# charon puts a route to each peer through the tunnel into its own routing table; only VXLAN
# (UDP 4789) to a peer is looked up there, by our routing rule, so IKE, ssh and swarm traffic
# between the hosts go as before. Below that rule a blackhole rule catches the same traffic:
# while the tunnel is down (charon stopped, container gone) VXLAN to a peer is dropped, never
# sent in the clear. Our rules stay when the container stops, for that reason; `down` removes
# them.
#
# Runs in a container on the host's network (NET_ADMIN, /dev/net/tun).
# Usage:
#   ipsec-peers.sh up LOCAL_ADDRESS TUNNEL_MTU TABLE PEER_ADDRESS...
#     the pre-shared key is read from /etc/swanctl/dslab.psk
#   ipsec-peers.sh initiate LOCAL_ADDRESS EVERY(yes|no) PEER_ADDRESS...
#     (in the running container) prints the peers without a tunnel, starting negotiations
#   ipsec-peers.sh down TABLE
set -euo pipefail

VXLAN_PORT=4789
TUNNEL=ipsec0  # the TUN device kernel-libipsec makes
UDP=17  # by number: minimal images have no /etc/protocols
PSK_FILE=/etc/swanctl/dslab.psk
VICI_SOCKET=/var/run/charon.vici

log() { echo "ipsec: $*" >&2; }

connection_name() { echo "peer-${1//./-}"; }

# Print the peers without a tunnel, and negotiate with those whose address is above ours
# (so a fresh pair negotiates once), or with all of them when EVERY is yes (a peer that
# kept its end of an old tunnel, to a container of ours since replaced, would not).
initiate() {
  local local_address=$1 every=$2; shift 2
  local peer
  for peer in "$@"; do
    if swanctl --list-sas --ike "$(connection_name "$peer")" 2>/dev/null | grep -q INSTALLED; then
      continue
    fi
    echo "$peer"
    if [[ "$every" == yes || "$(printf '%s\n' "$local_address" "$peer" | sort -V | head -n1)" == "$local_address" ]]; then
      swanctl --initiate --ike "$(connection_name "$peer")" --child vxlan --timeout 3 >/dev/null 2>&1 || true
    fi
  done
}

# Per peer: VXLAN looks in charon's table first, and is dropped when that has no route.
# The sport rule is for the reverse-path check of VXLAN coming in decrypted on the tunnel
# (its reverse flow has sport 4789): it finds the tunnel, so the check passes even when
# strict, without an address on the tunnel.
rules_up() {
  local table=$1; shift
  local peer
  rules_down "$table"
  for peer in "$@"; do
    ip rule add priority "$table" to "$peer/32" ipproto "$UDP" dport "$VXLAN_PORT" lookup "$table"
    ip rule add priority "$table" to "$peer/32" ipproto "$UDP" sport "$VXLAN_PORT" lookup "$table"
    ip rule add priority $((table + 2)) to "$peer/32" ipproto "$UDP" dport "$VXLAN_PORT" blackhole
  done
}

# Ours, and charon's own rule if it died without removing it (its routes go with its device).
rules_down() {
  local table=$1 priority
  for priority in "$table" $((table + 1)) $((table + 2)); do
    while ip rule del priority "$priority" 2>/dev/null; do :; done
  done
}

# One connection per peer. Trap policies: the first VXLAN packet to a peer, or the first after
# a peer went silent (dead peer detection), starts the negotiation; `initiate` starts it early.
write_swanctl_conf() {
  local local_address=$1; shift
  local peer
  {
    echo "connections {"
    for peer in "$@"; do
      cat <<CONF
  $(connection_name "$peer") {
    version = 2
    local_addrs = $local_address
    remote_addrs = $peer
    encap = yes
    proposals = aes128gcm16-prfsha256-ecp256
    dpd_delay = 5s
    local { auth = psk
            id = $local_address }
    remote { auth = psk
             id = $peer }
    children {
      vxlan {
        mode = tunnel
        local_ts = $local_address/32
        remote_ts = $peer/32
        esp_proposals = aes128gcm16
        start_action = trap
        dpd_action = trap
        close_action = trap
      }
    }
  }
CONF
    done
    echo "}"
    echo "secrets { ike-dslab { secret = \"$(cat "$PSK_FILE")\" } }"
  } > /etc/swanctl/swanctl.conf
  chmod 600 /etc/swanctl/swanctl.conf
}

write_strongswan_conf() {
  local mtu=$1 table=$2
  cat > /etc/strongswan.conf <<CONF
charon {
  # Only what this needs, kernel-libipsec (ESP in userspace) first so that it does the IPsec.
  load_modular = no
  load = random nonce openssl pem pkcs1 pubkey x509 kernel-libipsec kernel-netlink socket-default vici
  # charon's routes to the peers go into this table; its own rule for the table only takes
  # packets with a mark nothing sets, so only our VXLAN rule leads there.
  routing_table = $table
  routing_table_prio = $((table + 1))
  install_virtual_ip = no
  retransmit_timeout = 1.0
  retransmit_base = 1.4
  retransmit_tries = 4
  plugins {
    kernel-netlink {
      fwmark = 0x64736c61
    }
    kernel-libipsec {
      allow_peer_ts = yes
    }
  }
  filelog {
    stderr {
      default = 1
      time_format = %F %T
    }
  }
}
swanctl {
  load = random openssl pem pkcs1 x509
}
CONF
}

up() {
  local local_address=$1 mtu=$2 table=$3; shift 3
  [[ -s "$PSK_FILE" ]] || { log "no pre-shared key in $PSK_FILE"; exit 1; }
  rules_up "$table" "$@"
  write_strongswan_conf "$mtu" "$table"
  write_swanctl_conf "$local_address" "$@"
  rm -f "$VICI_SOCKET"
  /usr/lib/ipsec/charon &
  local charon=$!
  trap 'kill -TERM "$charon" 2>/dev/null; wait "$charon"' TERM INT
  for _ in $(seq 1 100); do
    [[ -S "$VICI_SOCKET" ]] && break
    sleep 0.1
  done
  # charon reads the device with a buffer of its MTU at creation (1400): it may only shrink.
  if ((mtu < $(cat "/sys/class/net/$TUNNEL/mtu"))); then
    ip link set dev "$TUNNEL" mtu "$mtu"
  fi
  swanctl --load-all --file /etc/swanctl/swanctl.conf >&2
  log "peers: $*"
  wait "$charon"
}

case "${1:-}" in
  up) shift; up "$@" ;;
  initiate) shift; initiate "$@" ;;
  down) shift; rules_down "$@" ;;
  *) sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
