"""The dynamic provider starts while the program is still being read
(components/provider_start.py), checked through the real engine and provider process; and
its fast exit (components/provider_exit.py) leaves a clean run."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain

pytestmark = [pytest.mark.e2e, pytest.mark.toolchain]

READ_SECONDS = 3.0


@pytest.fixture
def program(tmp_path: Path) -> Iterator[PulumiCli]:
    ensure_toolchain()
    cli = PulumiCli(project_dir=REPO / "tests" / "toolchain" / "provider_start", state_dir=tmp_path / "state")
    stacks = ("early", "late")
    for stack in stacks:
        cli.run("stack", "init", stack)
        cli.run("config", "set", "start_early", str(stack == "early").lower(), "--stack", stack)
        cli.run("config", "set", "read_seconds", str(READ_SECONDS), "--stack", stack)
    yield cli
    for stack in stacks:
        cli.run("destroy", "--yes", "--stack", stack, check=False)
        (cli.project_dir / f"Pulumi.{stack}.yaml").unlink(missing_ok=True)


def provider_start_after_reading_began(cli: PulumiCli, stack: str) -> float:
    completed = cli.run("up", "--yes", "--skip-preview", "--stack", stack)
    assert "error" not in completed.stdout.lower() and "warning" not in completed.stdout.lower(), completed.stdout
    outputs = cli.outputs(stack)
    return float(outputs["provider_started"]) - float(outputs["reading_started"])


def test_the_provider_starts_while_the_program_is_read_and_the_run_ends_clean(program: PulumiCli) -> None:
    # Without the early start the engine launches the provider only once the program has run.
    late = provider_start_after_reading_began(program, "late")
    assert late >= READ_SECONDS - 0.1, f"without an early start the provider started {late:.2f} s into reading"
    early = provider_start_after_reading_began(program, "early")
    assert early < READ_SECONDS / 2, f"the provider started {early:.2f} s into a {READ_SECONDS} s read"
    # The provider that exits without teardown left nothing half done: a second run is a no-op.
    program.run("preview", "--expect-no-changes", "--stack", "early")
