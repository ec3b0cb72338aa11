#!/usr/bin/env bash
# Build the training image from the context tar on stdin.
# Usage: image-build.sh TAG [--build-arg NAME=VALUE ...]
# Build output goes to stderr so the user sees it as it happens.
set -euo pipefail
tag=$1
shift
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present" >&2
  cat >/dev/null
else
  echo "building $tag" >&2
  if docker buildx version >/dev/null 2>&1; then
    docker buildx build --load --progress=plain "$@" -t "$tag" - >&2
  else
    # Engines without the buildx plugin (Debian's docker.io) still have the classic builder.
    DOCKER_BUILDKIT=0 docker build "$@" -t "$tag" - >&2
  fi
fi
printf '{"image_id": "%s"}\n' "$(docker image inspect "$tag" --format '{{.Id}}')"
