"""Faults, drift, intruders and secrets on the simulated 2-host lab: after each fault the
next `pulumi up` (or `destroy`) brings the world back to what the stack says, and nothing is
lost or exposed on the way. `make test-faults` runs these and the other fault modules
(test_encryption_e2e.py, test_bounds_e2e.py).

The scenarios share one stack and run in file order, each leaving the lab as the stack
says; the last one destroys it with a host down. How long each took is merged into
bench/out/faults.json (and printed with -s).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator

import pytest

from harness.stack_project import Stack
from tests.support.faults import (
    CONTAINER, HOSTS, LOGS, NETWORK, assert_trained_across_both, attempt, container, fault_stack,
    in_container, manager_logs_in_to, timed, training_log, up,
)  # fmt: skip
from tests.support.pulumi_output import diagnostics_of, first_error_naming
from tests.support.sim_hosts import STATE_DIR, address, host_fault, inspect, keep_build_cache, on_host, wait_for_sshd

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "faults"
INTRUDER = "intruder"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from fault_stack(tmp_path_factory, STACK, others=(INTRUDER,))


def test_a_worker_host_down_during_up_fails_naming_it_and_the_next_up_converges(stack: Stack) -> None:
    host_fault("host-stop", "server2")
    started = time.monotonic()
    code, output = attempt(stack, "up", "--yes")
    failed_after = timed("worker host down during up", "failed after", started)

    assert code != 0, "up must fail while a host is down"
    reach = rf"server2: .*cannot reach server2 \({re.escape(address('server2'))}:22\) over SSH"
    assert re.search(reach, output), output[-3000:]
    assert failed_after < 120, f"the failure came within a bounded time, not after {failed_after} s"
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    diagnostics = diagnostics_of(output)
    assert len(diagnostics.splitlines()) <= 15, f"the failure reads in a few lines:\n{diagnostics}"
    # The claims come first: the host that answered was not changed beyond its claim.
    assert on_host("server1", "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip() == "inactive"
    assert on_host("server1", "docker", "ps", "--all", "--quiet").strip() == "", "no container was started on server1"

    host_fault("host-start", "server2")
    started = time.monotonic()
    up(stack)
    timed("worker host down during up", "next up converged in", started)
    keep_build_cache()
    assert_trained_across_both(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_a_worker_whose_sshd_is_stopped_is_named_with_the_cause_in_the_first_error_line(stack: Stack) -> None:
    server2 = address("server2")
    host_fault("sshd-stop", "server2")
    try:
        code, output = attempt(stack, "up", "--yes")
    finally:
        host_fault("sshd-start", "server2")
    # Under the default refresh the first word is pulumi-docker's: its first error line about the
    # host carries ours (components/hosts/ssh_gate.py), not "Cannot connect to the Docker daemon".
    first = first_error_naming(output, "server2", server2)
    assert code != 0 and f"server2 ({server2}:22) refuses SSH connections: is sshd running on server2" in first, output[
        -3000:
    ]
    up(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_key_files_are_private_sshd_takes_keys_only_and_publishes_no_port(stack: Stack) -> None:
    operator_key = STATE_DIR / "operator_ed25519"
    assert operator_key.stat().st_mode & 0o777 == 0o600, "the operator's key file is 0600"
    for host in HOSTS:
        modes = in_container(
            host, "sh", "-c", "stat -c '%a %n' /root/.ssh/id_ed25519 /root/.ssh/authorized_keys /etc/ssh/ssh_host_*_key"
        )
        for line in modes.strip().splitlines():
            mode, path = line.split(" ", 1)
            assert mode == "600", f"{host}: {path} is {mode}, not 600"

        settings = dict(
            line.split(" ", 1) for line in in_container(host, "/usr/sbin/sshd", "-T").splitlines() if " " in line
        )
        assert settings["passwordauthentication"] == "no"
        assert settings["kbdinteractiveauthentication"] == "no"
        assert settings["permitrootlogin"] == "without-password", "root logs in by key only"

        config = container(host)
        host_config, network_settings = config["HostConfig"], config["NetworkSettings"]
        assert isinstance(host_config, dict) and isinstance(network_settings, dict)
        assert not host_config.get("PortBindings"), f"{host}: no port is published: {host_config.get('PortBindings')}"
        assert host_config.get("PublishAllPorts") is False
        assert not network_settings.get("Ports"), f"{host}: {network_settings.get('Ports')}"

    # A client without the key is turned away, and sshd offers it nothing but keys.
    denied = subprocess.run(
        ["ssh", "-F", str(STATE_DIR / "ssh_config"), "server1", "docker", "exec", CONTAINER, "ssh",
         "-o", "IdentityFile=/dev/null", "-o", "IdentitiesOnly=yes", "server2", "true"],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert denied.returncode != 0 and "Permission denied (publickey)" in denied.stderr, denied.stderr


def test_no_join_token_or_private_key_appears_in_state_outputs_or_logs(stack: Stack) -> None:
    secrets = {
        "the worker join token": on_host("server1", "docker", "swarm", "join-token", "--quiet", "worker").strip(),
        "the manager join token": on_host("server1", "docker", "swarm", "join-token", "--quiet", "manager").strip(),
        "the operator's key": (STATE_DIR / "operator_ed25519").read_text().splitlines()[1],
    }
    for host in HOSTS:
        secrets[f"{host}'s container key"] = in_container(host, "sed", "-n", "2p", "/root/.ssh/id_ed25519").strip()
        secrets[f"{host}'s sshd host key"] = in_container(
            host, "sed", "-n", "2p", "/etc/ssh/ssh_host_ed25519_key"
        ).strip()
    assert all(len(value) > 20 for value in secrets.values()), "the secrets were read"

    # Every file of the state backend (checkpoints, history, backups), not only the export.
    places = {str(path): path.read_text(errors="replace") for path in stack.cli.state_dir.rglob("*") if path.is_file()}
    places["the stack outputs"] = json.dumps(stack.outputs())
    places["pulumi's output"] = "\n".join(LOGS)
    for where, text in places.items():
        for what, value in secrets.items():
            assert value not in text, f"{what} is in {where}"


def test_a_stopped_container_is_seen_by_refresh_and_started_again_with_the_mesh(stack: Stack) -> None:
    before = container("server2")
    on_host("server2", "docker", "stop", CONTAINER)
    started = time.monotonic()
    refresh = stack.pulumi("refresh", "--yes")
    assert re.search(r"server2-llm\s+(delete|deleted)", refresh), refresh[-3000:]

    up(stack)
    timed("container stopped behind our back", "refresh + up", started)
    after = container("server2")
    state = after["State"]
    assert isinstance(state, dict) and state["Running"], "up started a container again"
    networks = after["NetworkSettings"]["Networks"]  # type: ignore[index]
    assert networks[NETWORK]["IPAddress"] == before["NetworkSettings"]["Networks"][NETWORK]["IPAddress"]  # type: ignore[index]
    assert manager_logs_in_to("server2"), "the mesh ran again: the container's keys are trusted"
    assert_trained_across_both(stack)
    stack.pulumi("preview", "--expect-no-changes")


RUN_FILES = (
    ("server1", "/opt/dslab/run/hostfile"),
    ("server2", "/opt/dslab/run/hostfile"),
    ("server2", "/opt/dslab/run/ds_config.json"),
    ("server1", "/root/.deepspeed_env"),
    ("server1", "/root/.ssh/known_hosts"),
    ("server2", "/root/.ssh/authorized_keys"),
)


def placed_files() -> dict[tuple[str, str], str]:
    return {(host, path): in_container(host, "cat", path) for host, path in RUN_FILES}


def test_files_changed_inside_containers_are_put_back_by_a_plain_up_without_training_again(stack: Stack) -> None:
    before = placed_files()
    log = training_log()
    in_container("server2", "rm", "/opt/dslab/run/hostfile")
    in_container("server2", "sh", "-c", "echo '{}' > /opt/dslab/run/ds_config.json")
    in_container("server1", "rm", "/root/.deepspeed_env")
    in_container("server2", "truncate", "--size=0", "/root/.ssh/authorized_keys")
    assert not manager_logs_in_to("server2"), "the cluster is broken: server2 trusts nobody"

    changed = stack.preview_changes()
    assert {name: step["op"] for name, step in changed.items()} == {
        "lab-training-server1-files": "update",
        "lab-training-server2-files": "update",
        "lab-mesh-server2-trust": "update",
        "lab-mesh-reach": "update",
    }, "put back in place, the ssh check run again, nothing else"
    started = time.monotonic()
    up(stack)
    timed("files changed inside containers", "plain up", started)
    assert placed_files() == before
    assert manager_logs_in_to("server2")
    assert training_log() == log, "putting files back is not a reason to train again"
    stack.pulumi("preview", "--expect-no-changes")


def test_keys_removed_inside_a_container_are_made_again_and_trusted_by_a_plain_up(stack: Stack) -> None:
    host_key = in_container("server2", "cat", "/etc/ssh/ssh_host_ed25519_key.pub")
    user_key = in_container("server2", "cat", "/root/.ssh/id_ed25519.pub")
    in_container("server2", "rm", "/root/.ssh/id_ed25519", "/etc/ssh/ssh_host_ed25519_key")
    started = time.monotonic()
    up(stack)
    timed("keys removed inside a container", "plain up", started)
    assert in_container("server2", "cat", "/etc/ssh/ssh_host_ed25519_key.pub") != host_key
    assert in_container("server2", "cat", "/root/.ssh/id_ed25519.pub") != user_key
    assert manager_logs_in_to("server2"), "the manager trusts server2's new host key, strictly"
    back = in_container("server2", "ssh", "-o", "StrictHostKeyChecking=yes", "server1", "hostname", check=False)
    assert back.strip() == "server1", "server1 takes server2's new user key"
    assert_trained_across_both(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_sshd_killed_inside_a_container_comes_back_and_a_plain_up_has_nothing_to_change(stack: Stack) -> None:
    before = container("server2")
    # sshd is the container's PID 1: the container stops with it, and may take `kill` down
    # before it returns (exit 137).
    in_container("server2", "kill", "1", check=False)
    started = time.monotonic()
    wait_for_sshd("server2")
    timed("sshd killed inside a container", "back by the restart policy", started)
    after = container("server2")
    assert after["Id"] == before["Id"], "the same container, started again"
    assert int(str(after["RestartCount"])) > int(str(before["RestartCount"])), "by the restart policy"
    up_output = stack.pulumi("up", "--yes", "--expect-no-changes")
    LOGS.append(up_output)
    assert manager_logs_in_to("server2")


def swarm_state(host: str) -> str:
    return on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip()


def test_a_worker_that_left_the_swarm_is_joined_again_by_a_plain_up(stack: Stack) -> None:
    on_host("server2", "docker", "swarm", "leave", "--force")
    assert swarm_state("server2") == "inactive"
    started = time.monotonic()
    up(stack)
    timed("worker left the swarm", "plain up", started)
    assert swarm_state("server2") == "active"
    nodes = on_host("server1", "docker", "node", "ls", "--format", "{{.Hostname}} {{.Status}}").split("\n")
    assert sorted(line for line in nodes if line) == ["server1 Ready", "server2 Ready"], "no node left behind as Down"
    assert manager_logs_in_to("server2")
    assert_trained_across_both(stack)
    stack.pulumi("preview", "--expect-no-changes")


def test_a_claim_removed_from_a_host_is_made_again_by_a_plain_up(stack: Stack) -> None:
    on_host("server2", "docker", "volume", "rm", "dslab-claim")
    up(stack)
    claim = inspect("server2", "volume", "dslab-claim")
    assert claim is not None and claim["Labels"]["dslab.owner"].endswith(f"/{STACK}"), claim
    stack.pulumi("preview", "--expect-no-changes")


def test_after_an_engine_restart_training_relaunches_and_nothing_else_changes(stack: Stack) -> None:
    before = {host: container(host)["Id"] for host in HOSTS}
    started = time.monotonic()
    host_fault("engine-stop", "server2")
    host_fault("engine-start", "server2")
    wait_for_sshd("server2")
    timed("engine restart", "container back with sshd in", started)
    assert {host: container(host)["Id"] for host in HOSTS} == before, (
        "the restart policy brought the same containers back"
    )
    assert manager_logs_in_to("server2")
    stack.pulumi("refresh", "--yes", "--expect-no-changes")

    # The run finished before the restart: a plain `up` reports it; training it again is asked
    # for (every run starts over, and the run's step made anew).
    finished = stack.outputs()["training_results"]
    stack.merge_config({"training": {"resume": "never"}})
    launch = stack.urn_of("lab-training-run")
    changed = set(stack.preview_changes("--replace", launch))
    assert changed == {"lab-training-run"}, f"a relaunch changes nothing else: {changed}"
    started = time.monotonic()
    up_output = stack.pulumi("up", "--yes", "--replace", launch)
    LOGS.append(up_output)
    timed("engine restart", "training relaunch (up --replace)", started)
    assert {host: container(host)["Id"] for host in HOSTS} == before
    assert "launching in llm: deepspeed" in up_output and stack.outputs()["training_results"] != finished
    assert_trained_across_both(stack)


def test_a_second_stack_on_the_same_hosts_is_refused_naming_the_first(stack: Stack) -> None:
    intruder = Stack(stack.cli, INTRUDER)
    stack.cli.run("stack", "init", INTRUDER)
    containers = {host: container(host)["Id"] for host in HOSTS}
    try:
        code, output = attempt(intruder, "up", "--yes")
        assert code != 0, "the second stack must be refused"
        assert re.search(rf"already used by stack '[^']*/{STACK}'", output), output[-3000:]
        assert "server1" in output and "server2" in output
    finally:
        intruder.pulumi("destroy", "--yes")
        stack.cli.run("stack", "rm", "--yes", INTRUDER)
    assert {host: container(host)["Id"] for host in HOSTS} == containers, "the first stack's containers are untouched"
    stack.pulumi("refresh", "--yes", "--expect-no-changes")


def test_destroy_with_a_host_unreachable_fails_clearly_then_finishes_and_leaves_nothing(stack: Stack) -> None:
    host_fault("host-stop", "server2")
    try:
        started = time.monotonic()
        code, output = attempt(stack, "destroy", "--yes")
        failed_after = timed("destroy with a host down", "failed after", started)
        assert code != 0
        # `destroy` runs no program, so no probe: the refresh's reads say it, in pulumi-docker's
        # words ending with the providers' gate's (components/hosts/ssh_gate.py), naming the host,
        # each of its resources, and why.
        silent = f"server2 ({address('server2')}:22) does not answer SSH (no reply in 10 s): is server2 up"
        assert f"ssh://root@{address('server2')}:22 is reachable" in output and silent in output, output[-3000:]
        assert "lab-claim-server2" in output and "server2-llm" in output, output[-3000:]
        assert failed_after < 180, f"destroy failed within a bounded time, not after {failed_after} s"
    finally:
        host_fault("host-start", "server2")

    started = time.monotonic()
    stack.pulumi("destroy", "--yes")
    timed("destroy with a host down", "next destroy finished in", started)
    for host in HOSTS:
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"no containers left on {host}"
        assert inspect(host, "network", NETWORK) is None, f"no overlay network left on {host}"
        assert inspect(host, "volume", "dslab-claim") is None, f"{host}'s claim was released"
        assert on_host(host, "docker", "images", "--quiet", "dslab/train").strip() == "", f"no image left on {host}"
        assert on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip() == "inactive"
    assert stack.cli.resource_count(STACK) == 0
