"""The host key a Command checks is the one the operator's known_hosts trusts, read as
OpenSSH writes the file (hashed names and non-standard ports included)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from components.hosts.known_hosts import host_key

ED25519 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEd"
ECDSA = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbml"
RSA = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC"


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "known_hosts"
    path.write_text(text)
    return path


def test_the_ed25519_key_is_picked_among_several_for_the_host(tmp_path: Path) -> None:
    path = write(tmp_path, f"10.0.0.1 {RSA}\n10.0.0.1,gpu-a {ECDSA}\n10.0.0.1 {ED25519} comment\n")
    assert host_key(path, "10.0.0.1", 22) == ED25519


def test_another_type_serves_when_the_host_has_no_ed25519_key(tmp_path: Path) -> None:
    path = write(tmp_path, f"10.0.0.1 {RSA}\n10.0.0.1,gpu-a {ECDSA}\n")
    assert host_key(path, "10.0.0.1", 22) == ECDSA


def test_a_port_other_than_22_is_matched_in_brackets_only(tmp_path: Path) -> None:
    path = write(tmp_path, f"10.0.0.1 {RSA}\n[10.0.0.1]:2222 {ED25519}\n")
    assert host_key(path, "10.0.0.1", 2222) == ED25519
    assert host_key(path, "10.0.0.1", 22) == RSA


def test_markers_comments_and_other_hosts_are_not_trust(tmp_path: Path) -> None:
    path = write(tmp_path, f"# 10.0.0.1 {ED25519}\n@revoked 10.0.0.1 {ED25519}\n10.0.0.10 {ED25519}\n")
    assert host_key(path, "10.0.0.1", 22) is None


def test_names_hashed_by_ssh_keygen_are_matched(tmp_path: Path) -> None:
    path = write(tmp_path, f"10.0.0.1 {ED25519}\n[10.0.0.2]:2222 {ECDSA}\n")
    subprocess.run(["ssh-keygen", "-q", "-H", "-f", str(path)], check=True, capture_output=True)
    assert "10.0.0.1" not in path.read_text(), "ssh-keygen hashed the names"
    assert host_key(path, "10.0.0.1", 22) == ED25519
    assert host_key(path, "10.0.0.2", 2222) == ECDSA
    assert host_key(path, "10.0.0.3", 22) is None
