#!/bin/bash
# `ssh` for the operator's side of the lab: the system ssh with the lab's config.
# The docker CLI runs plain `ssh` for DOCKER_HOST=ssh://... and has no option to pass flags,
# so put this file's directory first on PATH: PATH="$PWD/.lab/bin:$PATH" docker -H ssh://root@10.0.18.1 info
exec /usr/bin/ssh -F "$(dirname "$(readlink -f "$0")")/../ssh_config" "$@"
