"""What a `pulumi preview` and a `pulumi up` that change nothing cost on a converged simulated
lab: their time, how many ssh processes the operator's side starts (the Docker providers'
connections, their hung-engine watches, the hosts' probe, the local steps; pulumi-command's
remote steps dial in Go and are not counted, and a no-op runs none of them), how many ssh logins
each host's sshd accepts, and how many Docker API calls each host's engine answers (its round
trips over the providers' connections), each without and with connection reuse.

    python -m bench.noop_cost [--hosts 8] [--runs 3] [--lab 3] [--link 100mbit --operator-link 50mbit]

Reuse is measured without changing the program: the `ssh` first on PATH (bench/count-ssh.sh)
adds an OpenSSH ControlMaster per host (ControlPersist 60 s) to every ssh the operator's side
starts, so the probe, the providers' connections and the watches share one login per host.
Runs alternate between the two so that drift in the machine's speed hits both. The stack is made
first (from nothing; the image relayed, training off beyond 2 hosts) and destroyed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

COUNTER = Path(__file__).resolve().parent / "count-ssh.sh"
COMMANDS = {"preview": ("preview", "--expect-no-changes"), "up": ("up", "--yes", "--expect-no-changes")}
MODES = ("no reuse", "reuse")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--lab", type=int, default=3)
    parser.add_argument("--link", default="", help="each host's link rate, e.g. 100mbit (none: unlimited)")
    parser.add_argument("--operator-link", default="", help="the operator's link rate, e.g. 50mbit")
    args = parser.parse_args()
    os.environ["DSLAB_LAB"] = str(args.lab)  # before the lab's helpers read it

    from harness.pulumi_cli import PulumiCli, ensure_toolchain
    from harness.stack_project import Stack, project_copy
    from simhosts import lifecycle
    from simhosts.links import LinkRates
    from simhosts.plan import lab_from_env

    lab = lab_from_env()
    ensure_toolchain()
    rates = LinkRates(host=args.link or None, operator=args.operator_link or None)
    hosts = lifecycle.up(lab, args.hosts, lambda message: print(f"simhosts: {message}", flush=True), rates=rates)
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
    stack.merge_config(lab_of(hosts, stack))
    print(
        f"{args.hosts} hosts on lab {lab.id}; links: {args.link or 'unlimited'}, operator {args.operator_link or 'unlimited'}"
    )
    try:
        started = time.monotonic()
        stack.pulumi("up", "--yes")
        print(f"up from nothing: {time.monotonic() - started:.1f} s", flush=True)
        with engines_counting(hosts):
            for name, command in COMMANDS.items():
                measure(name, command, stack, hosts, log, work / "mux", args.runs)
    finally:
        stack.pulumi("destroy", "--yes", check=False)
        for host in hosts:
            docker_exec(host.container, "sh", "-c", "rm -f /etc/docker/daemon.json; kill -HUP $(cat /run/docker.pid)")


def lab_of(hosts: list[Any], stack: Any) -> dict[str, Any]:
    """The dev stack widened to HOSTS: one manager, the rest workers; the image relayed (the
    quickest cold distribution at 8 hosts); beyond 2 hosts training is not launched (a no-op
    runs none, and 8 CPU ranks would only lengthen the cold up), its batch widened to the ranks."""
    template = stack.config_value("hosts")[0]
    change: dict[str, Any] = {
        "hosts": [{**template, "name": host.name, "address": host.address, "role": host.role} for host in hosts],
        "image": {"distribution": "relay"},
    }
    if len(hosts) > 2:
        deepspeed = stack.config_value("training")["deepspeed"]
        batch = deepspeed["train_micro_batch_size_per_gpu"] * deepspeed["gradient_accumulation_steps"] * len(hosts)
        change["training"] = {"launch": False, "deepspeed": {**deepspeed, "train_batch_size": batch}}
    return change


def measure(name: str, command: tuple[str, ...], stack: Any, hosts: list[Any], log: Path, mux: Path, runs: int) -> None:
    """RUNS of COMMAND in each mode, alternating; prints each mode's medians."""
    figures: dict[str, dict[str, list[float]]] = {mode: {"s": [], "ssh": [], "logins": [], "api": []} for mode in MODES}
    for _ in range(runs):
        for mode in MODES:
            if mode == "reuse":
                mux.mkdir(exist_ok=True)
                os.environ["DSLAB_SSH_MUX"] = str(mux)
            else:
                os.environ.pop("DSLAB_SSH_MUX", None)
            log.write_text("")
            before = {host.name: counts(host) for host in hosts}
            started = time.monotonic()
            stack.pulumi(*command)
            seconds = time.monotonic() - started
            time.sleep(2)  # the watches' own logins start 1 s after their connection
            after = {host.name: counts(host) for host in hosts}
            figures[mode]["s"].append(seconds)
            figures[mode]["ssh"].append(len(log.read_text().splitlines()) / len(hosts))
            figures[mode]["logins"].append(statistics.mean(after[h][0] - before[h][0] for h in after))
            figures[mode]["api"].append(statistics.mean(after[h][1] - before[h][1] for h in after))
            if mode == "reuse":
                stop_masters(mux)
    for mode in MODES:
        got = figures[mode]
        print(
            f"no-op {name}, {mode}: median {statistics.median(got['s']):.1f} s "
            f"({', '.join(f'{s:.1f}' for s in got['s'])}); per host: ssh processes {statistics.median(got['ssh']):.1f}, "
            f"logins {statistics.median(got['logins']):.1f}, engine API calls {statistics.median(got['api']):.1f}",
            flush=True,
        )
    ratio = statistics.median(figures["reuse"]["s"]) / statistics.median(figures["no reuse"]["s"])
    print(f"no-op {name}: reuse/no reuse {ratio:.2f}", flush=True)


def stop_masters(mux: Path) -> None:
    """Ends every master of a reuse run, so that the next run of that mode logs in afresh."""
    for socket in mux.iterdir():
        subprocess.run(
            ["/usr/bin/ssh", "-o", f"ControlPath={socket}", "-O", "exit", "x"], capture_output=True, check=False
        )


def counts(host: Any) -> tuple[int, int]:
    """The logins the host's sshd has accepted and the API calls its engine has logged so far."""
    sshd = subprocess.run(["docker", "logs", host.container], capture_output=True, text=True, check=True)
    logins = (sshd.stdout + sshd.stderr).count("Accepted publickey")
    api = docker_exec(host.container, "sh", "-c", "grep -c 'Calling [A-Z]* /' /var/log/dockerd.log || true")
    return logins, int(api or 0)


@contextmanager
def engines_counting(hosts: list[Any]) -> Iterator[None]:
    """Each host's engine logs every API call it answers (debug, reloaded live by SIGHUP)."""
    for host in hosts:
        docker_exec(
            host.container,
            "sh",
            "-c",
            "echo '{\"debug\": true}' >/etc/docker/daemon.json; kill -HUP $(cat /run/docker.pid)",
        )
    time.sleep(1)
    yield


def docker_exec(container: str, *argv: str) -> str:
    return subprocess.run(
        ["docker", "exec", container, *argv], capture_output=True, text=True, check=True
    ).stdout.strip()


if __name__ == "__main__":
    main()
