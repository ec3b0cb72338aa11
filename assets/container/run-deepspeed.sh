#!/usr/bin/env bash
# Run a training command (normally `deepspeed --hostfile ...`) in the manager container,
# keeping a log and a status file, and stopping it when it can no longer finish. Started
# with `docker exec`.
#
# usage: run-deepspeed.sh --workdir DIR --log FILE --status FILE [--record DIR] [--hostfile FILE]
#                         [--stall-timeout S] [--background] -- ARGV...
#
#   --workdir DIR        the command's working directory; DeepSpeed's launcher reads
#                        DIR/.deepspeed_env (and ~/.deepspeed_env) and pdsh starts every rank
#                        in the same path on its host, so DIR must exist in every container
#   --log FILE           the command's stdout and stderr (truncated at start); in the
#                        foreground they also go to this script's stdout
#   --status FILE        one line: "running", then "succeeded", "failed ..." or "stopped ..."
#                        (a TERM or INT stops the run: its ranks, pdsh, the launcher)
#   --record DIR         the run's own directory (its results): the status is written there
#                        too, and at the end the log is appended to its train.log and, when
#                        it succeeded, `finished` holds the time; each file whole (written
#                        aside, then renamed), by the run itself in either mode
#   --hostfile FILE      the run's nodes: ranks an earlier run left behind on them are
#                        stopped first, and a stopped run names the nodes it cannot reach
#   --stall-timeout S    stop the run when its log stays silent for S seconds (0: never,
#                        the default)
#   --background         detach (setsid + nohup) and return at once, once the run holds its
#                        lock and the status says running; prints "pid=N"
#
# The run is also stopped as soon as pdsh loses a node (ssh exit 255): the other ranks
# would wait for it in their next collective for as long as the backend's timeout.
#
# Relative --log/--status/--hostfile paths are taken from --workdir. Exit status: the
# command's in the foreground; 0 once started in the background; 64 for bad usage; 75 when
# another run with the same status file is still going (a flock on STATUS.lock tells);
# 124 when a node did not answer ssh within 60 s (DSLAB_REACH_TIMEOUT) before the start, or
# the run was stopped because a node was lost or the log stalled.
set -euo pipefail

usage() {
  echo "usage: run-deepspeed.sh --workdir DIR --log FILE --status FILE [--record DIR] [--hostfile FILE] [--stall-timeout S] [--background] -- ARGV..." >&2
  exit 64
}

workdir="" log="" status="" record="" hostfile="" stall_timeout=0 background=0
while [ $# -gt 0 ]; do
  case "$1" in
    --workdir) [ $# -ge 2 ] || usage; workdir="$2"; shift 2 ;;
    --log) [ $# -ge 2 ] || usage; log="$2"; shift 2 ;;
    --status) [ $# -ge 2 ] || usage; status="$2"; shift 2 ;;
    --record) [ $# -ge 2 ] || usage; record="$2"; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || usage; hostfile="$2"; shift 2 ;;
    --stall-timeout) [ $# -ge 2 ] || usage; stall_timeout="$2"; shift 2 ;;
    --background) background=1; shift ;;
    --) shift; break ;;
    *) echo "run-deepspeed.sh: unknown option '$1'" >&2; usage ;;
  esac
done
if [ -z "$workdir" ] || [ -z "$log" ] || [ -z "$status" ] || [ $# -eq 0 ]; then usage; fi
case "$stall_timeout" in ''|*[!0-9]*) echo "run-deepspeed.sh: --stall-timeout takes whole seconds, got '$stall_timeout'" >&2; usage ;; esac
[ -d "$workdir" ] || { echo "run-deepspeed.sh: --workdir '$workdir' is not a directory" >&2; exit 64; }

cd "$workdir"
workdir="$(pwd -P)"
case "$log" in /*) ;; *) log="$workdir/$log" ;; esac
case "$status" in /*) ;; *) status="$workdir/$status" ;; esac
case "$hostfile" in ''|/*) ;; *) hostfile="$workdir/$hostfile" ;; esac
case "$record" in ''|/*) ;; *) record="$workdir/$record" ;; esac
mkdir -p "$(dirname "$log")" "$(dirname "$status")" ${record:+"$record"}
lock="$status.lock"

# Where the launcher looks: the hostfile given (or ./hostfile), .deepspeed_env in ~ or here.
[ -f "${hostfile:-hostfile}" ] || echo "run-deepspeed.sh: warning: no hostfile at ${hostfile:-$workdir/hostfile}" >&2
[ -f "$HOME/.deepspeed_env" ] || [ -f .deepspeed_env ] \
  || echo "run-deepspeed.sh: warning: no .deepspeed_env in $HOME or $workdir" >&2

if [ "$background" = 1 ]; then
  # Fail early, before detaching, when a run already holds the lock.
  exec 9>>"$lock"
  flock -n 9 || { echo "run-deepspeed.sh: another run holds $lock ($(cat "$status" 2>/dev/null))" >&2; exit 75; }
  exec 9>&-
  rm -f "$status"
  setsid nohup "$0" --workdir "$workdir" --log "$log" --status "$status" ${record:+--record "$record"} \
    ${hostfile:+--hostfile "$hostfile"} --stall-timeout "$stall_timeout" -- "$@" \
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

# How long every node may take to answer ssh before the run starts.
REACH_TIMEOUT=${DSLAB_REACH_TIMEOUT:-60}

# whole_file FILE LINE: FILE holds LINE, never half of it (written aside, then renamed).
whole_file() { echo "$2" >"$1.tmp" && mv "$1.tmp" "$1"; }
# The status here, and in the run's directory, where the run's end outlives this container:
# at the end, with the log appended to the directory's train.log (a resumed run's attempts
# one after the other).
write_status() {
  whole_file "$status" "$1"
  [ -n "$record" ] || return 0
  if [ "$1" != running ]; then cat "$log" >>"$record/train.log" 2>/dev/null || true; fi
  whole_file "$record/status" "$1"
  if [ "$1" = succeeded ]; then whole_file "$record/finished" "$(date -u +%FT%TZ)"; fi
}

HOSTFILE=$hostfile
# shellcheck source=nodes.sh
. "$(dirname "$(readlink -f "$0")")/nodes.sh"
# shellcheck source=deepspeed-env.sh
. "$(dirname "$(readlink -f "$0")")/deepspeed-env.sh"

# On every node (in parallel): stop DeepSpeed launchers and ranks still running. The
# bracketed patterns keep pkill from matching the shell that runs it.
stop_ranks_everywhere() {
  local node
  for node in $(nodes); do
    ssh "$node" "pkill -TERM -f 'deepspeed[.]launcher[.]launch'; pkill -TERM -f -- '[-]-local_rank'; true" \
      </dev/null >/dev/null 2>&1 &
  done
  wait
}

# Nodes pdsh lost: "pdsh@manager: server2: ssh exited with exit code 255".
lost_nodes() {
  { grep -a 'ssh exited with exit code 255' "$log" || true; } | awk -F': ' '{print $2}' | sort -u | tr '\n' ' ' | sed 's/ $//'
}

: > "$log"
if ! down=$(wait_for_nodes "$REACH_TIMEOUT"); then
  message="not answering ssh from $(hostname) after ${REACH_TIMEOUT}s: $down"
  echo "run-deepspeed.sh: $message" | tee -a "$log" >&2
  write_status "failed: $message"
  exit 124
fi
stop_ranks_everywhere
write_status running
# The launcher hands .deepspeed_env only to ranks it starts through pdsh (several hosts);
# the ranks it starts itself (one host) get its environment, so it gets the file's too.
export_deepspeed_env
# Its own process group, so that a stopped run takes pdsh and the local ranks with it.
# The command must not inherit the lock: a rank left behind would keep it held.
setsid "$@" 9>&- >>"$log" 2>&1 </dev/null &
run_pid=$!
tail -n +1 -f -s 0.1 --pid "$run_pid" "$log" 2>/dev/null &
tail_pid=$!

# Stopped (the next run, `pulumi destroy`): the run's whole process group goes, and the run
# says so itself, so that nobody takes it for one still going.
# shellcheck disable=SC2317  # run by the traps
stopped() {
  trap - TERM INT
  kill -TERM -- "-$run_pid" 2>/dev/null || true
  for _ in $(seq 1 10); do kill -0 "$run_pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$run_pid" 2>/dev/null || true
  stop_ranks_everywhere
  write_status "stopped: by $1"
  exit 143
}
trap 'stopped TERM' TERM
trap 'stopped INT' INT

# A second between looks at the run, cut short when the run ends (a finished run returns at once).
pause_while_running() {
  local _
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    kill -0 "$run_pid" 2>/dev/null || return 0
    sleep 0.1
  done
}

reason="" last_size=-1 quiet_since=$SECONDS
while kill -0 "$run_pid" 2>/dev/null; do
  pause_while_running
  lost=$(lost_nodes)
  if [ -n "$lost" ]; then
    reason="lost contact with $lost (pdsh: ssh exited with exit code 255)"
    break
  fi
  size=$(stat -c %s "$log")
  if [ "$size" != "$last_size" ]; then
    last_size=$size quiet_since=$SECONDS
  elif [ "$stall_timeout" -gt 0 ] && [ $((SECONDS - quiet_since)) -ge "$stall_timeout" ]; then
    reason="no output for ${stall_timeout}s"
    break
  fi
done

if [ -n "$reason" ]; then
  kill -TERM -- "-$run_pid" 2>/dev/null || true
  for _ in $(seq 1 10); do kill -0 "$run_pid" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$run_pid" 2>/dev/null || true
  wait "$run_pid" 2>/dev/null || true
  wait "$tail_pid" 2>/dev/null || true
  down=$(unreachable_nodes)
  stop_ranks_everywhere
  message="stopped the run: $reason${down:+; not answering ssh from $(hostname): $down}"
  echo "run-deepspeed.sh: $message" | tee -a "$log" >&2
  write_status "failed: $message"
  exit 124
fi

set +e
wait "$run_pid"
rc=$?
set -e
wait "$tail_pid" 2>/dev/null || true
if [ "$rc" -eq 0 ]; then write_status succeeded; else write_status "failed rc=$rc"; fi
exit "$rc"
