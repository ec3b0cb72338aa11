"""The `docker run` arguments of a node's training container, from the configuration."""

from __future__ import annotations

from components.config import Host, LabConfig
from components.types import GpuRequestValue
from components.workload_inputs import workload_mounts


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
    plan (or, in host mode, the hosts' addresses), so names resolve even before Docker's
    DNS has seen the other containers and stay right after a container is recreated.
    """
    container = config.container
    shm_size = host.overrides.shm_size or container.shm_size
    if config.network.mode == "host":
        network = ["--network", "host"]
        # The entrypoint finds the interface holding this "subnet": the host's own address.
        interface_subnet = f"{host.address}/32"
    else:
        network = [
            "--network", config.network.name,
            "--ip", config.node_address(host.name),
            "--network-alias", host.name,
        ]  # fmt: skip
        interface_subnet = config.network.subnet
    args = [
        "--hostname", host.name,
        *network,
        "--shm-size", shm_size,
        "--restart", container.restart,
        "--label", f"dslab.owner={owner}",
        "--label", f"dslab.host={host.name}",
    ]  # fmt: skip
    for name, limit in sorted(container.ulimits.items()):
        args += ["--ulimit", f"{name}={limit.soft}:{limit.hard}"]
    for other in config.hosts:
        if other.name != host.name:
            args += ["--add-host", f"{other.name}:{config.node_address(other.name)}"]
    args += gpus_flag(host.gpus)
    for mount in (*container.mounts, *host.overrides.mounts, *workload_mounts(config)):
        args += ["--volume", f"{mount.source}:{mount.target}" + (":ro" if mount.read_only else "")]
    environment = {
        **container.env,
        **host.overrides.env,
        "DSLAB_OVERLAY_SUBNET": interface_subnet,
        "DSLAB_SSH_PORT": str(config.container_ssh_port),
    }
    for name, value in sorted(environment.items()):
        args += ["--env", f"{name}={value}"]
    args.append(image)
    return args
