#!/usr/bin/env bash
# The container's health check: ready once the entrypoint has settled keys and the overlay
# interface (it writes /run/dslab/ready) and sshd runs. `pulumi up` waits for it after
# creating the container; `docker ps` shows it.
test -e /run/dslab/ready && pgrep -x sshd >/dev/null
