"""Encryption of the overlay on the simulated 2-host lab, on a stack of its own: refused where
a kernel cannot hold IPsec state; with strongSwan, nothing readable on the wire, no key in the
state or the logs, closed when a tunnel stops, and nothing left when turned off.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from harness.pulumi_cli import REPO
from harness.stack_project import Stack
from tests.support.faults import (
    CONTAINER, HOSTS, LOGS, NETWORK, TIMINGS, assert_trained_across_both, attempt, fault_stack,
    in_container, manager_logs_in_to, timed, up,
)  # fmt: skip
from tests.support.pulumi_output import diagnostics_of
from tests.support.sim_hosts import LAB, STATE_DIR, inspect, on_host
from tests.support.wire import Capture, host_link

pytestmark = [pytest.mark.e2e, pytest.mark.faults]

STACK = "encryption"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    yield from fault_stack(tmp_path_factory, STACK, converged=True, preflight=True)


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
    # The run finished before: its new containers would only report it. Training again proves
    # it goes through the tunnel (and the preflight measures it).
    stack.pulumi("config", "set", "--path", "training.resume", "never")
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

