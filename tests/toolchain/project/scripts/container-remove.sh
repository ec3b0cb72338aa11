#!/usr/bin/env bash
set -euo pipefail
docker rm --force "$1" >/dev/null 2>&1 || true
