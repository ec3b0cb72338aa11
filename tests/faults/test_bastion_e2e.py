"""The simulated 2-host lab behind a bastion (`simhosts up --bastion`: sshd only, this machine's
direct routes to the hosts dropped, so nothing passes by going around it), on a stack of its
own with `operator.jump_host` for server1 and server2's own `jump_host` (the same bastion, so
both ways of naming it are walked): `up` from nothing trains across both hosts; the command lines the
stack gives work when pasted; a training argument changed trains again; a container removed
behind our back is made again; the bastion's sshd stopped, a host not reachable from it and the
bastion's host key changed each fail `up` within a bound, naming the hop; a plain `up` after
each is back; `destroy` leaves nothing on the hosts.

The tests share the stack and run in file order.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest

from harness.stack_project import Stack
from tests.support.faults import (
    HOSTS,
    assert_trained_across_both,
    attempt,
    container,
    fault_stack,
    manager_logs_in_to,
    timed,
    up,
)
from tests.support.sim_hosts import LAB, STATE_DIR, host_fault, hosts_up, inspect, on_host

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "bastion"
BASTION = LAB.bastion.address
FAILS_WITHIN_S = 150
"""A hop that fails ends `up` within this (the probe's own bound is host_timeout + 30 s)."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    for stack in fault_stack(tmp_path_factory, STACK, bastion=True):
        hosts = stack.config_value("hosts")
        own = {"address": BASTION, "port": 22, "user": "root"}
        stack.merge_config(
            {"hosts": [{**host, "jump_host": own} if host["name"] == "server2" else host for host in hosts]}
        )
        yield stack
    hosts_up(len(HOSTS))  # the lab as the other modules know it: no bastion, direct routes back


def test_up_from_nothing_behind_the_bastion_trains_and_nothing_goes_around_it(stack: Stack) -> None:
    direct = subprocess.run(
        ["ssh", "-i", str(STATE_DIR / "operator_ed25519"), "-o", f"UserKnownHostsFile={STATE_DIR / 'known_hosts'}",
         "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5",
         f"root@{LAB.address('server1')}", "true"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert direct.returncode == 255, "this machine cannot reach server1 but through the bastion"
    started = time.monotonic()
    up(stack)
    timed("behind a bastion", "up from nothing", started)
    assert_trained_across_both(stack)
    outputs = stack.outputs()
    assert f"{BASTION} -W %h:%p" in str(outputs["shell_command"]), outputs["shell_command"]
    # The log command as a user pastes it, without following the log.
    pasted = str(outputs["training_log_command"]).replace(" -F ", " ")
    shown = subprocess.run(
        ["bash", "-c", pasted], capture_output=True, text=True, cwd=stack.cli.project_dir, timeout=60
    )
    assert shown.returncode == 0 and "dslab: finished" in shown.stdout, shown.stderr


def test_a_training_argument_changed_trains_again(stack: Stack) -> None:
    stack.merge_config({"training": {"workload": {"kind": "script", "entrypoint": "/opt/dslab/train_tiny.py",
                                                  "args": ["--steps", "24"], "output_dir_flag": "--output_dir"}}})  # fmt: skip
    output = up(stack)
    assert "this run's results" in output, output[-3000:]
    assert_trained_across_both(stack)


def test_a_container_removed_behind_our_back_is_made_again(stack: Stack) -> None:
    on_host("server2", "docker", "rm", "--force", "llm")
    up(stack)
    assert container("server2")["State"]["Running"]  # type: ignore[index]
    assert manager_logs_in_to("server2")


def failed_up(stack: Stack, scenario: str) -> str:
    started = time.monotonic()
    code, output = attempt(stack, "up", "--yes")
    took = timed(scenario, "up fails", started)
    assert code != 0, output[-3000:]
    assert took < FAILS_WITHIN_S, f"failed after {took} s"
    return output


def test_the_bastions_sshd_stopped_fails_up_naming_it_then_a_plain_up_is_back(stack: Stack) -> None:
    host_fault("sshd-stop", "bastion")
    try:
        output = failed_up(stack, "bastion's sshd stopped")
        assert f"the jump host {BASTION}:22 (operator.jump_host)" in output, output[-3000:]
        code, output = attempt(stack, "up", "--yes", "--refresh=false")
        assert code != 0
        for setting in ("operator.jump_host", "server2's jump_host"):
            assert f"cannot reach the jump host {BASTION}:22 ({setting}) over SSH" in output, output[-3000:]
    finally:
        host_fault("sshd-start", "bastion")
    up(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_a_host_the_bastion_cannot_reach_is_named_with_the_hop(stack: Stack) -> None:
    host_fault("sshd-stop", "server2")
    try:
        output = failed_up(stack, "server2 not reachable from the bastion")
        assert f"cannot reach {LAB.address('server2')}:22 from the jump host {BASTION}:22" in output, output[-3000:]
    finally:
        host_fault("sshd-start", "server2")
    up(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_the_bastions_host_key_changed_is_refused_with_how_to_accept_it(stack: Stack) -> None:
    host_fault("host-rekey", "bastion")
    code, output = attempt(stack, "up", "--yes", "--refresh=false")
    assert code != 0
    assert f"the SSH host key of the jump host (operator.jump_host) ({BASTION}:22) is not the one" in output, output[
        -3000:
    ]
    hosts_up(len(HOSTS), bastion=True)  # the operator checks the new key and accepts it
    up(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_destroy_leaves_nothing_on_the_hosts(stack: Stack) -> None:
    stack.pulumi("destroy", "--yes")
    for host in HOSTS:
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"no containers left on {host}"
        assert inspect(host, "network", "test-net") is None, f"no overlay network left on {host}"
        state = on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip()
        assert state == "inactive", f"{host} left the swarm"
    assert stack.cli.resource_count(STACK) == 0, "the stack is empty"
