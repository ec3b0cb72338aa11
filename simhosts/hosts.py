"""Simulated servers: one container each on the machine's engine, running dockerd and sshd."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

from simhosts import paths
from simhosts.images import BASE_IMAGE, HASH_LABEL, HOST_IMAGE
from simhosts.plan import HOST_LABEL, LABEL, HostSpec, SimLab
from simhosts.proc import docker, feed_file, run

# What a nested dockerd needs, measured on this machine:
# --privileged fails (CAP_SYS_RESOURCE is not in the machine's bounding set).
_HOST_PRIVILEGES = [
    "--cap-add=ALL", "--cap-drop=SYS_RESOURCE",
    "--security-opt", "seccomp=unconfined",
    # Overlay networks write to /proc/sys; without this it is read-only.
    "--security-opt", "systempaths=unconfined",
    "--device-cgroup-rule", "a *:* rwm",
    # For userspace IPsec (network.ipsec: strongswan), as on a real server.
    "--device", "/dev/net/tun",
    "--cgroupns", "host",
    "--volume", "/sys/fs/cgroup:/sys/fs/cgroup:rw",
]
SPEC_LABEL = "dslab.host-spec"
_HOST_ENV = ("DSLAB_HOST_NAME", "DSLAB_CGROUP_PARENT", "DSLAB_NAMESERVERS")
HOST_SPEC = hashlib.sha256(json.dumps([_HOST_PRIVILEGES, _HOST_ENV]).encode()).hexdigest()[:16]
"""Changes with the privileges and the settings a host gets: a host container made with others
is made again."""
HOST_KEY_TYPES = ("ed25519", "ecdsa", "rsa")
CGROUP_ROOT = Path("/sys/fs/cgroup")


def state(host: HostSpec) -> str | None:
    """Return the host container's state (``running``, ``exited``...), None when absent."""
    out = docker("container", "inspect", "--format", "{{.State.Status}}", host.container, check=False)
    return out or None


def ensure_host(lab: SimLab, host: HostSpec, nameservers: list[str]) -> None:
    """Create and start the host container, or start it when it exists but is stopped; one
    made with other privileges or from another host image (an older lab) is made again."""
    current = state(host)
    if current is not None and (_spec(host) != HOST_SPEC or _image(host) != _image_id(HOST_IMAGE)):
        # Its engine's data is in the volume, which stays: images and swarm state survive.
        docker("rm", "--force", host.container)
        current = None
    if current == "running":
        return
    if current is not None:
        docker("start", host.container)
        return
    labels = ["--label", f"{LABEL}={lab.label_value}", "--label", f"{HOST_LABEL}={host.name}"]
    docker("volume", "create", *labels, host.volume)
    docker(
        "run", "--detach",
        "--name", host.container,
        "--hostname", host.name,
        "--network", lab.network_name, "--ip", host.address,
        *labels, "--label", f"{SPEC_LABEL}={HOST_SPEC}",
        # docker-init as PID 1 reaps the orphans a server's daemons leave behind.
        "--init",
        *_HOST_PRIVILEGES,
        "--volume", f"{host.volume}:/var/lib/docker",
        "--env", f"DSLAB_HOST_NAME={host.name}",
        # Cgroups are shared with the machine (--cgroupns host): the host's engine puts its
        # containers under a parent named like the host container, unique across labs.
        "--env", f"DSLAB_CGROUP_PARENT=/{host.container}",
        "--env", f"DSLAB_NAMESERVERS={' '.join(nameservers)}",
        HOST_IMAGE,
    )


def _image(host: HostSpec) -> str:
    return docker("container", "inspect", "--format", "{{.Image}}", host.container, check=False)


def _image_id(image: str) -> str:
    return docker("image", "inspect", "--format", "{{.Id}}", image, check=False)


def _spec(host: HostSpec) -> str:
    return docker("container", "inspect", "--format", f'{{{{ index .Config.Labels "{SPEC_LABEL}" }}}}', host.container, check=False)


def wait_ready(host: HostSpec, timeout: float = 120) -> None:
    """Wait until the host's engine answers and its sshd listens."""
    _wait(host, ["dslab-ready"], "engine + sshd", timeout)


def make_bastion(host: HostSpec, timeout: float = 120) -> None:
    """The host as a jump host: its network restored, sshd only (its engine stopped)."""
    wait_sshd(host, timeout)
    docker("exec", host.container, "dslab-netcut", "restore")
    docker("exec", host.container, "dslab-engine", "stop")


def wait_sshd(host: HostSpec, timeout: float = 120) -> None:
    """Wait until the host's sshd listens on port 22."""
    _wait(host, ["ss", "-Hltn", "sport = :22"], "sshd", timeout, need_output=True)


GOSSIP_PORT = paths.REPO_ROOT / "assets" / "host" / "lib" / "gossip-port.sh"
"""The program's own check of swarm's gossip port (TCP 7946), run inside the host."""


def resume_engine(host: HostSpec) -> None:
    """Wake the host's dockerd if it is frozen (SIGCONT); nothing when it runs or is stopped."""
    docker("exec", host.container, "sh", "-c", '[ ! -s /run/docker.pid ] || kill -CONT "$(cat /run/docker.pid)" 2>/dev/null || true')


def heal(host: HostSpec, timeout: float = 120) -> None:
    """Undo injected faults on a running host: restore its network, wake a frozen engine, start
    a stopped one; restart an engine that is in no swarm yet still holds swarm's gossip port."""
    # sshd listening means the entrypoint has finished starting the engine; starting it
    # before then would race the entrypoint.
    wait_sshd(host, timeout)
    docker("exec", host.container, "dslab-netcut", "restore")
    # A frozen engine answers nothing: `dslab-engine start` would wait on it for good.
    resume_engine(host)
    docker("exec", host.container, "dslab-engine", "start")
    if _gossip_port_stuck(host):
        # A worker that left while its manager left too can keep it for good (moby/moby#31913):
        # the program's next join there fails asking for this restart (docs/reliability.md).
        docker("exec", host.container, "dslab-engine", "stop")
        docker("exec", host.container, "dslab-engine", "start")


def _gossip_port_stuck(host: HostSpec) -> bool:
    return swarm_state(host) == "inactive" and gossip_port(host, "gossip_port_held")


def swarm_state(host: HostSpec) -> str:
    """The host engine's swarm state: ``inactive``, ``active``, ... (empty when it does not answer)."""
    swarm = run(["docker", "exec", host.container, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}"], check=False)
    return swarm.stdout.strip()


def gossip_port(host: HostSpec, function: str) -> bool:
    """Runs FUNCTION of the program's gossip-port library (GOSSIP_PORT) inside the host: whether it succeeded."""
    script = GOSSIP_PORT.read_text(encoding="utf-8") + f"\n{function}\n"
    return run(["docker", "exec", host.container, "bash", "-c", script], check=False).returncode == 0


def _wait(host: HostSpec, argv: list[str], what: str, timeout: float, need_output: bool = False) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if state(host) == "running":
            result = run(["docker", "exec", host.container, *argv], check=False, timeout=30)
            if result.returncode == 0 and (result.stdout.strip() or not need_output):
                return
        time.sleep(0.5)
    logs = docker("logs", "--tail", "20", host.container, check=False)
    raise TimeoutError(f"{host.name} not ready after {timeout:.0f} s ({what}); its log:\n{logs}")


def authorize(host: HostSpec, public_keys: str) -> None:
    """Make ``public_keys`` (one a line) root's only authorized keys on the host."""
    run(["docker", "exec", "--interactive", host.container, "dslab-authorize"], input_text=public_keys.strip() + "\n")


def run_fault_script(host: HostSpec, script: str) -> None:
    """simhosts/assets/faults/SCRIPT, run by sh inside the host."""
    run_script(host, paths.ASSETS / "faults" / script)


def run_script(host: HostSpec, script: Path) -> None:
    """SCRIPT (a file of ours), run by sh inside the host."""
    text = script.read_text(encoding="utf-8")
    run(["docker", "exec", "--interactive", host.container, "sh", "-s"], input_text=text)


def host_keys(host: HostSpec) -> list[str]:
    """Return the host's public host keys (``type base64``), read through the engine, not the network."""
    files = [f"/etc/ssh/ssh_host_{kind}_key.pub" for kind in HOST_KEY_TYPES]
    out = docker("exec", host.container, "cat", *files)
    return [" ".join(line.split()[:2]) for line in out.splitlines() if line.strip()]


def ensure_base_image_inside(host: HostSpec, base_hash: str, tarball: Path) -> bool:
    """Load ``local/debian:trixie`` into the host's own engine unless present; return whether loaded."""
    label_format = f'{{{{ index .Config.Labels "{HASH_LABEL}" }}}}'
    current = run(
        ["docker", "exec", host.container, "docker", "image", "inspect", "--format", label_format, BASE_IMAGE],
        check=False,
    ).stdout.strip()
    if current == base_hash:
        return False
    feed_file(tarball, ["docker", "exec", "--interactive", host.container, "docker", "load", "--quiet"])
    return True


def lab_containers(lab: SimLab) -> list[str]:
    """Names of every host container of ``lab``, running or not."""
    out = docker("ps", "--all", "--filter", f"label={LABEL}={lab.label_value}", "--format", "{{.Names}}")
    return sorted(out.split())


def lab_volumes(lab: SimLab) -> list[str]:
    """Names of every volume of ``lab``."""
    out = docker("volume", "ls", "--quiet", "--filter", f"label={LABEL}={lab.label_value}")
    return sorted(out.split())


def remove_container(container: str) -> None:
    """Stop the host (its engine shuts down cleanly) and remove the container and its cgroups."""
    docker("stop", "--time", "30", container, check=False)
    docker("rm", "--force", "--volumes", container, check=False)
    remove_cgroups(container)


def remove_cgroups(container: str) -> None:
    """Remove the cgroup subtrees the host's engine made (``/<controller>/<container>``).

    Cgroups are shared with the machine (``--cgroupns host``), so they outlive the container.
    """
    for controller in CGROUP_ROOT.iterdir():
        top = controller / container
        if not top.is_dir():
            continue
        # Depth first: a cgroup directory can only be removed once it has no children.
        for directory in sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
            directory.rmdir()
        top.rmdir()
