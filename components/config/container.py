"""`dslab:container`: the training container (name, shm, ulimits, env, mounts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from components.config.base import FrozenModel, Problems
from components.config.fields import DockerName, EnvName, EnvValue, Port, Size, UlimitName, size_to_mb
from components.config.hosts import Mount
from components.config.on_change import Effect, on_change
from components.config.shapes import Shape

_EVERY_CONTAINER = on_change(Effect.NEW_CONTAINERS, "every container")


class Ulimit(FrozenModel):
    """A ulimit; -1 means unlimited. A single number in the config sets soft and hard."""

    soft: int = Field(description="Soft limit; -1 unlimited.", examples=[-1], json_schema_extra=_EVERY_CONTAINER)
    hard: int = Field(description="Hard limit; -1 unlimited.", examples=[-1], json_schema_extra=_EVERY_CONTAINER)


def _ulimit_from_number(value: Any) -> Any:
    # `memlock: -1` is docker compose's short form for soft = hard = -1.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return {"soft": value, "hard": value}
    if isinstance(value, Mapping):
        return value
    raise ValueError("is not a ulimit; expected a number (-1 = unlimited) or {soft: n, hard: n}, e.g. -1")


UlimitValue = Annotated[
    Ulimit,
    BeforeValidator(_ulimit_from_number),
    Shape(
        "integer (soft and hard; -1 unlimited) or {soft, hard}",
        also=({"type": "integer"}, {"type": "string", "pattern": r"^\s*-?[0-9]+\s*$"}),
    ),
]


def _default_ulimits() -> dict[str, Ulimit]:
    return {
        "memlock": Ulimit(soft=-1, hard=-1),
        "stack": Ulimit(soft=67108864, hard=67108864),
    }


class ContainerConfig(FrozenModel):
    """The training container run on every host."""

    name: DockerName = Field(
        default="llm",
        description="Container name (on each host `<host>-<name>`). Default llm.",
        examples=["train"],
        json_schema_extra=_EVERY_CONTAINER,
    )
    shm_size: Size = Field(
        default="40G",
        description="/dev/shm size, e.g. 40G or 512M (binary units). Default 40G.",
        examples=["1G"],
        json_schema_extra=_EVERY_CONTAINER,
    )
    ulimits: dict[UlimitName, UlimitValue] = Field(
        default_factory=_default_ulimits,
        description="ulimits by name. Default memlock -1 (unlimited), stack 67108864.",
        examples=[{"memlock": -1, "stack": 67108864}],
        json_schema_extra=_EVERY_CONTAINER,
    )
    restart: Literal["no", "on-failure", "always", "unless-stopped"] = Field(
        default="always",
        description="Docker restart policy. Default always.",
        examples=["unless-stopped"],
        json_schema_extra=on_change(
            Effect.NOTHING, "docker updates every container's policy in place; nothing is made again"
        ),
    )
    mounts: tuple[Mount, ...] = Field(
        default=(),
        description="Bind mounts (code, models, datasets, outputs).",
        examples=[[{"source": "/srv/datasets", "target": "/data", "read_only": True}]],
        json_schema_extra=_EVERY_CONTAINER,
    )
    env: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Extra environment of every container (and of every rank, through .deepspeed_env).",
        examples=[{"NCCL_DEBUG": "INFO"}],
        json_schema_extra=_EVERY_CONTAINER,
    )
    ssh_port: Port | None = Field(
        default=None,
        description=(
            "Port of the container's sshd, which DeepSpeed's launcher logs in to (--ssh_port). "
            "Default: 22 with network.mode overlay, 2222 with host (the host's sshd has 22)."
        ),
        examples=[2222],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, "every container", default="22 (network.mode overlay), 2222 (host)"
        ),
    )

    @property
    def shm_size_mb(self) -> int:
        """``shm_size`` in MiB, the unit of the docker provider's ``shm_size``."""
        return size_to_mb(self.shm_size)

    @model_validator(mode="after")
    def _mount_targets_unique(self) -> ContainerConfig:
        problems = Problems()
        seen: dict[str, int] = {}
        for index, mount in enumerate(self.mounts):
            if mount.target in seen:
                problems.add(
                    ("mounts", index, "target"),
                    f"{mount.target!r} is also the target of "
                    f"mounts[{seen[mount.target]}]; mount each container path once",
                )
            seen.setdefault(mount.target, index)
        problems.raise_if_any()
        return self
