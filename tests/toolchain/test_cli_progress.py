"""The test suites' driver of the CLI (harness/pulumi_cli.py) says, while a pulumi
command runs, for how long and what Pulumi printed last: the e2e suites are not silent for
the minutes an `up` takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import progress, pulumi_cli
from harness.pulumi_cli import PulumiCli, ensure_toolchain

pytestmark = [pytest.mark.e2e, pytest.mark.toolchain]


class Recorder:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_line(self, line: str) -> None:
        self.lines.append(line)


def test_a_running_pulumi_command_reports_its_elapsed_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ensure_toolchain()
    recorder = Recorder()
    monkeypatch.setattr(progress, "_terminal", [(recorder, None)])
    monkeypatch.setattr(pulumi_cli, "HEARTBEAT_SECONDS", 0.05)
    completed = PulumiCli(project_dir=tmp_path, state_dir=tmp_path / "state").run("about", check=False)
    assert "CLI" in completed.stdout, "the command's output is still kept whole"
    assert recorder.lines, "at least one progress line while `pulumi about` ran (well over 0.05 s)"
    assert all(line.startswith("    pulumi about: ") and " s; last: " in line for line in recorder.lines)
