"""The `docker run` arguments of a node's training container, from the configuration."""

from __future__ import annotations

from components.address_plan import AddressPlan
from components.config import Host, LabConfig
from components.types import GpuRequestValue
from components.workload_inputs import workload_mounts

SSH_PORT_IN_CONTAINER = 22


def gpus_flag(gpus: GpuRequestValue) -> list[str]:
    """`--gpus` for a GPU request: all, a count, or device ids; nothing for "none"."""
    if gpus == "none":
        return []
    if gpus == "all":
        return ["--gpus", "all"]
    if isinstance(gpus, int):
        return ["--gpus", str(gpus)]
    # docker wants the quotes: --gpus '"device=0,1"'
    return ["--gpus", '"device=' + ",".join(str(device) for device in gpus) + '"']


def docker_run_args(config: LabConfig, host: Host, image: str, owner: str) -> list[str]:
    """Everything after `docker run --detach --name NAME` for `host`'s container.

    Every other node is in /etc/hosts by name (`--add-host`), from the static address
    plan, so names resolve even before Docker's DNS has seen the other containers and
    stay right after a container is recreated.
    """
    container = config.container
    plan: AddressPlan = config.address_plan()
    address = plan.address_of(host.name)
    shm_size = host.overrides.shm_size or container.shm_size
    args = [
        "--hostname", host.name,
        "--network", config.network.name,
        "--ip", address,
        "--network-alias", host.name,
        "--shm-size", shm_size,
        "--restart", container.restart,
        "--label", f"dslab.owner={owner}",
        "--label", f"dslab.host={host.name}",
    ]  # fmt: skip
    for name, limit in sorted(container.ulimits.items()):
        args += ["--ulimit", f"{name}={limit.soft}:{limit.hard}"]
    for other, other_address in plan.container_addresses:
        if other != host.name:
            args += ["--add-host", f"{other}:{other_address}"]
    args += gpus_flag(host.gpus)
    for mount in (*container.mounts, *host.overrides.mounts, *workload_mounts(config)):
        args += ["--volume", f"{mount.source}:{mount.target}" + (":ro" if mount.read_only else "")]
    environment = {
        **container.env,
        **host.overrides.env,
        "DSLAB_OVERLAY_SUBNET": config.network.subnet,
        "DSLAB_SSH_PORT": str(SSH_PORT_IN_CONTAINER),
    }
    for name, value in sorted(environment.items()):
        args += ["--env", f"{name}={value}"]
    args.append(image)
    return args
