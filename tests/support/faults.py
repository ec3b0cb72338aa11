"""What the fault modules (tests/faults/) share: the stack they start from, the lab's two hosts
as the stack sees them, and what they measure and print. Each module runs its scenarios on a
stack of its own, in file order, each scenario leaving the lab as the stack says; the timings
of every module are merged into bench/out/faults.json (and printed at the module's end)."""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Iterator

import pytest
import yaml

from components.render.results import default_results_dir
from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy
from tests.support.sim_hosts import LAB, host_fault, hosts_up, inspect, keep_build_cache, on_host, reuse_built_images

HOSTS = ("server1", "server2")
CONTAINER = "llm"
NETWORK = "test-net"
REPORT = REPO / "bench" / "out" / "faults.json"

TIMINGS: dict[str, dict[str, float]] = {}
"""Scenario -> what was timed (seconds): merged into REPORT at the end of each module."""
LOGS: list[str] = []
"""Everything pulumi printed, for the secrets checks."""

PREFLIGHT_SIZES_MB = (1.0, 16.0)
"""The fault modules' preflight all-reduce sizes: the default's last, 64 MiB, moves four times the
data for a figure these modules only report, through strongSwan's userspace ESP in the
encryption module; the program's module keeps the default."""


def fault_stack(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    others: tuple[str, ...] = (),
    converged: bool = False,
    bastion: bool = False,
    hosts: tuple[str, ...] = HOSTS,
    reuse_on: tuple[str, ...] | None = None,
    preflight: bool = False,
) -> Iterator[Stack]:
    """Stack NAME of a project copy for this lab (OTHERS: more stacks' files in it), from
    nothing, or CONVERGED (after a first `up`); the lab behind its BASTION when asked (the
    stack reaches the hosts through it), with HOSTS up (the stack names the first two); the
    image an earlier module built tagged back on REUSE_ON (default: every host); the
    PREFLIGHT before each run only when asked (at PREFLIGHT_SIZES_MB); afterwards the hosts
    powered and connected, the stack destroyed and the timings reported.

    The preflight is off unless the module looks at it: it is a whole deepspeed launch of its
    own before every new run (~10 CPU-s and ~8 s on an idle 2-core machine, several times that
    beside other labs), and the program's, host mode's, LLaMA-Factory's, encryption's and run
    lifecycle's modules prove it."""
    ensure_toolchain()
    hosts_up(len(hosts), bastion=bastion)
    for host in hosts:  # an earlier session's unfinished runs of this stack would be resumed
        on_host(host, "rm", "-rf", default_results_dir("dslab", name))
    work = tmp_path_factory.mktemp(f"{name}-e2e")
    cli = PulumiCli(project_dir=project_copy(work, (name, *others)), state_dir=work / "state")
    cli.run("stack", "init", name)
    stack = Stack(cli, name)
    if bastion:
        stack.merge_config({"operator": {"jump_host": {"address": LAB.bastion.address}}})
    if preflight:
        stack.merge_config({"training": {"preflight": {"sizes_mb": list(PREFLIGHT_SIZES_MB)}}})
    else:
        stack.merge_config({"training": {"preflight": {"enabled": False}}})
    reuse_built_images(cli.project_dir, name, hosts if reuse_on is None else reuse_on)
    if converged:
        up(stack)
        keep_build_cache()
    yield stack
    # Whatever a failed scenario left: hosts powered and connected, then nothing of ours.
    for host in hosts:
        host_fault("network-restore", host, check=False)
    hosts_up(len(hosts), bastion=bastion)
    cli.run("destroy", "--yes", "--stack", name, check=False)
    report_timings()


def report_timings() -> None:
    """Merges this process's timings into REPORT (modules on other labs write theirs beside)."""
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with open(REPORT.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        merged = json.loads(REPORT.read_text()) if REPORT.exists() else {}
        merged.update(TIMINGS)
        REPORT.write_text(json.dumps(merged, indent=2) + "\n")
    print("\nfault scenarios (seconds):\n" + json.dumps(TIMINGS, indent=2))


def timed(scenario: str, what: str, started: float) -> float:
    took = round(time.monotonic() - started, 1)
    TIMINGS.setdefault(scenario, {})[what] = took
    return took


def up(stack: Stack) -> str:
    output = stack.pulumi("up", "--yes")
    LOGS.append(output)
    return output


def attempt(stack: Stack, *args: str) -> tuple[int, str]:
    code, output = stack.attempt(*args)
    LOGS.append(output)
    return code, output


def container(host: str) -> dict[str, object]:
    found = inspect(host, "container", CONTAINER)
    assert found is not None, f"{host} has its container"
    return found


def in_container(host: str, *command: str, check: bool = True) -> str:
    return on_host(host, "docker", "exec", CONTAINER, *command, check=check)


def manager_logs_in_to(host: str) -> bool:
    """The manager's container logs in to HOST's with strict host keys, as pdsh does."""
    return in_container("server1", "ssh", "-o", "StrictHostKeyChecking=yes", host, "hostname", check=False).strip() == host


def training_log() -> str:
    return in_container("server1", "cat", "/opt/dslab/run/train.log")


def assert_trained_across_both(stack: Stack) -> None:
    log = training_log()
    assert "dslab: world_size=2" in log and "dslab: finished" in log, log[-2000:]
    assert stack.outputs()["training_status"] == "succeeded"



BACKGROUND_PAUSE_S = 2.0
"""Rest after each step of a run that only has to be going while a module does other things
(returning hosts' whole module, the bounds' hung engine): a step of train_tiny costs each rank
20-30 ms of CPU here, so at 0.2 s of rest a 2-rank run takes about a fifth of a core for as long
as it goes, at 2 s about a thirtieth; the suite is bound by CPU on 2 cores."""


def set_long_run(stack: Stack, steps: int, pause_s: float = 0.2) -> None:
    """The stack's training set to STEPS steps of train_tiny, each followed by PAUSE_S seconds
    of rest: a run that goes on for long without taking the CPU the labs beside it need (0.2 s:
    one that must also get somewhere, e.g. to a checkpoint, within a minute or two). (In the
    stack file: `pulumi config set` takes `--step_pause_s` for a flag of its own.)"""
    path = stack.cli.project_dir / f"Pulumi.{stack.name}.yaml"
    workload = dict(yaml.safe_load(path.read_text(encoding="utf-8"))["config"]["dslab:training"]["workload"])
    workload["args"] = ["--steps", str(steps), "--step_pause_s", str(pause_s)]
    stack.merge_config({"training": {"workload": workload}})


def locks_left(stack: Stack) -> list[str]:
    """The stack locks a pulumi run left in the state directory (one killed, not one that failed)."""
    return [lock.name for lock in (stack.cli.state_dir / ".pulumi" / "locks").rglob("*.json")]


def set_hosts(stack: Stack, hosts: list[str]) -> None:
    """The stack's host list in this order (server1 the manager), with the batch that fits it."""
    training = stack.config_value("training")
    training["deepspeed"]["train_batch_size"] = 4 * len(hosts)
    stack.merge_config(
        {
            "hosts": [
                {"name": host, "address": LAB.address(host), "role": "manager" if host == "server1" else "worker",
                 "ssh_user": "root", "gpus": "none"}
                for host in hosts
            ],
            "training": training,
        }
    )  # fmt: skip
