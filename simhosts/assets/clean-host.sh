#!/bin/sh
# Run inside a simulated server (by `python -m simhosts clean`): what stacks left on it goes, as
# if no stack had ever run there; its images and build cache stay, so the next build is warm,
# but not under the names the program gives them (dslab/*): an image that no other name holds
# is removed, and its build cache stays.
# A test run that was killed (or a stack whose state was deleted) leaves containers, a claim
# volume and a swarm behind, and the program rightly refuses a host another stack claims.
set -u
docker ps --all --quiet | xargs -r docker rm --force --volumes >/dev/null
docker swarm leave --force >/dev/null 2>&1 || true
docker volume ls --quiet | xargs -r docker volume rm --force >/dev/null
docker network prune --force >/dev/null
docker images --format '{{.Repository}}:{{.Tag}}' | grep '^dslab/' | xargs -r docker rmi >/dev/null
# IPsec tunnels an encrypted overlay left (the host's own network namespace only).
ip xfrm state flush 2>/dev/null || true
ip xfrm policy flush 2>/dev/null || true
# The results directories and the step marks.
rm -rf /var/lib/dslab /root/.dslab
