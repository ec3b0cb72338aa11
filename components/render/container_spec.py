"""A node's training container as the configuration describes it: a typed spec the
`docker.Container` is made from (and, for the bench's hand-written floor, `docker run` args)."""

from __future__ import annotations

from dataclasses import dataclass

from components.config.address_plan import AddressPlan
from components.config import Host, LabConfig, Mount
from components.config import GpuRequestValue, size_to_mb
from components.render.results import RESULTS_MOUNT, host_results_dir
from components.render.workload_inputs import workload_mounts


def gpus_value(gpus: GpuRequestValue) -> str | None:
    """docker's `--gpus` value for a GPU request: all, a count, or device ids; None for "none"."""
    if gpus == "none":
        return None
    if gpus == "all" or isinstance(gpus, int):
        return str(gpus)
    # docker parses the value as CSV: the quotes keep "device=0,1" one field
    return '"device=' + ",".join(str(device) for device in gpus) + '"'


def interface_subnet(config: LabConfig, host: Host) -> str:
    """The subnet whose address names the container's NCCL/gloo interface (the entrypoint's
    DSLAB_OVERLAY_SUBNET): the overlay's, or in host mode the host's own address."""
    return f"{host.address}/32" if config.network.mode == "host" else config.network.subnet


@dataclass(frozen=True)
class ContainerSpec:
    """Everything about one host's container that comes from the configuration."""

    name: str
    hostname: str
    image: str
    """The image tag (name:content hash)."""
    network: str | None
    """The overlay network's name; None: the host's network."""
    address: str
    """The static overlay address from the plan, or the host's own address in host mode."""
    shm_size_mb: int
    restart: str
    ulimits: tuple[tuple[str, int, int], ...]
    """(name, soft, hard), sorted by name."""
    gpus: str | None
    """docker's `--gpus` value; None: no GPUs."""
    mounts: tuple[Mount, ...]
    env: tuple[tuple[str, str], ...]
    """Sorted by name."""
    labels: tuple[tuple[str, str], ...]


def container_spec(
    config: LabConfig, host: Host, image: str, owner: str, plan: AddressPlan, *, results_dir: str | None = None
) -> ContainerSpec:
    """`host`'s container, at its address in `plan`, mounting RESULTS_DIR (default: the
    configured one) for the runs' results. Nothing in it depends on the other hosts: adding,
    removing or reordering hosts leaves it as it is (the SSH mesh tells each container where the
    others are)."""
    container = config.container
    gpus = gpus_value(host.gpus)
    labels = [("dslab.host", host.name), ("dslab.owner", owner)]
    if gpus is not None:
        # The engine reports any GPU request as "all": the label keeps the one asked for.
        labels.append(("dslab.gpus", gpus))
    environment = {
        **container.env,
        **host.overrides.env,
        "DSLAB_OVERLAY_SUBNET": interface_subnet(config, host),
        "DSLAB_SSH_PORT": str(config.container_ssh_port),
    }
    return ContainerSpec(
        name=container.name,
        hostname=host.name,
        image=image,
        network=config.network.name if config.network.mode == "overlay" else None,
        address=config.node_address(host.name, plan),
        shm_size_mb=size_to_mb(host.overrides.shm_size or container.shm_size),
        restart=container.restart,
        ulimits=tuple((name, limit.soft, limit.hard) for name, limit in sorted(container.ulimits.items())),
        gpus=gpus,
        mounts=(
            *container.mounts,
            *host.overrides.mounts,
            *workload_mounts(config),
            Mount(source=results_dir or host_results_dir(config, owner), target=RESULTS_MOUNT),
        ),
        env=tuple(sorted(environment.items())),
        labels=tuple(sorted(labels)),
    )


def docker_run_args(spec: ContainerSpec) -> list[str]:
    """The same container as `docker run --detach --name NAME` arguments (the bench's
    hand-written floor runs it so)."""
    if spec.network is None:
        network = ["--network", "host"]
    else:
        network = ["--network", spec.network, "--ip", spec.address, "--network-alias", spec.hostname]
    args = ["--hostname", spec.hostname, *network, "--shm-size", f"{spec.shm_size_mb}m", "--restart", spec.restart]
    for key, value in spec.labels:
        args += ["--label", f"{key}={value}"]
    for name, soft, hard in spec.ulimits:
        args += ["--ulimit", f"{name}={soft}:{hard}"]
    if spec.gpus is not None:
        args += ["--gpus", spec.gpus]
    for mount in spec.mounts:
        args += ["--volume", f"{mount.source}:{mount.target}" + (":ro" if mount.read_only else "")]
    for name, value in spec.env:
        args += ["--env", f"{name}={value}"]
    args.append(spec.image)
    return args
