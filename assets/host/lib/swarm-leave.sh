# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/swarm-leave.sh` (components/hosts/host_script.py).

# Leave the swarm (manager or worker); nothing to do when not in one. A join right after this
# one must find the gossip port closed; a leaked listener is reported here too, but destroy
# goes on.
leave_swarm() {
  if [[ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != inactive ]]; then
    echo "leaving the swarm" >&2
    docker swarm leave --force >/dev/null
  fi
  wait_for_gossip_port_free || true
}
