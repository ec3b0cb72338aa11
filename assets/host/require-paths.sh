#!/usr/bin/env bash
# On a host, before its training container starts: every input the workload mounts must be
# here. Reports every missing or empty one, naming this host and the path, and fails.
# Usage: require-paths.sh HOST_NAME [DESCRIPTION PATH]...
#   a PATH that is a directory must not be empty; any other PATH must exist.
set -euo pipefail
host=$1
shift
missing=0
while [ $# -ge 2 ]; do
  what=$1 path=$2
  shift 2
  if [ -d "$path" ]; then
    if [ -z "$(ls -A "$path")" ]; then
      echo "$host: the $what $path is empty; copy it there on every host" >&2
      missing=1
    fi
  elif [ ! -e "$path" ]; then
    echo "$host: the $what $path does not exist; copy it there on every host" >&2
    missing=1
  fi
done
[ $# -eq 0 ] || { echo "usage: require-paths.sh HOST_NAME [DESCRIPTION PATH]..." >&2; exit 64; }
[ "$missing" = 0 ] || exit 1
echo "$host: every training input is here" >&2
