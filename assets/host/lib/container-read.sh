# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/container-read.sh` (components/hosts/host_script.py).

# For a read script about something inside CONTAINER: a container that is not running is
# dropped by the refresh and made again, so what the program placed in it is gone too (exit 3).
exit_gone_unless_running() {
  [[ "$(docker inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" == true ]] || exit 3
}
