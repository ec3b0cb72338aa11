"""`dslab:hosts`: the servers, their roles, GPUs and mounts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from components.config.base import ConfigProblems, FrozenModel, Problems
from components.config.jump_host import JumpHost, JumpRoute, jump_route
from components.config.fields import (
    AbsolutePath,
    EnvName,
    EnvValue,
    GpuRequest,
    GpuRequestValue,
    HostName,
    IPv4Str,
    Port,
    Size,
    Slots,
    UnixUser,
    gpu_request,
)
from components.config.on_change import Effect, on_change
from components.config.shapes import Shape

# The whole container (a bind mount is made when the container is): every Mount, wherever it is used.
_MOUNT = on_change(Effect.NEW_CONTAINERS, "the containers that mount it")
_HOST_OWN = "this host's container only"
_REACH = "how this machine reaches the host: its steps run again in place"


class Mount(FrozenModel):
    """A bind mount of a host directory into the training container."""

    source: AbsolutePath = Field(
        description="Absolute path on the host.", examples=["/data/models"], json_schema_extra=_MOUNT
    )
    target: AbsolutePath = Field(
        description="Absolute path inside the container.", examples=["/home/user/code"], json_schema_extra=_MOUNT
    )
    read_only: bool = Field(
        default=False, description="Mount read-only. Default false.", examples=[True], json_schema_extra=_MOUNT
    )


class HostOverrides(FrozenModel):
    """Per-host additions to the ``container`` settings."""

    env: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Extra environment for this host's container, merged over container.env.",
        examples=[{"NCCL_DEBUG": "INFO"}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, _HOST_OWN),
    )
    shm_size: Size | None = Field(
        default=None,
        description="Shared memory size for this host's container (replaces container.shm_size).",
        examples=["16G"],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, _HOST_OWN, default="container.shm_size"),
    )
    mounts: tuple[Mount, ...] = Field(
        default=(),
        description="Extra bind mounts for this host's container.",
        examples=[[{"source": "/scratch", "target": "/scratch"}]],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, _HOST_OWN),
    )


def default_slots(gpus: GpuRequestValue) -> int:
    """Slots when not given: the GPU count for a count or id list; 1 for "all" and "none".

    ``"all"`` cannot be counted without asking the host, so it gives 1 slot (as in the
    write-up); set ``slots`` for hosts with more than one GPU.
    """
    if isinstance(gpus, int):
        return gpus
    if isinstance(gpus, tuple):
        return len(gpus)
    return 1


class Host(FrozenModel):
    """One server of the lab: a swarm node that runs one training container."""

    name: HostName = Field(
        description="Host name; also the container's hostname and its hostfile entry.",
        examples=["server1"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "a rename: this host's container is made again at its address, what the old name had is taken "
            "over, and a new run starts (the hostfile names it)",
        ),
    )
    address: IPv4Str = Field(
        description="The host's own IPv4 address, reachable over ssh from the operator.",
        examples=["10.0.18.1"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "the manager's: every worker joins its swarm again and gets a new container; a worker's: "
            "its steps run again in place; with network.mode host also a new run (the hostfile names it)",
        ),
    )
    role: Literal["manager", "worker"] = Field(
        default="worker",
        description="Swarm role; exactly one host is the manager. Default worker.",
        examples=["manager"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, "another manager: a new swarm and overlay, every container, and a new run"
        ),
    )
    ssh_user: UnixUser = Field(
        default="root",
        description="ssh login user. Default root.",
        examples=["ubuntu"],
        json_schema_extra=on_change(Effect.NOTHING, _REACH),
    )
    ssh_port: Port = Field(
        default=22,
        description="ssh port of the host. Default 22.",
        examples=[22],
        json_schema_extra=on_change(Effect.NOTHING, _REACH),
    )
    gpus: GpuRequest = Field(
        default="none",
        description=(
            'GPUs for the container: "all", "none", a count, or a list of device ids. '
            'Default: "all" when image.variant is gpu, "none" when cpu.'
        ),
        examples=["all"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, _HOST_OWN, default='"all" (image.variant gpu), "none" (cpu)'
        ),
    )
    slots: Slots = Field(
        default=1,
        description=(
            'DeepSpeed ranks on this host. Default: the GPU count for a count or id list, 1 for "all" and "none".'
        ),
        examples=[2],
        json_schema_extra=on_change(
            Effect.NEW_RUN, "the hostfile", default='the GPU count of a count or id list, 1 for "all" and "none"'
        ),
    )
    container_address: IPv4Str | None = Field(
        default=None,
        description=(
            "Pins the container's overlay address. Default: the address it already holds (kept "
            "whatever the list's order), or for a new host the lowest free one outside ip_range."
        ),
        examples=["10.0.3.128"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            _HOST_OWN,
            default="the address its container holds; a new host's: the lowest free one outside network.ip_range",
        ),
    )
    overrides: HostOverrides = Field(
        default_factory=HostOverrides,
        description="Per-host container additions.",
        examples=[{"shm_size": "16G"}],
        json_schema_extra=on_change(Effect.NEW_CONTAINERS, _HOST_OWN),
    )
    jump_host: JumpHost | None = Field(
        default=None,
        description=(
            "The bastion in front of this host, where hosts sit behind different ones; replaces "
            "operator.jump_host for this host. Default: operator.jump_host (none: reached directly)."
        ),
        examples=[{"address": "192.0.2.11", "user": "ops"}],
        json_schema_extra=on_change(Effect.NOTHING, _REACH, default="operator.jump_host"),
    )

    def jump_route(self, lab_wide: JumpHost | None) -> JumpRoute | None:
        """The jump host every connection to this host goes through, if any (LAB_WIDE:
        operator.jump_host)."""
        return jump_route(self.name, self.jump_host, lab_wide)

    @model_validator(mode="before")
    @classmethod
    def _default_slots_from_gpus(cls, data: Any) -> Any:
        # slots follows gpus, so it is filled in before field validation sees it.
        if isinstance(data, Mapping) and "slots" not in data:
            try:
                gpus = gpu_request(data.get("gpus", "none"))
            except ValueError:
                return data  # the gpus error is reported by field validation
            return {**data, "slots": default_slots(gpus)}
        return data

    @model_validator(mode="after")
    def _slots_fit_the_listed_gpus(self) -> Host:
        # A count or a list of ids says how many GPUs there are; more ranks than that get none.
        listed = self.gpus if isinstance(self.gpus, int) else len(self.gpus) if isinstance(self.gpus, tuple) else None
        if listed is not None and self.slots > listed:
            raise ValueError(
                f"slots {self.slots} is more than the {listed} GPU(s) in gpus; expected slots <= {listed}, "
                f"e.g. slots: {listed}"
            )
        return self


def _check_hosts(hosts: tuple[Host, ...]) -> tuple[Host, ...]:
    """Cross-host rules: names and addresses unique, exactly one manager."""
    problems = Problems()
    if not hosts:
        raise ConfigProblems(
            [
                (
                    (),
                    "is empty; expected at least one host, e.g. [{name: server1, address: 10.0.18.1, role: manager}]",
                )
            ]
        )
    for attribute in ("name", "address"):
        first_seen: dict[str, int] = {}
        for index, host in enumerate(hosts):
            value = getattr(host, attribute)
            if value in first_seen:
                problems.add(
                    (index, attribute),
                    f"{value!r} is also the {attribute} of hosts[{first_seen[value]}]; "
                    f"every host needs its own {attribute}",
                )
            else:
                first_seen[value] = index
    managers = [index for index, host in enumerate(hosts) if host.role == "manager"]
    if not managers:
        problems.add(
            (),
            "has no manager; set role: manager on exactly one host, e.g. hosts[0].role: manager",
        )
    for index in managers[1:]:
        problems.add(
            (index, "role"),
            f"'manager' is also the role of hosts[{managers[0]}]; a lab has exactly one manager: set role: worker here",
        )
    problems.raise_if_any()
    return hosts


_MANAGER = {"type": "object", "required": ["role"], "properties": {"role": {"const": "manager"}}}

Hosts = Annotated[
    tuple[Host, ...],
    AfterValidator(_check_hosts),
    # Unique names and addresses are a rule across items, which JSON Schema cannot state.
    Shape("list of hosts", {"minItems": 1, "contains": _MANAGER, "minContains": 1, "maxContains": 1}),
]
