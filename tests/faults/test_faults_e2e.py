"""Faults, drift, intruders and secrets on the simulated 2-host lab: after each fault the
next `pulumi up` (or `destroy`) brings the world back to what the stack says, and nothing is
lost or exposed on the way. `make test-faults` runs these alone.

The scenarios share one stack and run in file order, each leaving the lab as the stack
says. How long each took is written to bench/out/faults.json (and printed with -s).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support.pulumi_output import diagnostics_of
from tests.support.sim_hosts import LAB, STATE_DIR, address, host_fault, hosts_up, inspect, keep_build_cache, on_host, wait_for_sshd
from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy
from tests.support.wire import Capture, host_link

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

HOSTS = ("server1", "server2")
STACK = "faults"
INTRUDER = "intruder"
CONTAINER = "llm"
NETWORK = "test-net"
REPORT = REPO / "bench" / "out" / "faults.json"

TIMINGS: dict[str, dict[str, float]] = {}
"""Scenario -> what was timed (seconds): written to REPORT at the end."""
LOGS: list[str] = []
"""Everything pulumi printed, for the secrets check."""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ensure_toolchain()
    hosts_up(len(HOSTS))
    for host in HOSTS:  # an earlier session's unfinished runs of this stack would be resumed
        on_host(host, "rm", "-rf", f"/var/lib/dslab/{STACK}/runs")
    work = tmp_path_factory.mktemp("faults-e2e")
    cli = PulumiCli(project_dir=project_copy(work, (STACK, INTRUDER)), state_dir=work / "state")
    cli.run("stack", "init", STACK)
    yield Stack(cli, STACK)
    # Whatever a failed scenario left: hosts powered and connected, then nothing of ours.
    for host in HOSTS:
        host_fault("network-restore", host, check=False)
    hosts_up(len(HOSTS))
    cli.run("destroy", "--yes", "--stack", STACK, check=False)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(TIMINGS, indent=2) + "\n")
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

        settings = dict(line.split(" ", 1) for line in in_container(host, "/usr/sbin/sshd", "-T").splitlines() if " " in line)
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
        secrets[f"{host}'s sshd host key"] = in_container(host, "sed", "-n", "2p", "/etc/ssh/ssh_host_ed25519_key").strip()
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
    assert {host: container(host)["Id"] for host in HOSTS} == before, "the restart policy brought the same containers back"
    assert manager_logs_in_to("server2")
    stack.pulumi("refresh", "--yes", "--expect-no-changes")

    launch = stack.urn_of("lab-training-run")
    changed = set(stack.preview_changes("--replace", launch))
    assert changed == {"lab-training-run"}, f"a relaunch changes nothing else: {changed}"
    started = time.monotonic()
    up_output = stack.pulumi("up", "--yes", "--replace", launch)
    LOGS.append(up_output)
    timed("engine restart", "training relaunch (up --replace)", started)
    assert {host: container(host)["Id"] for host in HOSTS} == before
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


def ipsec_works_on(host: str) -> bool:
    probe = (REPO / "assets" / "host" / "ipsec-check.sh").read_text()
    return subprocess.run(
        ["ssh", "-F", str(STATE_DIR / "ssh_config"), host, "bash", "-s", "--", host],
        input=probe, capture_output=True, text=True, check=False, timeout=60,
    ).returncode == 0  # fmt: skip


def test_an_encrypted_overlay_is_refused_where_a_kernel_cannot_do_ipsec(stack: Stack) -> None:
    if all(ipsec_works_on(host) for host in HOSTS):
        pytest.skip("these hosts' kernels hold IPsec state: the refusal cannot be shown here")
    network_before = inspect("server1", "network", NETWORK)
    stack.pulumi("config", "set", "--path", "network.encrypted", "true")
    try:
        code, output = attempt(stack, "up", "--yes")
        assert code != 0
        assert re.search(r"server\d: network.encrypted: this host's kernel cannot hold IPsec ESP state", output), output[-3000:]
        assert len(diagnostics_of(output).splitlines()) <= 15, f"the refusal reads in a few lines:\n{diagnostics_of(output)}"
        network_after = inspect("server1", "network", NETWORK)
        assert network_before and network_after and network_after["Id"] == network_before["Id"], "the network was not touched"
    finally:
        stack.pulumi("config", "set", "--path", "network.encrypted", "false")
    stack.pulumi("preview", "--expect-no-changes")


def overlay_traffic_on_the_wire(marker: str) -> Capture:
    """Captures server1's link while its container sends 50 datagrams holding `marker` over
    the overlay to server2's container."""
    address = in_container("server1", "getent", "hosts", "server2").split()[0]
    send = "import socket, sys\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor _ in range(50): s.sendto(sys.argv[1].encode(), (sys.argv[2], 9))"
    with Capture(host_link(LAB.host("server1").container), marker.encode()) as capture:
        in_container("server1", "python3", "-c", send, marker, address)
        time.sleep(1)
    return capture


def ipsec_rules(host: str) -> str:
    return "".join(line for line in on_host(host, "ip", "rule").splitlines(keepends=True) if "4789" in line)


def test_strongswan_encrypts_the_overlay_on_the_wire_and_leaves_nothing_when_turned_off(stack: Stack) -> None:
    marker = f"dslab-plaintext-{uuid.uuid4().hex}"
    # Not a time: what the preflight's all-reduce measured, plain and encrypted (Gbit/s).
    TIMINGS.setdefault("encryption on (strongswan)", {})["preflight busbw before, Gbit/s"] = stack.outputs()["preflight_busbw_gbps"]
    clear = overlay_traffic_on_the_wire(marker)
    # The capture sees overlay traffic as it is: VXLAN, the datagrams readable inside.
    assert clear.with_marker >= 50 and clear.udp_ports[4789] >= 50, (clear.with_marker, clear.udp_ports)

    stack.pulumi("config", "set", "--path", "network.encrypted", "true")
    stack.pulumi("config", "set", "--path", "network.ipsec", "strongswan")
    started = time.monotonic()
    up(stack)
    timed("encryption on (strongswan)", "up (tunnels, new overlay, containers, training) in", started)
    assert_trained_across_both(stack)
    TIMINGS["encryption on (strongswan)"]["preflight busbw encrypted, Gbit/s"] = stack.outputs()["preflight_busbw_gbps"]
    ciphered = overlay_traffic_on_the_wire(marker)
    assert ciphered.with_marker == 0, "the datagrams crossed in the clear"
    assert ciphered.udp_ports[4789] == 0, f"VXLAN left the host unencrypted: {ciphered.udp_ports}"
    assert ciphered.udp_ports[4500] >= 50, f"ESP in UDP carried the datagrams: {ciphered.udp_ports}"
    stack.pulumi("preview", "--expect-no-changes")

    psk = on_host("server1", "docker", "exec", f"{CONTAINER}-ipsec", "cat", "/etc/swanctl/dslab.psk").strip()
    assert len(psk) == 64
    places = {str(path): path.read_text(errors="replace") for path in stack.cli.state_dir.rglob("*") if path.is_file()}
    places["the stack outputs"] = json.dumps(stack.outputs())
    places["pulumi's output"] = "\n".join(LOGS)
    for where, text in places.items():
        assert psk not in text, f"the IPsec pre-shared key is in {where}"

    # Fail closed: with server1's tunnel gone, its VXLAN is dropped, not sent in the clear.
    on_host("server1", "docker", "stop", f"{CONTAINER}-ipsec")
    stopped = overlay_traffic_on_the_wire(marker)
    assert stopped.with_marker == 0 and stopped.udp_ports[4789] == 0, stopped.udp_ports
    started = time.monotonic()
    refresh = stack.pulumi("refresh", "--yes")
    # A stopped container is one pulumi-docker no longer counts as made (as the training containers).
    assert re.search(r"lab-ipsec-server1\s+(delete|deleted)", refresh), refresh[-3000:]
    up(stack)
    timed("encryption on (strongswan)", "stopped IPsec container: refresh + up", started)
    assert manager_logs_in_to("server2")

    stack.pulumi("config", "rm", "--path", "network.ipsec")
    stack.pulumi("config", "set", "--path", "network.encrypted", "false")
    started = time.monotonic()
    up(stack)
    timed("encryption off again", "up in", started)
    for host in HOSTS:
        assert inspect(host, "container", f"{CONTAINER}-ipsec") is None, f"{host}'s IPsec container is gone"
        assert ipsec_rules(host) == "", f"{host}'s routing rules are gone"
        assert on_host(host, "docker", "images", "--quiet", "dslab/train-ipsec").strip() == "", f"{host}'s IPsec image is gone"
    stack.pulumi("preview", "--expect-no-changes")


def locks_left(stack: Stack) -> list[str]:
    """The stack locks a pulumi run left in the state directory (one killed, not one that failed)."""
    return [lock.name for lock in (stack.cli.state_dir / ".pulumi" / "locks").rglob("*.json")]


def long_training_started(stack: Stack, steps: int = 1_000_000) -> subprocess.Popen[str]:
    """`pulumi up` running a training run of STEPS steps, once its log shows steps."""
    stack.pulumi("config", "set", "--path", "training.workload.args[1]", str(steps))
    stack.pulumi("config", "set", "--path", "training.stall_timeout", "120")
    cli = stack.cli
    running = subprocess.Popen(
        ["pulumi", "up", "--yes", "--stack", STACK, "--non-interactive"],
        cwd=cli.project_dir, env=cli.env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    # This run, not the last one's log: the preflight comes first, then the status says running.
    while not (
        in_container("server1", "cat", "/opt/dslab/run/status", check=False).strip() == "running"
        and "dslab: step=" in in_container("server1", "cat", "/opt/dslab/run/train.log", check=False)
    ):
        if running.poll() is not None or time.monotonic() > deadline:
            running.kill()
            raise AssertionError(f"training did not start: {running.communicate()[0][-3000:]}")
        time.sleep(2)
    return running


def fails_after_fault(
    scenario: str, stack: Stack, running: subprocess.Popen[str], fault: str, undo: str, host: str,
    steps_after: str = "20",
) -> tuple[str, float]:
    """FAULT on HOST while RUNNING (STACK's up) goes on; what it printed and how long after the
    fault it failed. Whatever happened, the training is set to STEPS_AFTER steps."""
    try:
        host_fault(fault, host)
        started = time.monotonic()
        output, _ = running.communicate(timeout=600)
        failed_after = timed(scenario, "up failed after", started)
    finally:
        if running.poll() is None:
            running.kill()
        host_fault(undo, host)
        stack.pulumi("config", "set", "--path", "training.workload.args[1]", steps_after)
    LOGS.append(output)
    assert running.returncode != 0, output[-3000:]
    assert not locks_left(stack), "a run that failed left no lock: the next one needs no `pulumi cancel`"
    return output, failed_after


def trains_again_after(scenario: str, stack: Stack) -> None:
    started = time.monotonic()
    up(stack)
    timed(scenario, "next up trained in", started)
    assert_trained_across_both(stack)


RESUMED_STEPS = 1000
"""A run long enough (~1 min here) to be cut after its first checkpoints (train_tiny.py saves one
every 50 steps into the run's directory)."""
RESULTS = f"/var/lib/dslab/{STACK}/runs"


def checkpointed_step() -> int:
    """The step of the newest checkpoint of the last run started, as the manager's disk holds it."""
    name = on_host("server1", "cat", f"{RESULTS}/last-run", check=False).strip()
    latest = on_host("server1", "cat", f"{RESULTS}/{name}/checkpoints/latest", check=False).strip() if name else ""
    return int(latest.removeprefix("step")) if latest.startswith("step") else 0


def test_a_network_cut_during_training_fails_up_within_a_bounded_time_and_the_next_up_resumes(stack: Stack) -> None:
    scenario = "network cut during training (wait mode)"
    running = long_training_started(stack, steps=RESUMED_STEPS)
    deadline = time.monotonic() + 120
    while checkpointed_step() < 100:
        assert running.poll() is None and time.monotonic() < deadline, "a checkpoint was saved"
        time.sleep(1)
    output, failed_after = fails_after_fault(
        scenario, stack, running, "network-cut", "network-restore", "server2", steps_after=str(RESUMED_STEPS)
    )
    assert failed_after < 120, f"up failed within a bounded time, not after {failed_after} s"
    assert "lost contact with server2" in output or "not answering ssh from" in output, output[-3000:]
    assert "failed: stopped the run" in in_container("server1", "cat", "/opt/dslab/run/status")
    cut_at = max(int(step) for step in re.findall(r"dslab: step=(\d+) ", training_log()))
    run = on_host("server1", "cat", f"{RESULTS}/last-run").strip()
    checkpoint = checkpointed_step()

    # The same inputs, a plain up: the run goes on in its directory from its newest checkpoint.
    started = time.monotonic()
    resumed = up(stack)
    timed(scenario, "next up resumed and finished in", started)
    outputs = stack.outputs()
    assert f"resuming run {run} from its last checkpoint" in resumed, resumed[-3000:]
    assert outputs["training_resumed_from"] == checkpoint and 0 < checkpoint <= cut_at
    assert outputs["training_results"] == {host: f"{RESULTS}/{run}" for host in HOSTS}
    log = training_log()
    steps = [int(step) for step in re.findall(r"dslab: step=(\d+) ", log)]
    assert f"dslab: resumed from step={checkpoint}" in log and steps[0] == checkpoint + 1, log[:2000]
    assert f"dslab: finished steps={RESUMED_STEPS} optimizer_steps={RESUMED_STEPS} " in log, "not one step more"
    TIMINGS[scenario] |= {"steps done before the cut": cut_at, "steps re-done with resume": cut_at - checkpoint}
    stack.pulumi("config", "set", "--path", "training.workload.args[1]", "20")


ENGINE_BOUND_S = 15
"""operator.host_timeout for the hung engine: short, so the scenario stays short."""


PROGRESS_S = 30
"""How often the run's step looks at the log (deepspeed-launch.sh's DSLAB_PROGRESS_SECONDS)."""


def test_a_manager_engine_that_hangs_during_training_fails_up_within_its_bound_naming_the_host(stack: Stack) -> None:
    scenario = "hung manager engine during training"
    stack.pulumi("config", "set", "--path", "operator.host_timeout", str(ENGINE_BOUND_S))
    running = long_training_started(stack)
    output, failed_after = fails_after_fault(scenario, stack, running, "engine-hang", "engine-resume", "server1")
    assert f"server1: the Docker engine does not answer (no reply in {ENGINE_BOUND_S} s)" in output, output[-3000:]
    assert failed_after < PROGRESS_S + ENGINE_BOUND_S + 15, f"up failed within its bound, not after {failed_after} s"
    trains_again_after(scenario, stack)


BLOCKED_COMMANDS = (("preview",), ("up", "--yes"), ("destroy", "--yes"), ("up", "--yes", "--refresh=false"))
"""What a host that stopped answering must fail within a bound: the refresh starts the first three;
without it the hosts' probe is first."""


def commands_fail_within(scenario: str, stack: Stack, fault: str, undo: str, bound_s: float, said: tuple[str, ...]) -> str:
    """With FAULT on server2: each of BLOCKED_COMMANDS fails within BOUND_S, saying every text of
    SAID, and server1's container is untouched. Then UNDO and a plain up: nothing left to change
    (right after the fault the overlay may still be settling, and the probe then finds the
    manager's reach of server2 gone: the up checks it again, waiting for it). The last output."""
    server1_container = container("server1")["Id"]
    host_fault(fault, "server2")
    try:
        for command in BLOCKED_COMMANDS:
            started = time.monotonic()
            code, output = attempt(stack, *command)
            failed_after = timed(scenario, f"{' '.join(command)} failed after", started)
            assert code != 0, f"{command} failed"
            assert all(text in output for text in said), output[-3000:]
            assert failed_after < bound_s, f"{command} failed within its bound, not after {failed_after} s"
            assert not locks_left(stack), "a run that failed left no lock: the next one needs no `pulumi cancel`"
        assert container("server1")["Id"] == server1_container, "nothing was changed on the other host"
    finally:
        host_fault(undo, "server2")
    started = time.monotonic()
    up(stack)
    timed(scenario, "after the fault is undone, a plain up in", started)
    stack.pulumi("preview", "--expect-no-changes")
    assert container("server1")["Id"] == server1_container
    assert manager_logs_in_to("server2")
    return output


def test_a_hung_engine_fails_preview_up_and_destroy_within_the_bound_naming_the_host(stack: Stack) -> None:
    stack.pulumi("config", "set", "--path", "operator.host_timeout", str(ENGINE_BOUND_S))
    up(stack)
    said = f"server2: the Docker engine does not answer (no reply in {ENGINE_BOUND_S} s)"
    output = commands_fail_within("hung engine", stack, "engine-hang", "engine-resume", ENGINE_BOUND_S + 45, (said,))
    # Without the refresh the hosts' probe is first: it names the engine and plans nothing.
    assert "asking every host before planning; nothing was changed" in output, output[-3000:]


def test_a_host_that_drops_every_packet_fails_preview_up_and_destroy_within_a_bound(stack: Stack) -> None:
    # ssh's ConnectTimeout (10 s) ends each new connection: the refresh's in pulumi-docker's words,
    # naming the host's address; the probe's naming the host.
    output = commands_fail_within(
        "host dropping every packet", stack, "network-cut", "network-restore", 60, (address("server2"), "timed out")
    )
    assert f"server2 ({address('server2')}:22)" in output, output[-3000:]


def test_destroy_with_a_host_unreachable_fails_clearly_then_finishes_and_leaves_nothing(stack: Stack) -> None:
    host_fault("host-stop", "server2")
    try:
        started = time.monotonic()
        code, output = attempt(stack, "destroy", "--yes")
        failed_after = timed("destroy with a host down", "failed after", started)
        assert code != 0
        # `destroy` runs no program, so no probe: the refresh's reads say it, in the engine's words,
        # naming the host's engine, each of its resources, and why.
        assert f"ssh://root@{address('server2')}:22 is reachable" in output and "Connection timed out" in output, output[-3000:]
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
