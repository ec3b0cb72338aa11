"""A stack of the real program, in a copy of the project made for one test module: Pulumi
writes each stack's secrets salt into its config file, and the checkout's files stay as they are."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import yaml

from harness.pulumi_cli import REPO, PulumiCli
from simhosts.plan import SimLab, lab_from_env

LINKED = ("components", "assets", ".venv")
"""Code, scripts and venv are linked into the copy, not copied."""
OPERATOR_FILES = ".simhosts"
"""Where the stack files find the lab's operator key and known_hosts (a link to the lab's folder)."""


def project_copy(work: Path, stacks: tuple[str, ...] = ("dev",), lab: SimLab | None = None) -> Path:
    """The project's files; each stack's config is Pulumi.dev.yaml rendered for ``lab`` (by default
    the one ``DSLAB_LAB`` names): its hosts' addresses and operator files are that lab's."""
    lab = lab_from_env() if lab is None else lab
    project = work / "project"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        shutil.copy(REPO / name, project / name)
    for stack in stacks:
        (project / f"Pulumi.{stack}.yaml").write_text(dev_stack_for(lab), encoding="utf-8")
    for name in LINKED:
        (project / name).symlink_to(REPO / name)
    (project / OPERATOR_FILES).symlink_to(lab.state_dir(REPO))
    return project


CODE = ("Pulumi.yaml", "__main__.py", "components", "assets")
"""The program's own files, which use_code swaps."""


def use_code(project: Path, commit: str | None) -> None:
    """The project's program: the release's (`commit`), or this checkout's (None), copied into
    the project as a user's checkout would change in place (the program's own paths, which
    the image's build context names, stay the same)."""
    for name in CODE:
        path = project / name
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            shutil.rmtree(path)
    if commit is None:
        for name in CODE:
            if (REPO / name).is_dir():
                shutil.copytree(REPO / name, project / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(REPO / name, project / name)
        return
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, *CODE], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(project, filter="tar")


def dev_stack_for(lab: SimLab) -> str:
    """Pulumi.dev.yaml with each host's address on ``lab``."""
    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    for host in document["config"]["dslab:hosts"]:
        host["address"] = lab.address(host["name"])
    return yaml.safe_dump(document, sort_keys=False)


class Stack:
    """One stack of the project copy, driven through the built CLI."""

    def __init__(self, cli: PulumiCli, name: str) -> None:
        self.cli = cli
        self.name = name

    def pulumi(self, *args: str, check: bool = True, timeout: float = 1800) -> str:
        return self.cli.run(*args, "--stack", self.name, check=check, timeout=timeout).stdout

    def attempt(self, *args: str, timeout: float = 1800) -> tuple[int, str]:
        """Runs a command expected to fail: its exit code and its stdout and stderr together."""
        completed = self.cli.run(*args, "--stack", self.name, check=False, timeout=timeout)
        return completed.returncode, completed.stdout + completed.stderr

    def config_value(self, key: str) -> Any:
        """The stack file's value of `dslab:KEY` (None when it has none)."""
        path = self.cli.project_dir / f"Pulumi.{self.name}.yaml"
        return yaml.safe_load(path.read_text(encoding="utf-8"))["config"].get(f"dslab:{key}")

    def merge_config(self, change: dict[str, Any]) -> None:
        """Sets top-level keys (without the dslab: namespace) in the stack file; a mapping is
        merged one level deep into the one there, anything else replaces it."""
        path = self.cli.project_dir / f"Pulumi.{self.name}.yaml"
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for key, value in change.items():
            current = document["config"].get(f"dslab:{key}")
            if isinstance(value, dict) and isinstance(current, dict):
                value = {**current, **value}
            document["config"][f"dslab:{key}"] = value
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")

    def preview_changes(self, *args: str) -> dict[str, dict[str, Any]]:
        """`pulumi preview --json ARGS`: the steps that would change something, by resource
        name (the project's refresh before every preview adds a `refresh` step per resource)."""
        preview = json.loads(self.pulumi("preview", "--json", *args))
        return {
            step["urn"].rsplit("::", 1)[-1]: step
            for step in preview.get("steps", [])
            if step.get("op") not in ("same", "read", "refresh")
        }

    def outputs(self) -> dict[str, object]:
        return self.cli.outputs(self.name)

    def urn_of(self, resource_name: str) -> str:
        """The URN of the resource with this name, from the stack's state."""
        exported = json.loads(self.cli.run("stack", "export", "--stack", self.name).stdout)
        for resource in exported["deployment"].get("resources") or []:
            if resource["urn"].rsplit("::", 1)[-1] == resource_name:
                return str(resource["urn"])
        raise AssertionError(f"no resource {resource_name} in stack {self.name}")
