"""Every host's step at the same time: the dynamic provider runs more than its SDK's 4 calls
at once (components/provider_pool.py), checked through the real engine and provider process."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain

pytestmark = [pytest.mark.e2e, pytest.mark.toolchain]

STEPS = 8
SECONDS = 4


@pytest.fixture
def concurrency(tmp_path: Path) -> Iterator[PulumiCli]:
    ensure_toolchain()
    cli = PulumiCli(project_dir=REPO / "tests" / "toolchain" / "concurrency", state_dir=tmp_path / "state")
    cli.run("stack", "init", "waits")
    cli.run("config", "set", "steps", str(STEPS), "--stack", "waits")
    cli.run("config", "set", "seconds", str(SECONDS), "--stack", "waits")
    yield cli
    cli.run("destroy", "--yes", "--stack", "waits", check=False)
    (cli.project_dir / "Pulumi.waits.yaml").unlink(missing_ok=True)


def test_eight_waiting_steps_all_start_together(concurrency: PulumiCli) -> None:
    # --parallel above the steps: the engine's own limit (4 x CPUs) is not what is tested.
    concurrency.run("up", "--yes", "--skip-preview", "--parallel", str(2 * STEPS), "--stack", "waits")
    started = [float(value) for value in concurrency.outputs("waits")["started"]]
    spread = max(started) - min(started)
    # With the SDK's 4 threads the fifth step starts only when one of the first four ends.
    assert spread < SECONDS / 2, f"the {STEPS} steps started {spread:.1f} s apart: {sorted(started)}"
