#!/usr/bin/env bash
# Run a training command (normally `deepspeed --hostfile ...`) in the manager container,
# keeping a log and a status file. Started with `docker exec`.
#
# usage: run-deepspeed.sh --workdir DIR --log FILE --status FILE [--background] -- ARGV...
#
#   --workdir DIR   the command's working directory; DeepSpeed's launcher reads
#                   DIR/.deepspeed_env (and ~/.deepspeed_env) and pdsh starts every rank
#                   in the same path on its host, so DIR must exist in every container
#   --log FILE      the command's stdout and stderr (truncated at start); in the
#                   foreground they also go to this script's stdout
#   --status FILE   one line: "running", then "succeeded" or "failed rc=N"
#   --background    detach (setsid + nohup) and return at once, once the run holds its
#                   lock and the status says running; prints "pid=N"
#
# Relative --log/--status paths are taken from --workdir. Exit status: the command's in
# the foreground; 0 once started in the background; 64 for bad usage; 75 when another run
# with the same status file is still going (a flock on STATUS.lock tells).
set -euo pipefail

usage() {
  echo "usage: run-deepspeed.sh --workdir DIR --log FILE --status FILE [--background] -- ARGV..." >&2
  exit 64
}

workdir="" log="" status="" background=0
while [ $# -gt 0 ]; do
  case "$1" in
    --workdir) [ $# -ge 2 ] || usage; workdir="$2"; shift 2 ;;
    --log) [ $# -ge 2 ] || usage; log="$2"; shift 2 ;;
    --status) [ $# -ge 2 ] || usage; status="$2"; shift 2 ;;
    --background) background=1; shift ;;
    --) shift; break ;;
    *) echo "run-deepspeed.sh: unknown option '$1'" >&2; usage ;;
  esac
done
if [ -z "$workdir" ] || [ -z "$log" ] || [ -z "$status" ] || [ $# -eq 0 ]; then usage; fi
[ -d "$workdir" ] || { echo "run-deepspeed.sh: --workdir '$workdir' is not a directory" >&2; exit 64; }

cd "$workdir"
workdir="$(pwd -P)"
case "$log" in /*) ;; *) log="$workdir/$log" ;; esac
case "$status" in /*) ;; *) status="$workdir/$status" ;; esac
mkdir -p "$(dirname "$log")" "$(dirname "$status")"
lock="$status.lock"

for name in hostfile .deepspeed_env; do
  [ -f "$name" ] || echo "run-deepspeed.sh: warning: no $name in $workdir" >&2
done

if [ "$background" = 1 ]; then
  # Fail early, before detaching, when a run already holds the lock.
  exec 9>>"$lock"
  flock -n 9 || { echo "run-deepspeed.sh: another run holds $lock ($(cat "$status" 2>/dev/null))" >&2; exit 75; }
  exec 9>&-
  rm -f "$status"
  setsid nohup "$0" --workdir "$workdir" --log "$log" --status "$status" -- "$@" \
    </dev/null >/dev/null 2>&1 &
  child=$!
  for _ in $(seq 1 100); do
    if [ -s "$status" ]; then echo "pid=$child"; exit 0; fi
    if ! kill -0 "$child" 2>/dev/null; then
      echo "run-deepspeed.sh: the detached run ended at once: $(cat "$status" 2>/dev/null)" >&2
      exit 1
    fi
    sleep 0.1
  done
  echo "run-deepspeed.sh: the detached run (pid $child) did not start within 10 s" >&2
  exit 1
fi

exec 9>>"$lock"
flock -n 9 || { echo "run-deepspeed.sh: another run holds $lock ($(cat "$status" 2>/dev/null))" >&2; exit 75; }

write_status() { echo "$1" > "$status.tmp" && mv "$status.tmp" "$status"; }

: > "$log"
write_status running
# The command must not inherit the lock: a rank left behind would keep it held.
set +e
"$@" 9>&- 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -eq 0 ]; then write_status succeeded; else write_status "failed rc=$rc"; fi
exit "$rc"
