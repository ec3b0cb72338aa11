"""The built toolchain with the official providers on the simulated hosts: per host a
`docker.Provider` over `ssh://` with strict host keys, a network and a container, and a
`command.remote.Command` that checks the host key. Up, a no-change preview, a container
deleted behind our back, a wrong host key, destroy: each read from the hosts themselves."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from tests.support.pulumi_output import change_counts
from tests.support.sim_hosts import STATE_DIR, address, inspect, hosts_up, on_host
from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain

pytestmark = [pytest.mark.e2e, pytest.mark.toolchain]

HOSTS = {name: address(name) for name in ("server1", "server2")}
STACK = "proof"


@dataclass
class Proof:
    cli: PulumiCli
    prefix: str
    known_hosts: Path
    """The operator's known_hosts as this stack reads it (a copy of the lab's, to tamper with)."""

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cli.run(*args, "--stack", STACK, check=check)

    def on_host(self, host: str, kind: str) -> bool:
        """Whether the host's own engine has our network or container."""
        return inspect(host, kind, f"{self.prefix}-{'net' if kind == 'network' else 'box'}") is not None


@pytest.fixture
def proof(tmp_path: Path) -> Iterator[Proof]:
    ensure_toolchain()
    hosts_up(len(HOSTS))
    project = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "toolchain" / "project", project)
    known_hosts = tmp_path / "known_hosts"
    shutil.copy(STATE_DIR / "known_hosts", known_hosts)
    prefix = f"dslab-proof-{uuid.uuid4().hex[:6]}"
    config = {
        "prefix": prefix,
        "hosts": [{"name": name, "address": address} for name, address in HOSTS.items()],
        "private_key_path": str(STATE_DIR / "operator_ed25519"),
        "known_hosts_path": str(known_hosts),
    }
    (project / f"Pulumi.{STACK}.yaml").write_text(
        yaml.safe_dump({"config": {f"dslab-toolchain-proof:{key}": value for key, value in config.items()}})
    )
    (project / "Pulumi.yaml").write_text(
        (project / "Pulumi.yaml").read_text().replace("../../../.venv", str(REPO / ".venv"))
    )
    proof = Proof(PulumiCli(project_dir=project, state_dir=tmp_path / "state"), prefix, known_hosts)
    proof.cli.run("stack", "init", STACK)
    yield proof
    shutil.copy(STATE_DIR / "known_hosts", known_hosts)
    proof.run("destroy", "--yes", "--refresh", check=False)


def test_up_then_no_change_preview_then_destroy_leaves_nothing_on_either_host(proof: Proof) -> None:
    up = proof.run("up", "--yes")
    assert "+ 9 created" in up.stdout, "the stack, and per host a provider, network, container and command"
    assert "warning" not in up.stdout.lower() + up.stderr.lower(), "installed plugins run without warnings"

    outputs = proof.cli.outputs(STACK)
    for host in HOSTS:
        assert outputs[f"{host}_hostname"].strip() == host, "the remote command ran on that host"
        assert proof.on_host(host, "network") and proof.on_host(host, "container"), f"both exist on {host}"
        container = inspect(host, "container", f"{proof.prefix}-box")
        assert container is not None
        assert container["HostConfig"]["ShmSize"] == 256 * 1024 * 1024, "shm size as declared (MiB)"
        assert container["HostConfig"]["Ulimits"] == [{"Name": "stack", "Soft": 67108864, "Hard": 67108864}]

    proof.run("preview", "--expect-no-changes")

    proof.run("destroy", "--yes")
    for host in HOSTS:
        assert not proof.on_host(host, "container"), f"destroy removed the container on {host}"
        assert not proof.on_host(host, "network"), f"destroy removed the network on {host}"
    assert proof.cli.resource_count(STACK) == 0, "the stack is empty after destroy"


def test_a_container_deleted_on_its_host_is_seen_by_refresh_and_made_again_by_up(proof: Proof) -> None:
    proof.run("up", "--yes")
    first_id = proof.cli.outputs(STACK)["server2_container_id"]

    on_host("server2", "docker", "rm", "--force", f"{proof.prefix}-box")
    refresh = proof.run("refresh", "--yes")
    assert change_counts(refresh.stdout).get("deleted") == 1, f"refresh saw that the container is gone:\n{refresh.stdout}"
    proof.run("up", "--yes")

    assert proof.on_host("server2", "container"), "up made the deleted container again"
    assert proof.cli.outputs(STACK)["server2_container_id"] != first_id, "it is a new container"
    proof.run("preview", "--expect-no-changes")


def test_a_wrong_host_key_fails_up_naming_that_host_and_creates_nothing_there(proof: Proof) -> None:
    foreign = Path(proof.known_hosts.parent / "foreign")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(foreign)], check=True)
    foreign_key = " ".join(foreign.with_suffix(".pub").read_text().split()[:2])
    genuine = proof.known_hosts.read_text().splitlines()
    tampered = [line for line in genuine if not line.startswith(HOSTS["server2"] + " ")]
    proof.known_hosts.write_text("\n".join([*tampered, f"{HOSTS['server2']} {foreign_key}"]) + "\n")

    failed = proof.run("up", "--yes", check=False)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0, "up refuses a host whose key is not the one the operator trusts"
    assert "server2-" in output, "the failure names the host's resources"
    assert "host key" in output.lower(), "and says it is about the host key"
    assert not proof.on_host("server2", "network"), "nothing was created on that host"
    assert not proof.on_host("server2", "container"), "nothing was created on that host"
