#!/usr/bin/env bash
set -euo pipefail
echo "greeting $1" >&2
printf '{"text": "%s from %s"}\n' "$1" "$(hostname)"
