# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/gossip-port.sh` (components/hosts/host_script.py).
# Docker swarm's gossip listens on TCP 7946 (0x1F0A). After a leave the engine closes it within
# seconds, but a worker that left while its manager left too can keep it open for good
# (moby/moby#31913): a swarm made then initialises no gossip and its overlays carry nothing.

gossip_port_held() {
  grep -Eq '^ *[0-9]+: [0-9A-F]+:1F0A [0-9A-F]+:0000 0A ' /proc/net/tcp /proc/net/tcp6
}

# Waits up to 15 s for the port to close; fails, saying what to do, when it stays open.
wait_for_gossip_port_free() {
  local _
  for _ in $(seq 1 30); do
    gossip_port_held || return 0
    sleep 0.5
  done
  echo "TCP port 7946 is still held, most likely by this Docker engine's earlier swarm (moby/moby#31913);" \
    "overlays made now would carry nothing. Restart the Docker engine on this host, then run pulumi up again." >&2
  return 1
}
