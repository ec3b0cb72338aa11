"""What a `pulumi preview` and a `pulumi up` that change nothing cost on a converged simulated
2-host lab: their time, and how many ssh processes the operator's side starts (the Docker
providers' connections, the hosts' probe, the local steps; pulumi-command's remote steps dial in
Go and are not counted).

    python -m bench.noop_cost [--runs 3] [--lab 3]

Prints each one's median time over the runs and the ssh count; the stack is made first (from
nothing) and destroyed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

COUNTER = Path(__file__).resolve().parent / "count-ssh.sh"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lab", type=int, default=3)
    args = parser.parse_args()
    os.environ["DSLAB_LAB"] = str(args.lab)  # before the lab's helpers read it

    from harness.pulumi_cli import PulumiCli, ensure_toolchain
    from harness.stack_project import Stack, project_copy
    from tests.support.sim_hosts import hosts_up

    ensure_toolchain()
    hosts_up(2)
    work = Path(tempfile.mkdtemp(prefix="dslab-noop-cost-"))
    wrapper = work / "bin"
    wrapper.mkdir()
    shutil.copy(COUNTER, wrapper / "ssh")
    (wrapper / "ssh").chmod(0o755)
    log = work / "ssh.log"
    os.environ["DSLAB_SSH_LOG"] = str(log)
    os.environ["PATH"] = f"{wrapper}:{os.environ['PATH']}"
    cli = PulumiCli(project_dir=project_copy(work, ("noop",)), state_dir=work / "state")
    cli.run("stack", "init", "noop")
    stack = Stack(cli, "noop")
    try:
        started = time.monotonic()
        stack.pulumi("up", "--yes")
        print(f"up from nothing: {time.monotonic() - started:.1f} s", flush=True)
        for command in (("preview", "--expect-no-changes"), ("up", "--yes", "--expect-no-changes")):
            seconds, started_ssh = [], []
            for _ in range(args.runs):
                log.write_text("")
                started = time.monotonic()
                stack.pulumi(*command)
                seconds.append(time.monotonic() - started)
                started_ssh.append(len(log.read_text().splitlines()))
            print(
                f"no-op {command[0]}: median {statistics.median(seconds):.1f} s "
                f"({', '.join(f'{s:.1f}' for s in seconds)}); ssh processes started: {started_ssh}",
                flush=True,
            )
    finally:
        stack.pulumi("destroy", "--yes", check=False)


if __name__ == "__main__":
    main()
