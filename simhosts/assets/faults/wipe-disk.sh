#!/bin/sh
# Run inside a simulated host, its engine stopped: what a reinstalled OS on an empty disk no
# longer has. The engine's data (a volume mounted at /var/lib/docker) is emptied, not removed;
# what the stopped engine leaves mounted (network namespaces under /run/docker) goes first.
# Then what the program may leave outside the engine: run results and step marks (the
# operator's user is root on the simulated hosts).
set -eu
awk '$2 ~ "^/(var/lib|run)/docker/" {print $2}' /proc/mounts | sort -r | xargs -r umount -l
find /var/lib/docker -mindepth 1 -maxdepth 1 -exec rm -rf {} +
rm -rf /run/docker /var/lib/dslab /root/.dslab
