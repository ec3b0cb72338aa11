"""The first word on a host the providers cannot reach (components/hosts/ssh_gate.py and
assets/operator/host-key-check.sh), run as ssh runs them: the gate with a socketpair as its
stdout, the key check with the tokens ssh hands it and a real known_hosts read by ssh-keygen.
tests/faults sees the same lines come first in pulumi's output for a host whose key changed or
whose sshd is stopped."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from components.hosts.engines import SSH_GATE
from components.hosts.ssh_gate import connection_cause
from components.hosts.unreachable import REFUSED
from components.paths import ASSETS_DIR

PROJECT = ASSETS_DIR.parent
KEY_CHECK = ASSETS_DIR / "operator" / "host-key-check.sh"


def run_gate(*args: str) -> tuple[subprocess.CompletedProcess[str], socket.socket]:
    """The gate run as ssh's ProxyCommand with ProxyUseFdpass: stdout is ssh's socketpair end."""
    ours, theirs = socket.socketpair()
    completed = subprocess.run(
        [sys.executable, "-I", "-S", SSH_GATE, *args], cwd=PROJECT, stdout=theirs, stderr=subprocess.PIPE,
        text=True, timeout=30, check=False,
    )  # fmt: skip
    theirs.close()
    return completed, ours


def test_the_gate_hands_ssh_a_connection_to_the_host() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        completed, from_gate = run_gate("connect", "server2", "127.0.0.1", str(port), "5")
        assert completed.returncode == 0, completed.stderr
        _, descriptors, _, _ = socket.recv_fds(from_gate, 1, 1)
        assert len(descriptors) == 1, "one connected socket passed back"
        with socket.socket(fileno=descriptors[0]) as passed, server.accept()[0] as accepted:
            passed.sendall(b"SSH-2.0-dslab\r\n")
            assert accepted.recv(64) == b"SSH-2.0-dslab\r\n", "what ssh writes reaches the host"
        assert completed.stderr == ""


def test_a_refused_connection_is_named_with_host_cause_and_fix() -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    completed, _ = run_gate("connect", "server2", "127.0.0.1", str(port), "5")
    assert completed.returncode == 255, "ssh's own status for a failed connection"
    assert completed.stderr == (
        f"server2 (127.0.0.1:{port}) refuses SSH connections: is sshd running on server2, "
        f"and is {port} its port (ssh_port in the stack file)?\n"
    )
    assert "connection refused" not in completed.stderr, "the docker client would put its own words instead"


def test_the_cause_reads_as_the_user_knows_it() -> None:
    assert connection_cause(TimeoutError(), 10.0) == "no reply in 10 s"
    assert connection_cause(ConnectionRefusedError(111, "Connection refused"), 10.0) == REFUSED
    assert connection_cause(OSError(113, "No route to host"), 10.0) == "no route to host"


def test_the_gate_says_how_it_is_used_when_called_wrong() -> None:
    completed, _ = run_gate("connect", "server2")
    assert completed.returncode == 64
    assert "connect NAME ADDRESS PORT TIMEOUT_S" in completed.stderr


def host_key(tmp_path: Path, name: str) -> tuple[str, str]:
    """A fresh ed25519 host key: (type, base64), as ssh's %t and %K give it."""
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)], check=True)
    key_type, key = (tmp_path / f"{name}.pub").read_text().split()[:2]
    return key_type, key


def key_check(
    tmp_path: Path, reason: str, key: tuple[str, str], known_hosts: str, port: str = "22"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["/bin/sh", str(KEY_CHECK), reason, *key, known_hosts, "server2", "10.0.18.2", port],
        cwd=PROJECT, capture_output=True, text=True, timeout=30, check=False,
        env={**os.environ, "HOME": str(tmp_path)},
    )  # fmt: skip


def test_the_known_key_passes_and_another_key_is_named_with_the_accept_command(tmp_path: Path) -> None:
    known, offered = host_key(tmp_path, "known"), host_key(tmp_path, "offered")
    (tmp_path / "known_hosts").write_text(f"10.0.18.2 {known[0]} {known[1]}\n")
    path = str(tmp_path / "known_hosts")
    passed = key_check(tmp_path, "HOSTNAME", known, path)
    assert (passed.returncode, passed.stdout, passed.stderr) == (0, "", ""), (
        "it prints no key: known_hosts is the trust"
    )
    refused = key_check(tmp_path, "HOSTNAME", offered, path)
    assert refused.returncode == 1, "ssh ends the connection when the command fails"
    first = refused.stderr.splitlines()[0]
    assert first.startswith(f"the SSH host key of server2 (10.0.18.2:22) is not the one {path} holds"), first
    assert f"ssh-keygen -R '10.0.18.2' -f {path} && ssh-keyscan -p 22 10.0.18.2 >> {path}" in first
    assert key_check(tmp_path, "ORDER", ("", ""), path).returncode == 0, "no key is offered while ssh orders algorithms"


def test_a_host_on_another_port_is_looked_up_as_known_hosts_writes_it(tmp_path: Path) -> None:
    known, offered = host_key(tmp_path, "known"), host_key(tmp_path, "offered")
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".ssh" / "known_hosts").write_text(f"[10.0.18.2]:2222 {known[0]} {known[1]}\n")
    assert key_check(tmp_path, "HOSTNAME", known, "~/.ssh/known_hosts", port="2222").returncode == 0
    refused = key_check(tmp_path, "HOSTNAME", offered, "~/.ssh/known_hosts", port="2222")
    assert refused.returncode == 1, "~/ is the user's home, as ssh reads UserKnownHostsFile"
    assert "ssh-keygen -R '[10.0.18.2]:2222'" in refused.stderr


def test_a_host_known_hosts_does_not_hold_is_left_to_ssh_and_the_probe(tmp_path: Path) -> None:
    (tmp_path / "known_hosts").write_text("")
    completed = key_check(tmp_path, "HOSTNAME", host_key(tmp_path, "offered"), str(tmp_path / "known_hosts"))
    assert (completed.returncode, completed.stderr) == (0, "")
