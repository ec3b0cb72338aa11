# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/host-timeout-file.sh` (components/hosts/host_script.py).
# Where a host keeps how long its engine may take (host/host-timeout.sh writes it; the hosts'
# probe, host/lib/engine-bound.sh and the operator's engine watch read it). ~: the passwd entry
# when HOME is unset.
# shellcheck disable=SC2034  # used by the scripts that include it
HOST_TIMEOUT_FILE=~/.dslab/host-timeout
