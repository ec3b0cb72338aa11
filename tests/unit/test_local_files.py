"""The files a stack names are checked on the operator's machine before any host is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.config import LabConfig, LabConfigError, load_stack_file
from components.hosts.operator_files import missing_local_files, require_local_files
from harness.pulumi_cli import REPO


KNOWN_HOSTS = (
    "10.0.18.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOne\n"
    "10.0.18.2 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAITwo\n"
)
"""The dev stack's two hosts (port 22), one key each."""


def dev_config() -> LabConfig:
    return load_stack_file(REPO / "Pulumi.dev.yaml")


def test_a_missing_key_and_known_hosts_are_named_by_their_keys(tmp_path: Path) -> None:
    problems = missing_local_files(dev_config(), tmp_path)
    assert problems[:2] == [
        "dslab:operator.private_key_path: '.simhosts/operator_ed25519' is not a file; create it or fix the path",
        "dslab:operator.known_hosts_path: '.simhosts/known_hosts' is not a file; create it or fix the path",
    ]


def test_a_key_readable_by_others_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / ".simhosts").mkdir()
    (tmp_path / ".simhosts" / "operator_ed25519").write_text("key")
    (tmp_path / ".simhosts" / "operator_ed25519").chmod(0o644)
    (tmp_path / ".simhosts" / "known_hosts").write_text("")
    problems = missing_local_files(dev_config(), tmp_path)
    assert any("chmod 600 .simhosts/operator_ed25519" in problem for problem in problems), problems


def test_every_file_present_and_private_passes(tmp_path: Path) -> None:
    (tmp_path / ".simhosts").mkdir()
    (tmp_path / ".simhosts" / "operator_ed25519").write_text("key")
    (tmp_path / ".simhosts" / "operator_ed25519").chmod(0o600)
    (tmp_path / ".simhosts" / "known_hosts").write_text(KNOWN_HOSTS)
    require_local_files(dev_config(), tmp_path)  # the CA bundle path is absolute and exists here


def test_a_host_known_hosts_holds_no_key_for_is_named_with_the_way_to_add_it(tmp_path: Path) -> None:
    (tmp_path / ".simhosts").mkdir()
    (tmp_path / ".simhosts" / "operator_ed25519").write_text("key")
    (tmp_path / ".simhosts" / "operator_ed25519").chmod(0o600)
    (tmp_path / ".simhosts" / "known_hosts").write_text(KNOWN_HOSTS.splitlines()[0] + "\n")
    assert missing_local_files(dev_config(), tmp_path) == [
        "dslab:operator.known_hosts_path: '.simhosts/known_hosts' holds no key for server2 (10.0.18.2); "
        "add the host's key after checking its fingerprint, e.g. ssh-keyscan -p 22 10.0.18.2"
    ]


def test_require_raises_one_error_listing_every_problem(tmp_path: Path) -> None:
    with pytest.raises(LabConfigError) as raised:
        require_local_files(dev_config(), tmp_path)
    assert raised.value.problems == missing_local_files(dev_config(), tmp_path)
    assert [problem.split(": ", 1)[0] for problem in raised.value.problems] == [
        "dslab:operator.private_key_path",
        "dslab:operator.known_hosts_path",
    ]
