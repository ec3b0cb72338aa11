#!/bin/bash
# `ssh` for the operator's side of the simulator: the system ssh with the simulator's config.
# The docker CLI runs plain `ssh` for DOCKER_HOST=ssh://... and has no option to pass flags,
# so put this file's directory first on PATH: PATH="$PWD/.simhosts/bin:$PATH" docker -H ssh://root@10.0.18.1 info
exec /usr/bin/ssh -F "$(dirname "$(readlink -f "$0")")/../ssh_config" "$@"
