#!/usr/bin/env bash
# Build the training image from the context tar on stdin.
# Usage: image-build.sh TAG [--build-arg NAME=VALUE ...]
# Progress on stderr: every 15 s (DSLAB_PROGRESS_SECONDS), the step the build is at and the
# time so far; the whole build output goes to a log on the host, whose last lines are shown
# when the build fails (a full build prints thousands).
set -euo pipefail
# dslab:include host/lib/ticker.sh
tag=$1
shift
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "image $tag already present" >&2
  cat >/dev/null
else
  log=$(mktemp "${TMPDIR:-/tmp}/dslab-image-build.XXXXXX")
  echo "building $tag (full output: $log)" >&2
  # A step's first line: "Step 3/12 : RUN ..." (classic builder), "#7 [3/12] RUN ..." (buildx).
  steps='^(Step [0-9]+/[0-9]+ :|#[0-9]+ \[[^]]*[0-9]+/[0-9]+\])'
  build() {
    if docker buildx version >/dev/null 2>&1; then
      docker buildx build --load --progress=plain "$@"
    else
      # Engines without the buildx plugin (Debian's docker.io) still have the classic builder.
      DOCKER_BUILDKIT=0 docker build "$@"
    fi
  }
  started=$SECONDS
  step="$log.step"  # the step the build is at
  echo "starting" > "$step"
  at_step() { while IFS= read -r line; do printf '%s\n' "$line" > "$step"; done; }
  still_building() { echo "still building $tag: $(cut -c1-100 "$step") ($((SECONDS - started)) s)" >&2; }
  tick_while_running still_building
  if ! build "$@" -t "$tag" - 2>&1 | tee "$log" | { grep --line-buffered -E "$steps" || true; } | at_step; then
    rm -f "$step"
    echo "the build of $tag failed; the last lines of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
  echo "built $tag in $((SECONDS - started)) s" >&2
  rm -f "$log" "$step"
fi
printf '{"image_id": "%s"}\n' "$(docker image inspect "$tag" --format '{{.Id}}')"
