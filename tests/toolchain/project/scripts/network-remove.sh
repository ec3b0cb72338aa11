#!/usr/bin/env bash
set -euo pipefail
docker network rm "$1" >/dev/null 2>&1 || true
