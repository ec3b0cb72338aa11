"""A stack made by the release (whose steps were RemoteScripts, a dynamic provider this code no
longer has) upgrades: `pulumi up` with this code stops with one line that names the command,
`make upgrade` forgets the retired steps in the state, and the next `up` takes the stack over:
every container at its address, the mesh working, and a destroy that leaves nothing on the
simulated 2-host lab.

The release's program is taken from git (`git archive`), run once, then the project's code is
swapped for this checkout's, on the same stack and state.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest

from harness.pulumi_cli import REPO, PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy, use_code
from tests.support.sim_hosts import hosts_up, inspect, keep_build_cache, on_host

pytestmark = [pytest.mark.e2e, pytest.mark.program]

RELEASE = "eb60724f66f1f137f431e9497235d8250d09c7fc"
"""The last release that gave container addresses by the host's place in the list."""
HOSTS = ("server1", "server2")
STACK = "dev"


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


def forget_retired(stack: Stack) -> str:
    """What `make upgrade STACK=dev` runs, in the project."""
    project = stack.cli.project_dir
    completed = subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), str(project / "assets" / "operator" / "forget-retired.py"), STACK],
        cwd=project, env=stack.cli.env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_a_stack_the_release_made_is_taken_over_after_one_upgrade_command(stack: Stack) -> None:
    use_code(stack.cli.project_dir, RELEASE)
    # The mesh is what training needs; the run itself is not what this is about. The release
    # knew no output_dir_flag (it refuses keys it does not know): the dev stack's workload
    # without it.
    workload = {"kind": "script", "entrypoint": "/opt/dslab/train_tiny.py", "args": ["--steps", "20"]}
    stack.merge_config({"training": {"launch": False, "workload": workload}})
    stack.pulumi("up", "--yes")
    keep_build_cache()  # the release's classic builder finds its layers on the next run
    before = containers()

    use_code(stack.cli.project_dir, None)
    code, output = stack.attempt("up", "--yes")
    assert code != 0, "the retired steps stop the up"
    assert "run `make upgrade STACK=<this stack>` once, then `pulumi up`" in output, output[-3000:]
    assert containers() == before, "before anything changed"

    said = forget_retired(stack)
    assert said.startswith(f"{STACK}: forgot ") and "now run `pulumi up`" in said, said
    release_tags = re.findall(r"the older version's image (\S+) stays on server1, server2", said)
    assert len(release_tags) == 1 and release_tags[0].startswith("dslab/train:"), said
    assert forget_retired(stack).startswith(f"{STACK}: nothing to forget"), "a second run changes nothing"
    stack.pulumi("up", "--yes")
    after = containers()
    # The engine's builder makes the image again (another id), so the containers are new ones,
    # each at the address its host held.
    assert {host: address for host, (_id, address) in after.items()} == {
        host: address for host, (_id, address) in before.items()
    }
    assert stack.outputs()["container_ips"] == {host: address for host, (_id, address) in after.items()}
    login = on_host(
        "server1", "docker", "exec", "llm",
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "server2", "hostname", check=False,
    )  # fmt: skip
    assert login.strip() == "server2", "the manager logs in to the worker with strict host keys: the mesh was made anew"
    stack.pulumi("preview", "--expect-no-changes")
    for host in HOSTS:
        # What the upgrade said to do with the release's image, now that `up` has run (refused
        # where this version's image has the same tag: its container uses it).
        on_host(host, "docker", "image", "rm", release_tags[0], check=False)

    stack.pulumi("destroy", "--yes")
    for host in HOSTS:
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"{host}: no container left"
        assert on_host(host, "docker", "volume", "ls", "--quiet").strip() == "", f"{host}: no claim left"
        assert on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip() == "inactive"
        images = on_host(host, "docker", "images", "--quiet", "dslab/train").split()
        assert images == [], f"{host}: no image of ours is left tagged"
        # A release image whose tag this version took is left untagged, as the upgrade says.
        on_host(host, "docker", "image", "prune", "--force")
        dangling = on_host(host, "docker", "images", "--quiet", "--filter", "dangling=true").split()
        assert dangling == [], f"{host}: nothing else once pruned"
