"""The whole stack configuration (`LabConfig`) and its cross-section rules."""

from __future__ import annotations

import ipaddress
from collections.abc import Collection, Mapping
from typing import Any

from pydantic import Field, model_validator

from components.config.address_plan import AddressPlan, AddressPlanError, plan_addresses, static_candidates
from components.config.base import FrozenModel, Loc, Problems
from components.config.container import ContainerConfig
from components.config.hosts import Host, Hosts
from components.config.image import ImageConfig
from components.config.jump_host import JumpHost
from components.config.network import NetworkConfig
from components.config.on_change import Effect, on_change
from components.config.operator import OperatorConfig
from components.config.training import TrainingConfig

HOST_MODE_SSH_PORT = 2222
"""The container's sshd port on the hosts' network, clear of the host's own sshd on 22."""


class LabConfig(FrozenModel):
    """The whole stack configuration (the ``dslab:`` namespace)."""

    hosts: Hosts = Field(
        description="The servers; exactly one has role manager.",
        examples=[[{"name": "server1", "address": "10.0.18.1", "role": "manager"}]],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "a host added or removed gets or loses its own container, the others keep theirs; any change "
            "to the list or its order is a new run (the hostfile)",
        ),
    )
    operator: OperatorConfig = Field(
        description="ssh key and known_hosts of the machine running Pulumi.",
        examples=[
            {
                "private_key_path": "~/.ssh/id_ed25519",
                "known_hosts_path": "~/.ssh/known_hosts",
            }
        ],
        json_schema_extra=on_change(Effect.NOTHING, "how this machine reaches the hosts"),
    )
    network: NetworkConfig = Field(
        default_factory=NetworkConfig,
        description="The overlay network the containers share, or the hosts' own (mode: host).",
        examples=[{"subnet": "10.0.3.0/24", "encrypted": True}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "every key: a new overlay, every container"),
    )
    image: ImageConfig = Field(
        default_factory=ImageConfig,
        description="The training image built on (or copied to) every host.",
        examples=[{"variant": "cpu"}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "a new image: every container, and a new run"),
    )
    container: ContainerConfig = Field(
        default_factory=ContainerConfig,
        description="The training container every host runs.",
        examples=[{"shm_size": "1G"}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "every container; restart is changed in place"),
    )
    training: TrainingConfig = Field(
        default_factory=TrainingConfig,
        description="The run: the workload, DeepSpeed's settings, the preflight, how pulumi up treats the run.",
        examples=[{"wait": False}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, "the most one of its keys does; most make a new run"),
    )

    @model_validator(mode="before")
    @classmethod
    def _gpus_follow_image_variant(cls, data: Any) -> Any:
        # A host without `gpus` gets all GPUs on a gpu image and none on a cpu image:
        # the least surprising default either way.
        if not isinstance(data, Mapping) or not isinstance(data.get("hosts"), list | tuple):
            return data
        image = data.get("image")
        variant = image.get("variant", "gpu") if isinstance(image, Mapping) else "gpu"
        default = "none" if variant == "cpu" else "all"
        hosts = [
            {**host, "gpus": default} if isinstance(host, Mapping) and "gpus" not in host else host
            for host in data["hosts"]
        ]
        return {**data, "hosts": hosts}

    @model_validator(mode="after")
    def _cross_section_rules(self) -> LabConfig:
        problems = self._host_mode_problems() if self.network.mode == "host" else self._address_problems()
        for loc, jump in self.jump_hosts:
            for index, host in enumerate(self.hosts):
                if (host.address, host.ssh_port) == (jump.address, jump.port):
                    problems.add(
                        (*loc, "address"),
                        f"{jump.address}:{jump.port} is hosts[{index}] ({host.name}); a jump host is the "
                        "login node in front of the lab, not one of its hosts: remove it from hosts, or "
                        "give the bastion's own address",
                    )
        batch = self._batch_problem()
        if batch is not None:
            problems.add(("training", "deepspeed", "train_batch_size"), batch)
        problems.raise_if_any()
        return self

    def _address_problems(self) -> Problems:
        problems = Problems()
        network = self.network
        subnet = ipaddress.IPv4Network(network.subnet)
        dynamic = ipaddress.IPv4Network(network.effective_ip_range)
        gateway = ipaddress.IPv4Address(network.gateway)
        for index, host in enumerate(self.hosts):
            if ipaddress.IPv4Address(host.address) in subnet:
                problems.add(
                    ("network", "subnet"),
                    f"{network.subnet!r} contains hosts[{index}].address "
                    f"{host.address}; the overlay must not overlap the hosts' own network: pick "
                    f"another private range, e.g. {self._free_subnet_example()}",
                )
        seen: dict[str, int] = {}
        for index, host in enumerate(self.hosts):
            if host.container_address is None:
                continue
            where: Loc = ("hosts", index, "container_address")
            address = ipaddress.IPv4Address(host.container_address)
            value = host.container_address
            example = self._free_example()
            if address not in subnet:
                problems.add(
                    where,
                    f"{value!r} is outside network.subnet {network.subnet}; pick an "
                    f"address in it outside ip_range {dynamic}, e.g. {example}",
                )
            elif address == subnet.network_address:
                problems.add(
                    where,
                    f"{value!r} is the network address of {network.subnet}; e.g. {example}",
                )
            elif address == subnet.broadcast_address:
                problems.add(
                    where,
                    f"{value!r} is the broadcast address of {network.subnet}; e.g. {example}",
                )
            elif address == gateway:
                problems.add(where, f"{value!r} is the overlay gateway; e.g. {example}")
            elif address in dynamic:
                problems.add(
                    where,
                    f"{value!r} is inside network.ip_range {dynamic}, where swarm "
                    f"allocates its own endpoints; pick one outside it, e.g. {example}",
                )
            if value in seen:
                problems.add(
                    where,
                    f"{value!r} is also the container_address of hosts[{seen[value]}]; "
                    f"every container needs its own address, e.g. {example}",
                )
            seen.setdefault(value, index)
        if not problems:
            try:
                self.address_plan()  # worked out now, so a plan that cannot be made names the field
            except AddressPlanError as error:
                problems.add(("network", "subnet"), str(error))
        return problems

    def _host_mode_problems(self) -> Problems:
        """With the hosts' network: no overlay settings, and no port the host's sshd holds."""
        problems = Problems()
        port = self.container_ssh_port
        for index, host in enumerate(self.hosts):
            if host.ssh_port == port:
                problems.add(
                    ("container", "ssh_port"),
                    f"{port} is hosts[{index}].ssh_port, where {host.name}'s own sshd listens; "
                    "with network.mode host the container shares the host's ports: pick "
                    f"another, e.g. {2222 if port != 2222 else 2223}",
                )
            if host.container_address is not None:
                problems.add(
                    ("hosts", index, "container_address"),
                    f"{host.container_address!r} has no use with network.mode host (containers "
                    "use the host's address); remove it, or set network.mode: overlay",
                )
        if self.network.encrypted:
            problems.add(
                ("network", "encrypted"),
                "encrypts the overlay, and network.mode host has none; remove it, or set network.mode: overlay",
            )
        return problems

    def _free_subnet_example(self) -> str:
        """A subnet of the configured size that holds no host address, for error messages."""
        prefix = ipaddress.IPv4Network(self.network.subnet).prefixlen
        hosts = [ipaddress.IPv4Address(host.address) for host in self.hosts]
        for candidate in ("10.0.3.0", "10.200.0.0", "172.31.0.0", "192.168.200.0"):
            network = ipaddress.IPv4Network(f"{candidate}/{prefix}", strict=False)
            if not any(address in network for address in hosts):
                return str(network)
        return "a private range none of the hosts is in"

    def _free_example(self) -> str:
        """A static address not yet used, for error messages."""
        used = {host.container_address for host in self.hosts}
        for address in static_candidates(self.network.subnet, self.network.effective_ip_range, self.network.gateway):
            if str(address) not in used:
                return str(address)
        return "(none left: use a larger subnet)"

    def _batch_problem(self) -> str | None:
        """Why train_batch_size cannot be micro batch x accumulation x world size, if so."""
        world = self.world_size
        total, micro, accumulation = self.training.effective_batch_numbers()
        if total is None:
            return None
        if micro is not None and accumulation is not None:
            expected = micro * accumulation * world
            if total != expected:
                return (
                    f"{total} is not micro batch {micro} x gradient accumulation "
                    f"{accumulation} x world size {world} = {expected}; set "
                    f'train_batch_size: {expected}, or "auto"'
                )
            return None
        # One factor known (or none): DeepSpeed derives the rest, which must come out whole.
        factor, name = world, f"world size {world}"
        if micro is not None:
            factor, name = micro * world, f"micro batch {micro} x world size {world}"
        elif accumulation is not None:
            factor, name = (
                accumulation * world,
                f"gradient accumulation {accumulation} x world size {world}",
            )
        if total % factor:
            shown = name if factor == world else f"{name} = {factor}"
            return f"{total} is not divisible by {shown}; use a multiple of {factor}, e.g. {factor}"
        return None

    # --- derived values used by the components ---

    @property
    def manager(self) -> Host:
        """The swarm manager (validation guarantees exactly one)."""
        return next(host for host in self.hosts if host.role == "manager")

    @property
    def jump_hosts(self) -> list[tuple[Loc, JumpHost]]:
        """Every jump host the stack names (operator.jump_host, then the hosts' own), with its key."""
        named: list[tuple[Loc, JumpHost]] = [(("hosts", index, "jump_host"), host.jump_host)
                                             for index, host in enumerate(self.hosts) if host.jump_host is not None]  # fmt: skip
        if self.operator.jump_host is not None:
            named.insert(0, (("operator", "jump_host"), self.operator.jump_host))
        return named

    @property
    def workers(self) -> tuple[Host, ...]:
        """Every host but the manager, in configuration order."""
        return tuple(host for host in self.hosts if host.role != "manager")

    @property
    def hosts_manager_first(self) -> tuple[Host, ...]:
        """The manager, then the workers: the order of the hostfile (rank 0 on the manager)."""
        return (self.manager, *self.workers)

    @property
    def world_size(self) -> int:
        """Total DeepSpeed ranks: the sum of all hosts' slots."""
        return sum(host.slots for host in self.hosts)

    @property
    def container_ssh_port(self) -> int:
        """The port of every container's sshd."""
        if self.container.ssh_port is not None:
            return self.container.ssh_port
        return HOST_MODE_SSH_PORT if self.network.mode == "host" else 22

    def node_address(self, host_name: str, plan: AddressPlan) -> str:
        """Where the other containers reach host ``host_name``'s container: its overlay
        address in ``plan``, or in host mode the host's own."""
        if self.network.mode == "host":
            return next(host.address for host in self.hosts if host.name == host_name)
        return plan.address_of(host_name)

    def address_plan(self, held: Mapping[str, str] | None = None, in_use: Collection[str] = ()) -> AddressPlan:
        """Gateway, dynamic range and each host's static container address. ``held``: the
        addresses the stack's containers have now (a host keeps its own; none for a new
        stack); ``in_use``: those other containers on the overlay hold."""
        return plan_addresses(
            self.network.subnet,
            [(host.name, host.container_address) for host in self.hosts],
            ip_range=self.network.effective_ip_range,
            gateway=self.network.gateway,
            held=held,
            in_use=in_use,
        )


TOP_LEVEL_KEYS: tuple[str, ...] = tuple(LabConfig.model_fields)
