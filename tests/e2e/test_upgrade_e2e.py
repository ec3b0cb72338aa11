"""A stack made by the release before container addresses belonged to their hosts upgrades
without moving anything: its first `up` with this code keeps every container (and so its
address), on the simulated 2-host lab.

The release's program is taken from git (`git archive`), run once, then the project's code is
swapped for this checkout's, on the same stack and state.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy
from tests.support.sim_hosts import hosts_up, inspect

pytestmark = [pytest.mark.e2e, pytest.mark.program]

RELEASE = "eb60724f66f1f137f431e9497235d8250d09c7fc"
"""The last release that gave container addresses by the host's place in the list."""
CODE = ("Pulumi.yaml", "__main__.py", "components", "assets")
HOSTS = ("server1", "server2")
STACK = "dev"


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


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    known = subprocess.run(["git", "-C", str(REPO), "cat-file", "-e", f"{RELEASE}^{{commit}}"], capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"this clone does not hold the release {RELEASE[:12]} (a shallow clone?)")
    ensure_toolchain()
    hosts_up(len(HOSTS))
    work = tmp_path_factory.mktemp("upgrade-e2e")
    project = project_copy(work, (STACK,))
    cli = PulumiCli(project_dir=project, state_dir=work / "state")
    cli.run("stack", "init", STACK)
    yield Stack(cli, STACK)
    use_code(project, None)
    cli.run("destroy", "--yes", "--stack", STACK, check=False)


def containers() -> dict[str, tuple[str, str]]:
    """Host -> (container id, overlay address)."""
    found = {}
    for host in HOSTS:
        container = inspect(host, "container", "llm")
        assert container is not None, f"{host} runs its container"
        found[host] = (str(container["Id"]), str(container["NetworkSettings"]["Networks"]["test-net"]["IPAddress"]))
    return found


def test_the_first_up_with_this_code_keeps_every_container_of_a_stack_the_release_made(stack: Stack) -> None:
    use_code(stack.cli.project_dir, RELEASE)
    # The mesh is what training needs; the run itself is not what this is about.
    stack.merge_config({"training": {"launch": False}})
    stack.pulumi("up", "--yes")
    before = containers()
    assert stack.outputs()["container_ips"] == {host: address for host, (_id, address) in before.items()}

    use_code(stack.cli.project_dir, None)
    steps = stack.preview_changes("--diff")
    moved = {name: step["op"] for name, step in steps.items() if name.endswith(("-llm", "-docker", "test-net"))}
    assert not moved, f"no container, engine or network changes: {moved}"

    stack.pulumi("up", "--yes")
    assert containers() == before, "the same containers at the same addresses"
    assert stack.outputs()["container_ips"] == {host: address for host, (_id, address) in before.items()}
    stack.pulumi("preview", "--expect-no-changes")
