"""The built toolchain drives real resources: up, a no-change preview, and destroy."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.pulumi_cli import REPO, PulumiCli, ensure_toolchain

pytestmark = [pytest.mark.e2e, pytest.mark.toolchain]


def docker_exists(kind: str, name: str) -> bool:
    return subprocess.run(["docker", kind, "inspect", name], capture_output=True).returncode == 0


@pytest.fixture(scope="module")
def base_image() -> None:
    """The machine's engine runs, with the lab's Debian image (the container's image)."""
    subprocess.run(["bash", str(REPO / "lab" / "engine.sh")], check=True)
    subprocess.run([str(REPO / ".venv" / "bin" / "python"), "-c",
                    "from lab.images import ensure_base_image; ensure_base_image(print)"],
                   check=True, cwd=REPO)  # fmt: skip


@pytest.fixture
def proof(tmp_path: Path, base_image: None) -> Iterator[tuple[PulumiCli, str]]:
    ensure_toolchain()
    cli = PulumiCli(project_dir=REPO / "tests" / "toolchain" / "project", state_dir=tmp_path / "state")
    prefix = f"dslab-proof-{uuid.uuid4().hex[:6]}"
    cli.run("stack", "init", "proof")
    cli.run("config", "set", "prefix", prefix, "--stack", "proof")
    yield cli, prefix
    cli.run("destroy", "--yes", "--stack", "proof", check=False)
    cli.run("stack", "rm", "--yes", "--force", "proof", check=False)
    # The stack file lands in the project directory; it is this test's, not the project's.
    (cli.project_dir / "Pulumi.proof.yaml").unlink(missing_ok=True)


def test_up_then_no_change_preview_then_destroy_leaves_nothing(proof: tuple[PulumiCli, str]) -> None:
    cli, prefix = proof

    up = cli.run("up", "--yes", "--stack", "proof")
    assert "+ 4 created" in up.stdout, "the stack and its three resources were created"

    outputs = cli.outputs("proof")
    assert outputs["greeting"].startswith("hello from "), "the local command ran and its output came back"
    assert docker_exists("network", f"{prefix}-net"), "the network exists on the real engine"
    assert docker_exists("container", f"{prefix}-box"), "the container exists on the real engine"

    cli.run("preview", "--expect-no-changes", "--stack", "proof")

    cli.run("destroy", "--yes", "--stack", "proof")
    assert not docker_exists("container", f"{prefix}-box"), "destroy removed the container"
    assert not docker_exists("network", f"{prefix}-net"), "destroy removed the network"
    assert cli.resource_count("proof") == 0, "the stack is empty after destroy"


def test_refresh_sees_a_container_deleted_behind_our_back_and_up_recreates_it(
    proof: tuple[PulumiCli, str],
) -> None:
    cli, prefix = proof
    cli.run("up", "--yes", "--stack", "proof")
    first_id = cli.outputs("proof")["container_id"]

    subprocess.run(["docker", "rm", "--force", f"{prefix}-box"], check=True, capture_output=True)
    cli.run("refresh", "--yes", "--stack", "proof")
    cli.run("up", "--yes", "--stack", "proof")

    assert docker_exists("container", f"{prefix}-box"), "up made the deleted container again"
    assert cli.outputs("proof")["container_id"] != first_id, "it is a new container"
