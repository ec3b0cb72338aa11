# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/step-mark.sh` (components/hosts/host_script.py).
#
# A step that keeps something inside a container leaves its mark beside it, in STEP_DIR, for
# the hosts' probe (host-facts.sh) to check on every preview and up:
#   STEP.gen     the generation the step last ran with ($DSLAB_GEN, which the probe gave)
#   STEP.sha256  the files it placed (mark_files), or
#   STEP.check   a command that exits 0 while what it made is intact (mark_check)
# The probe reports the generation while the step's work is intact and the next one when not,
# so the step's Command runs again exactly once per repair.
STEP_DIR=/opt/dslab/steps

# mark_files CONTAINER STEP PATH...: the files as they are now are what the step placed.
mark_files() {
  local container=$1 step=$2
  shift 2
  docker exec "$container" sh -c '
    step=$0 dir=$1 generation=$2
    shift 2
    mkdir -p "$dir" && cd "$dir" && sha256sum "$@" >"$step.sha256" && rm -f "$step.check" && echo "$generation" >"$step.gen"
  ' "$step" "$STEP_DIR" "${DSLAB_GEN:-0}" "$@"
}

# mark_check CONTAINER STEP COMMAND: COMMAND (run by sh in the container) checks the step.
mark_check() {
  docker exec "$1" sh -c '
    step=$0 dir=$1 generation=$2 check=$3
    mkdir -p "$dir" && cd "$dir" && printf "%s\n" "$check" >"$step.check" && rm -f "$step.sha256" && echo "$generation" >"$step.gen"
  ' "$2" "$STEP_DIR" "${DSLAB_GEN:-0}" "$3"
}

# A step done on the host itself (the swarm membership, an image copy, the results directory)
# leaves only the generation it ran with, here, under a name of its own resource: whether its
# work is still there the probe reads from the host (host-facts.sh), never from a mark.
HOST_STEP_DIR=~/.dslab/steps  # ~: the passwd entry when HOME is unset

# mark_host STEP: STEP ran with generation $DSLAB_GEN.
mark_host() {
  mkdir -p "$HOST_STEP_DIR"
  echo "${DSLAB_GEN:-0}" >"$HOST_STEP_DIR/$1.gen"
  rm -f "$HOST_STEP_DIR/$1.check"  # an earlier release's check: the probe reads the host now
}

# unmark_host STEP: the step's work is undone.
unmark_host() {
  rm -f "$HOST_STEP_DIR/$1.check" "$HOST_STEP_DIR/$1.gen"
  rmdir "$HOST_STEP_DIR" "$(dirname "$HOST_STEP_DIR")" 2>/dev/null || true
}
