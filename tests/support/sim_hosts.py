"""Looking at the simulated hosts the way an operator would: ssh with strict host keys.

Every helper works on the lab that ``DSLAB_LAB`` names (0 when unset): a test module runs on one
lab, and modules on other labs run beside it (``harness.lanes``)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from components.config import load_stack_file
from components.render.build_context import training_image_source
from harness.pulumi_cli import REPO
from simhosts.plan import lab_from_env

LAB = lab_from_env()
"""The lab this test process works on."""
STATE_DIR = LAB.state_dir(REPO)
"""The lab's operator files: key, known_hosts, ssh config."""
SSH_CONFIG = STATE_DIR / "ssh_config"


def address(host: str) -> str:
    """The host's address on this lab's network (lab 0: ``server2`` is 10.0.18.2)."""
    return LAB.address(host)


def hosts_up(hosts: int = 2, bastion: bool = False) -> None:
    """The lab's hosts up, behind its bastion (the operator's direct routes dropped) or not."""
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "simhosts", "--lab", str(LAB.id), "up", "--hosts", str(hosts),
         *(["--bastion"] if bastion else [])],
        cwd=REPO, check=True,
    )  # fmt: skip


def on_host(host: str, *command: str, check: bool = True) -> str:
    """Runs `command` on the host (argv, quoted for the remote shell) and returns stdout."""
    import shlex

    result = subprocess.run(
        ["ssh", "-F", str(SSH_CONFIG), host, shlex.join(command)], capture_output=True, text=True, timeout=300
    )
    if check and result.returncode != 0:
        raise AssertionError(f"on {host}: {shlex.join(command)} exited {result.returncode}: {result.stderr}")
    return result.stdout


def inspect(host: str, kind: str, name: str) -> dict[str, Any] | None:
    """`docker KIND inspect NAME` on the host, or None when there is no such thing."""
    output = on_host(host, "docker", kind, "inspect", name, check=False)
    items = json.loads(output) if output.strip() else []
    return items[0] if items else None


def host_fault(kind: str, host: str, check: bool = True) -> None:
    """`python -m simhosts fault KIND HOST`: engine-stop/start, engine-hang/resume, network-cut/restore,
    host-stop/start, sshd-stop/start."""
    subprocess.run(
        [str(REPO / ".venv" / "bin" / "python"), "-m", "simhosts", "--lab", str(LAB.id), "fault", kind, host],
        cwd=REPO, check=check,
    )


BUILD_CACHE_REPOSITORY = "dslab-test-cache"


def keep_build_cache(hosts: tuple[str, ...] = ("server1", "server2")) -> None:
    """Tags every `dslab/*` image on the hosts under `dslab-test-cache/`, which no destroy
    removes: the engines' classic builder (the release's, which the upgrade test runs) caches
    layers only in images it still holds, so without this every module's release build started
    from nothing (~4 min on 2 cores). This version's builds go through the engine's BuildKit,
    whose cache outlives the images. The simulator's `down` removes the tags with the hosts."""
    for host in hosts:
        images = on_host(host, "docker", "images", "--format", "{{.Repository}}:{{.Tag}}", "--filter", "reference=dslab/*")
        for image in images.split():
            on_host(host, "docker", "tag", image, cached_name(image))


def cached_name(tag: str) -> str:
    """The name keep_build_cache keeps the image of TAG under (`dslab/train:X` -> `dslab-test-cache/train:X`)."""
    return f"{BUILD_CACHE_REPOSITORY}/{tag.split('/', 1)[1]}"


def reuse_built_images(project: Path, stack: str, hosts: tuple[str, ...] = ("server1", "server2")) -> None:
    """The training image STACK's file (in PROJECT) names, when an earlier module built it on this
    lab (keep_build_cache kept it), tagged back under its own name on each host: the lab as after a
    destroy that kept the image, so the module's first `up` neither builds nor copies it again
    (~1-2 min saved per module; the program's module starts cold and proves that path). Only
    that tag: whatever else `destroy` leaves is still found."""
    config = load_stack_file(project / f"Pulumi.{stack}.yaml")
    tag = training_image_source(config.image, project).tag
    cached = cached_name(tag)
    for host in hosts:
        if on_host(host, "docker", "image", "inspect", "--format", "{{.Id}}", cached, check=False).strip():
            on_host(host, "docker", "tag", cached, tag)


def wait_for_sshd(host: str, container: str = "llm", timeout: float = 60) -> None:
    """Until the container's entrypoint marked it ready again and its sshd runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if on_host(host, "docker", "exec", container, "sh", "-c", "test -e /run/dslab/ready && pgrep -x sshd", check=False):
            return
        time.sleep(1)
    raise AssertionError(f"sshd did not come back in {host}'s container within {timeout} s")
