"""Running the project's own Pulumi toolchain from tests, against a given state directory."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import progress

REPO = Path(__file__).resolve().parents[1]
HEARTBEAT_SECONDS = 60.0
"""How often a running pulumi command says it is still running."""
PULUMI_HOME = REPO / ".pulumi-home"


def ensure_toolchain() -> None:
    """Builds or reuses the toolchain (`make toolchain`); seconds when cached."""
    subprocess.run(["bash", str(REPO / "toolchain" / "install.sh")], check=True)


def error_lines(output: str, context: int = 12) -> str:
    """The lines around each error in Pulumi's output: long logs would push them out of view."""
    lines = output.splitlines()
    keep: set[int] = set()
    for index, line in enumerate(lines):
        if "Error" in line and "error:" not in line.lower()[:0] or "failed on" in line:
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
        """Runs `pulumi ARGS` (non-interactive); output is kept and, on failure, shown. While
        it runs, every HEARTBEAT_SECONDS a line on the terminal says for how long and what
        Pulumi printed last."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        argv = ["pulumi", *args, "--non-interactive"]
        process = subprocess.Popen(
            argv, cwd=self.project_dir, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        stdout: list[str] = []
        stderr: list[str] = []
        readers = [
            threading.Thread(target=stream.extend, args=(pipe,), daemon=True)
            for stream, pipe in ((stdout, process.stdout), (stderr, process.stderr))
        ]
        for reader in readers:
            reader.start()
        started = time.monotonic()
        while True:
            try:
                process.wait(timeout=HEARTBEAT_SECONDS)
                break
            except subprocess.TimeoutExpired:
                elapsed = time.monotonic() - started
                if elapsed > timeout:
                    process.kill()
                    process.wait()
                    raise subprocess.TimeoutExpired(argv, timeout, "".join(stdout), "".join(stderr)) from None
                last = next((line.strip() for line in reversed(stdout) if line.strip()), "")
                progress.say(f"    pulumi {args[0]}: {elapsed:.0f} s; last: {last[:110]}")
        for reader in readers:
            reader.join()
        completed = subprocess.CompletedProcess(argv, process.returncode, "".join(stdout), "".join(stderr))
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
