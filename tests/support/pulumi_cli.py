"""Running the project's own Pulumi toolchain from tests, against a given state directory."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PULUMI_HOME = REPO / ".pulumi-home"


def ensure_toolchain() -> None:
    """Builds or reuses the toolchain (`make toolchain`); seconds when cached."""
    subprocess.run(["bash", str(REPO / "toolchain" / "install.sh")], check=True)


def error_lines(output: str, context: int = 12) -> str:
    """The lines around each error in Pulumi's output: long logs would push them out of view."""
    lines = output.splitlines()
    keep: set[int] = set()
    for index, line in enumerate(lines):
        if "Error" in line and "error:" not in line.lower()[:0] or "RemoteScriptError" in line or "failed on" in line:
            keep.update(range(index, min(index + context, len(lines))))
    return "\n".join(lines[index] for index in sorted(keep))[-8000:]


@dataclass
class PulumiCli:
    """The `pulumi` CLI of `.pulumi-home/bin` on one project, one state backend directory."""

    project_dir: Path
    state_dir: Path

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            PULUMI_HOME=str(PULUMI_HOME),
            PATH=f"{PULUMI_HOME / 'bin'}:{REPO / '.venv' / 'bin'}:{env.get('PATH', '')}",
            PULUMI_BACKEND_URL=f"file://{self.state_dir}",
            PULUMI_CONFIG_PASSPHRASE_FILE=str(PULUMI_HOME / "passphrase"),
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="true",
            PULUMI_SKIP_UPDATE_CHECK="true",
            PULUMI_PYTHON_CMD=str(REPO / ".venv" / "bin" / "python"),
            PYTHONPATH=str(REPO),
        )
        env.pop("PULUMI_CONFIG_PASSPHRASE", None)
        return env

    def run(self, *args: str, check: bool = True, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
        """Runs `pulumi ARGS` (non-interactive); output is kept and, on failure, shown."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        completed = subprocess.run(
            ["pulumi", *args, "--non-interactive"],
            cwd=self.project_dir,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if check and completed.returncode != 0:
            raise AssertionError(
                f"pulumi {' '.join(args)} exited {completed.returncode}\n"
                f"--- errors\n{error_lines(completed.stdout)}\n"
                f"--- stdout (end)\n{completed.stdout[-6000:]}\n--- stderr\n{completed.stderr[-4000:]}"
            )
        return completed

    def outputs(self, stack: str, show_secrets: bool = False) -> dict[str, Any]:
        args = ["stack", "output", "--json", "--stack", stack]
        if show_secrets:
            args.append("--show-secrets")
        return dict(json.loads(self.run(*args).stdout))

    def resource_count(self, stack: str) -> int:
        exported = json.loads(self.run("stack", "export", "--stack", stack).stdout)
        return len(exported.get("deployment", {}).get("resources") or [])
