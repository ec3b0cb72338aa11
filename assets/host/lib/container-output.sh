# shellcheck shell=bash
# Included into host scripts by `# dslab:include host/lib/container-output.sh` (components/hosts/host_script.py).

# What `docker exec CONTAINER COMMAND...` prints, for a command that always prints something:
# docker exec can lose a short command's output and still exit 0 (moby/moby#27289), so an
# empty answer is asked again, twice at most. Fails with the command's exit code.
container_output() {
  local output attempt
  for attempt in 1 2 3; do
    output=$(docker exec "$@") || return
    [[ -n "$output" || $attempt -eq 3 ]] && break
  done
  printf '%s\n' "$output"
}
