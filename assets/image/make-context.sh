#!/usr/bin/env bash
# Assemble the training image's build context and write it to stdout as a tar stream,
# ready for `docker build -`.
#
# usage: make-context.sh --variant cpu|gpu --ca-bundle FILE
#                        [--requirements FILE] [--wheelhouse DIR] > context.tar
#
# The context: Dockerfile (Dockerfile.<variant> of this directory), ca-bundle.crt,
# requirements.txt (empty when not given), wheelhouse/ (empty when not given) and dslab/
# (assets/container/* and assets/train_tiny.py, copied to /opt/dslab in the image).
set -euo pipefail

usage() { echo "usage: $0 --variant cpu|gpu --ca-bundle FILE [--requirements FILE] [--wheelhouse DIR]" >&2; exit 2; }

variant="" ca_bundle="" requirements="" wheelhouse=""
while [ $# -gt 0 ]; do
  case "$1" in
    --variant) variant="${2:?}"; shift 2 ;;
    --ca-bundle) ca_bundle="${2:?}"; shift 2 ;;
    --requirements) requirements="${2:?}"; shift 2 ;;
    --wheelhouse) wheelhouse="${2:?}"; shift 2 ;;
    *) usage ;;
  esac
done
case "$variant" in cpu|gpu) ;; *) echo "make-context.sh: --variant must be cpu or gpu, got '$variant'" >&2; exit 2 ;; esac
[ -f "$ca_bundle" ] || { echo "make-context.sh: --ca-bundle '$ca_bundle' is not a file" >&2; exit 2; }
[ -z "$requirements" ] || [ -f "$requirements" ] || { echo "make-context.sh: --requirements '$requirements' is not a file" >&2; exit 2; }
[ -z "$wheelhouse" ] || [ -d "$wheelhouse" ] || { echo "make-context.sh: --wheelhouse '$wheelhouse' is not a directory" >&2; exit 2; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
assets="$(dirname "$here")"
ctx="$(mktemp -d)"
chmod 0755 "$ctx"
trap 'rm -rf "$ctx"' EXIT

cp "$here/Dockerfile.$variant" "$ctx/Dockerfile"
cp "$ca_bundle" "$ctx/ca-bundle.crt"
if [ -n "$requirements" ]; then cp "$requirements" "$ctx/requirements.txt"; else : > "$ctx/requirements.txt"; fi
mkdir "$ctx/wheelhouse" "$ctx/dslab"
if [ -n "$wheelhouse" ]; then cp -R "$wheelhouse/." "$ctx/wheelhouse/"; fi
cp "$assets"/container/* "$assets/train_tiny.py" "$ctx/dslab/"

# Fixed owner and mtimes keep the stream identical for identical inputs.
tar -C "$ctx" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -c .
