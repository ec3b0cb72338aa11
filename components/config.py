"""The lab's stack configuration: one frozen pydantic model tree, its loaders, and its error text.

Stack files hold six structured keys in the ``dslab:`` namespace (``dslab:hosts``,
``dslab:operator``, ``dslab:network``, ``dslab:image``, ``dslab:container``,
``dslab:training``). :func:`load_lab_config` validates the namespace-stripped mapping and
raises :class:`LabConfigError` listing every problem, each line naming the key path, the
value received, what was expected (with an example) and the fix.

Field-level rules are pydantic validators (reusable types in :mod:`components.types`);
cross-field rules live in each model's ``model_validator`` and report all their findings at
once through :class:`ConfigProblems`. A model's cross-field rules run only when its own fields
are valid, so a second pass may find more problems once the first ones are fixed.
"""

from __future__ import annotations

import difflib
import ipaddress
import json
import types as pytypes
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    model_validator,
)
from pydantic.fields import FieldInfo

from components.address_plan import (
    MAX_PREFIX_LENGTH,
    AddressPlan,
    AddressPlanError,
    default_gateway,
    default_ip_range,
    plan_addresses,
    static_candidates,
)
from components.types import (
    AbsolutePath,
    AptPackage,
    Argument,
    AutoOrNonNegativeFloat,
    AutoOrPositiveInt,
    BucketSize,
    ContainerPath,
    DockerName,
    EncryptedSecret,
    EnvName,
    EnvValue,
    FlagName,
    FlagValue,
    GpuRequest,
    GpuRequestValue,
    HostName,
    ImageReference,
    InterfaceName,
    IPv4NetworkStr,
    IPv4Str,
    Mtu,
    NonNegativeFloat,
    PipRequirement,
    PositiveFloat,
    Port,
    PythonVersion,
    Seconds,
    Secret,
    Size,
    Slots,
    UlimitName,
    UnixUser,
    ZeroStage,
    as_int,
    gpu_request,
    is_encrypted_value,
    size_to_mb,
)

NAMESPACE = "dslab"
"""The Pulumi project name, and so the namespace of every configuration key."""

Loc = tuple[str | int, ...]

# Keys whose value may be a Pulumi secret ({secure: ...} in a stack file).
SECRET_PATHS: frozenset[Loc] = frozenset({("operator", "private_key")})


class ConfigProblems(ValueError):
    """Several cross-field problems found by one validator, each at a path relative to it."""

    def __init__(self, problems: Sequence[tuple[Loc, str]]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(message for _loc, message in self.problems))


class LabConfigError(ValueError):
    """The stack configuration is invalid; ``problems`` holds one formatted line per problem."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = (
            f"{count} problem{'s' if count != 1 else ''} in the stack configuration:"
        )
        super().__init__("\n".join([header, *(f"  {line}" for line in self.problems)]))


class Problems(list[tuple[Loc, str]]):
    """Cross-field problems collected by one validator, raised together."""

    def add(self, loc: Loc, message: str) -> None:
        """Record ``message`` about the key at ``loc`` (relative to the validator's model)."""
        self.append((loc, message))

    def raise_if_any(self) -> None:
        """Raise :class:`ConfigProblems` when anything was recorded."""
        if self:
            raise ConfigProblems(self)


def _is_true(value: Any) -> bool:
    """A LLaMA-Factory flag value that means true (``pulumi config set`` may store "true")."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


class _Frozen(BaseModel):
    """Base of every configuration model: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


# --- hosts ------------------------------------------------------------------------------


class Mount(_Frozen):
    """A bind mount of a host directory into the training container."""

    source: AbsolutePath = Field(
        description="Absolute path on the host.", examples=["/data/models"]
    )
    target: AbsolutePath = Field(
        description="Absolute path inside the container.", examples=["/home/user/code"]
    )
    read_only: bool = Field(
        default=False, description="Mount read-only. Default false."
    )


class HostOverrides(_Frozen):
    """Per-host additions to the ``container`` settings."""

    env: dict[EnvName, EnvValue] = Field(
        default_factory=dict,
        description="Extra environment for this host's container, merged over container.env.",
        examples=[{"NCCL_DEBUG": "INFO"}],
    )
    shm_size: Size | None = Field(
        default=None,
        description="Shared memory size for this host's container (replaces container.shm_size).",
        examples=["16G"],
    )
    mounts: tuple[Mount, ...] = Field(
        default=(), description="Extra bind mounts for this host's container."
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


class Host(_Frozen):
    """One server of the lab: a swarm node that runs one training container."""

    name: HostName = Field(
        description="Host name; also the container's hostname and its hostfile entry.",
        examples=["server1"],
    )
    address: IPv4Str = Field(
        description="The host's own IPv4 address, reachable over ssh from the operator.",
        examples=["10.0.18.1"],
    )
    role: Literal["manager", "worker"] = Field(
        default="worker",
        description="Swarm role; exactly one host is the manager. Default worker.",
        examples=["manager"],
    )
    ssh_user: UnixUser = Field(
        default="root", description="ssh login user. Default root."
    )
    ssh_port: Port = Field(default=22, description="ssh port of the host. Default 22.")
    gpus: GpuRequest = Field(
        default="none",
        description=(
            'GPUs for the container: "all", "none", a count, or a list of device ids. '
            'Default: "all" when image.variant is gpu, "none" when cpu.'
        ),
        examples=["all"],
    )
    slots: Slots = Field(
        default=1,
        description=(
            "DeepSpeed ranks on this host. Default: the GPU count for a count or id list, "
            '1 for "all" and "none".'
        ),
        examples=[1],
    )
    container_address: IPv4Str | None = Field(
        default=None,
        description="Static overlay address of the container. Default: from the address plan.",
        examples=["10.0.3.128"],
    )
    overrides: HostOverrides = Field(
        default_factory=HostOverrides, description="Per-host container additions."
    )

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
            f"'manager' is also the role of hosts[{managers[0]}]; a lab has exactly one "
            "manager: set role: worker here",
        )
    problems.raise_if_any()
    return hosts


Hosts = Annotated[tuple[Host, ...], AfterValidator(_check_hosts)]


# --- operator ---------------------------------------------------------------------------


class OperatorConfig(_Frozen):
    """How Pulumi reaches the hosts: one ssh key, and known host keys (always checked)."""

    private_key_path: str | None = Field(
        default=None,
        description="Operator's private key file, relative to the project directory or absolute.",
        examples=[".lab/operator_ed25519"],
    )
    private_key: Secret | None = Field(
        default=None,
        description="The private key text, as a Pulumi secret (pulumi config set --secret).",
    )
    known_hosts_path: str = Field(
        default="~/.ssh/known_hosts",
        description=(
            "known_hosts file holding every host's key; strict host key checking is always "
            "on. Default ~/.ssh/known_hosts."
        ),
        examples=[".lab/known_hosts"],
    )

    @model_validator(mode="after")
    def _exactly_one_key(self) -> OperatorConfig:
        if (self.private_key_path is None) == (self.private_key is None):
            given = "both" if self.private_key is not None else "neither"
            problems = Problems()
            problems.add(
                (),
                f"has {given} of private_key_path and private_key; give exactly one, "
                "e.g. private_key_path: ~/.ssh/id_ed25519",
            )
            problems.raise_if_any()
        return self

    @property
    def private_key_is_encrypted(self) -> bool:
        """True when the key came from a stack file still encrypted (validation only)."""
        return isinstance(self.private_key, EncryptedSecret)


# --- network ----------------------------------------------------------------------------


class NetworkConfig(_Frozen):
    """The attachable overlay network the training containers share."""

    mode: Literal["overlay", "host"] = Field(
        default="overlay",
        description=(
            'How containers reach each other. "overlay" (default): a swarm overlay network, '
            'one address per container. "host": the hosts\' own network (no swarm, no '
            "overlay, no VXLAN); the container's sshd then listens on container.ssh_port."
        ),
    )
    name: DockerName = Field(
        default="test-net", description="Network name. Default test-net."
    )
    subnet: IPv4NetworkStr = Field(
        default="10.0.3.0/24",
        description="Overlay subnet; must not contain the hosts' addresses. Default 10.0.3.0/24.",
        examples=["10.0.3.0/24"],
    )
    ip_range: IPv4NetworkStr | None = Field(
        default=None,
        description=(
            "Range docker allocates swarm's own endpoints from; static container addresses "
            "stay outside it. Default: the lower half of the subnet (10.0.3.0/25)."
        ),
        examples=["10.0.3.0/25"],
    )
    mtu: Mtu | None = Field(
        default=None,
        description=(
            "Overlay MTU in bytes. Default: the smallest MTU of the hosts' interfaces "
            "(the ones holding hosts[].address) minus 50 for VXLAN."
        ),
    )
    encrypted: bool = Field(
        default=False, description="Encrypt overlay traffic between hosts (IPsec). Default false."
    )
    ipsec: Literal["docker", "strongswan"] = Field(
        default="docker",
        description=(
            'Who does the IPsec of an encrypted overlay. "docker" (default): the overlay\'s own '
            "(ESP in the hosts' kernels, which must support it). \"strongswan\": a strongSwan "
            "container on every host (IKEv2, ESP in userspace over a TUN device: for kernels "
            "without ESP; slower); the hosts need /dev/net/tun."
        ),
    )

    @model_validator(mode="after")
    def _ipsec_needs_encryption(self) -> NetworkConfig:
        if self.ipsec != "docker" and not self.encrypted:
            problems = Problems()
            problems.add(
                ("ipsec",),
                f"{self.ipsec!r} has effect only on an encrypted overlay; set network.encrypted: "
                "true, or remove network.ipsec",
            )
            problems.raise_if_any()
        return self

    @model_validator(mode="after")
    def _range_inside_subnet(self) -> NetworkConfig:
        problems = Problems()
        subnet = ipaddress.IPv4Network(self.subnet)
        if subnet.prefixlen > MAX_PREFIX_LENGTH:
            problems.add(
                ("subnet",),
                f"{self.subnet!r} is too small for a gateway, a dynamic range and "
                f"static container addresses; expected a /{MAX_PREFIX_LENGTH} or larger, "
                "e.g. 10.0.3.0/24",
            )
        if self.ip_range is not None:
            dynamic = ipaddress.IPv4Network(self.ip_range)
            if not dynamic.subnet_of(subnet):
                problems.add(
                    ("ip_range",),
                    f"{self.ip_range!r} is not inside subnet {self.subnet}; "
                    f"expected a part of it, e.g. {default_ip_range(self.subnet)}",
                )
            elif dynamic == subnet:
                problems.add(
                    ("ip_range",),
                    f"{self.ip_range!r} is the whole subnet, which leaves no room "
                    f"for static container addresses; use a part, e.g. {default_ip_range(self.subnet)}",
                )
        problems.raise_if_any()
        return self

    @property
    def effective_ip_range(self) -> str:
        """``ip_range`` as configured, or the default lower half of the subnet."""
        return self.ip_range or default_ip_range(self.subnet)

    @property
    def gateway(self) -> str:
        """The overlay gateway docker assigns by default: the subnet's first address."""
        return default_gateway(self.subnet)


# --- image ------------------------------------------------------------------------------

GPU_BASE_IMAGE = "nvidia/cuda:12.4.1-devel-ubuntu22.04"
"""Default base image of the gpu variant: a current CUDA devel image on Ubuntu 22.04."""
CPU_BASE_IMAGE = "local/debian:trixie"
"""Default base image of the cpu variant: the lab's debootstrapped Debian (no registry)."""
GPU_PYTHON = "3.10"
"""Default Python of the gpu variant, as in the write-up."""
LLAMAFACTORY_MIN_PYTHON = (3, 11)
"""LLaMA-Factory 0.9.4 requires Python 3.11 or later."""
LlamaFactoryRelease = Literal["0.9.4"]
"""LLaMA-Factory releases the image can install: those with a constraints file in
``assets/image/llamafactory/`` (every requirement pinned, proven on the cpu image)."""


class ImageConfig(_Frozen):
    """The training image, built from ``assets/Dockerfile``."""

    variant: Literal["gpu", "cpu"] = Field(
        default="gpu",
        description="gpu: CUDA base with pip-installed torch/DeepSpeed; cpu: Debian's torch. Default gpu.",
    )
    base_image: ImageReference = Field(
        default=GPU_BASE_IMAGE,
        description=f"FROM image. Default {GPU_BASE_IMAGE} (gpu) or {CPU_BASE_IMAGE} (cpu).",
        examples=[GPU_BASE_IMAGE],
    )
    python: PythonVersion | None = Field(
        default=GPU_PYTHON,
        description=(
            f'Python version to install. Default "{GPU_PYTHON}" (gpu); none for cpu, which '
            "uses the base image's python3 (Debian's torch is built for it)."
        ),
        examples=["3.10"],
    )
    apt_packages: tuple[AptPackage, ...] = Field(
        default=(), description="Extra apt packages.", examples=[["vim", "htop"]]
    )
    pip_requirements: tuple[PipRequirement, ...] = Field(
        default=(),
        description="Extra pip requirements, one specifier each.",
        examples=[["deepspeed==0.12.3"]],
    )
    ca_bundle_path: str | None = Field(
        default=None,
        description="Extra CA bundle (PEM) for TLS-inspecting proxies, relative to the project.",
        examples=["/etc/ssl/certs/ca-certificates.crt"],
    )
    wheelhouse_path: str | None = Field(
        default=None,
        description="Local directory of wheels for air-gapped labs (pip --find-links).",
    )
    llamafactory: LlamaFactoryRelease | None = Field(
        default=None,
        description=(
            "Install this LLaMA-Factory release (pip package llamafactory) and its "
            "requirements, pinned by assets/image/llamafactory/<release>.txt. Needs "
            "Python 3.11 or later (gpu: python: \"3.11\"). Default: not installed."
        ),
        examples=["0.9.4"],
    )
    distribution: Literal["every-host", "build-once"] = Field(
        default="every-host",
        description="Build on every host, or build on the manager and copy. Default every-host.",
    )
    tag: ImageReference = Field(
        default="dslab/train", description="Image name. Default dslab/train."
    )
    platform: str = Field(
        default="linux/amd64",
        description="Target platform of the build. Default linux/amd64.",
    )

    @model_validator(mode="before")
    @classmethod
    def _defaults_follow_variant(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("variant") == "cpu":
            data = dict(data)
            data.setdefault("base_image", CPU_BASE_IMAGE)
            data.setdefault("python", None)
        return data

    @model_validator(mode="after")
    def _python_fits_llamafactory(self) -> ImageConfig:
        if self.llamafactory is not None and self.python is not None:
            version = tuple(int(part) for part in self.python.split(".")[:2])
            if version < LLAMAFACTORY_MIN_PYTHON:
                wanted = ".".join(map(str, LLAMAFACTORY_MIN_PYTHON))
                problems = Problems()
                problems.add(
                    ("python",),
                    f"{self.python!r} is too old for llamafactory {self.llamafactory}, which "
                    f'needs Python {wanted} or later; set python: "{wanted}"',
                )
                problems.raise_if_any()
        return self


# --- container --------------------------------------------------------------------------


class Ulimit(_Frozen):
    """A ulimit; -1 means unlimited. A single number in the config sets soft and hard."""

    soft: int
    hard: int


def _ulimit_from_number(value: Any) -> Any:
    # `memlock: -1` is docker compose's short form for soft = hard = -1.
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return {"soft": value, "hard": value}
    if isinstance(value, Mapping):
        return value
    raise ValueError(
        "is not a ulimit; expected a number (-1 = unlimited) or {soft: n, hard: n}, e.g. -1"
    )


UlimitValue = Annotated[Ulimit, BeforeValidator(_ulimit_from_number)]


def _default_ulimits() -> dict[str, Ulimit]:
    return {
        "memlock": Ulimit(soft=-1, hard=-1),
        "stack": Ulimit(soft=67108864, hard=67108864),
    }


class ContainerConfig(_Frozen):
    """The training container run on every host."""

    name: DockerName = Field(default="llm", description="Container name. Default llm.")
    shm_size: Size = Field(
        default="40G",
        description="/dev/shm size, e.g. 40G or 512M (binary units). Default 40G.",
    )
    ulimits: dict[UlimitName, UlimitValue] = Field(
        default_factory=_default_ulimits,
        description="ulimits by name. Default memlock -1 (unlimited), stack 67108864.",
        examples=[{"memlock": -1, "stack": 67108864}],
    )
    restart: Literal["no", "on-failure", "always", "unless-stopped"] = Field(
        default="always", description="Docker restart policy. Default always."
    )
    mounts: tuple[Mount, ...] = Field(
        default=(), description="Bind mounts (code, models, datasets, outputs)."
    )
    env: dict[EnvName, EnvValue] = Field(
        default_factory=dict, description="Extra environment of every container."
    )
    ssh_port: Port | None = Field(
        default=None,
        description=(
            "Port of the container's sshd, which DeepSpeed's launcher logs in to (--ssh_port). "
            "Default: 22 with network.mode overlay, 2222 with host (the host's sshd has 22)."
        ),
        examples=[2222],
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


# --- training ---------------------------------------------------------------------------

LLAMAFACTORY_DEFAULT_ARGS: dict[str, str | int | float | bool] = {
    "stage": "sft",
    "model_name_or_path": "/home/user/code/chatglm2-6b",
    "do_train": True,
    "dataset": "alpaca_gpt4_zh",
    "template": "chatglm2",
    "finetuning_type": "lora",
    "lora_target": "query_key_value",
    "output_dir": "chatglm2_sft",
    "overwrite_cache": True,
    "overwrite_output_dir": True,
    "per_device_train_batch_size": 4,
    "gradient_accumulation_steps": 4,
    "lr_scheduler_type": "cosine",
    "logging_steps": 10,
    "save_steps": 10000,
    "learning_rate": 5e-5,
    "num_train_epochs": 0.25,
    "plot_loss": True,
    "fp16": True,
}
"""The write-up's LoRA SFT arguments (chatglm2-6b on alpaca_gpt4_zh)."""

LLAMAFACTORY_ENTRYPOINT = "/opt/dslab/llamafactory_train.py"
"""The image's LLaMA-Factory entry point for the DeepSpeed launcher (assets/llamafactory_train.py)."""

LLAMAFACTORY_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    # LLaMA-Factory 0.9.4 refuses DeepSpeed > 0.16.9 unless told not to check; the image
    # pins 0.19.8, proven with it on CPU.
    "DISABLE_VERSION_CHECK": "1",
}
"""Environment of every LLaMA-Factory rank: models and datasets are local, no hub access."""

ArgValue = str | int | float | bool
"""A training argument's value, as the launch argv renders it."""


def _merge_llamafactory_args(value: Any) -> Any:
    # The configured args refine the write-up's; a null removes a default flag.
    if isinstance(value, Mapping):
        merged: dict[Any, Any] = {**LLAMAFACTORY_DEFAULT_ARGS, **value}
        return {key: item for key, item in merged.items() if item is not None}
    return value


class ScriptWorkload(_Frozen):
    """Any training script: ``deepspeed ... <entrypoint> --deepspeed <ds_config> <args>``."""

    kind: Literal["script"] = "script"
    entrypoint: ContainerPath = Field(
        description="Script path inside the container, absolute or relative to workdir.",
        examples=["/opt/dslab/train_tiny.py"],
    )
    args: tuple[Argument, ...] = Field(
        default=(),
        description="Arguments after the ds_config flag.",
        examples=[["--steps", "20"]],
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in (and where .deepspeed_env lives). Default /opt/dslab.",
    )
    deepspeed_config_flag: Literal["--deepspeed", "--deepspeed_config"] = Field(
        default="--deepspeed",
        description=(
            "Flag that passes the ds_config path: --deepspeed <path> (Hugging Face style, "
            "the default) or --deepspeed_config <path> (deepspeed.add_config_arguments)."
        ),
    )


class LlamaFactoryDataset(_Frozen):
    """One dataset registered in the generated ``dataset_info.json`` (LLaMA-Factory's format)."""

    file_name: ContainerPath = Field(
        description="The data file or folder, relative to dataset_dir.target, or absolute in the container.",
        examples=["tiny_alpaca.json"],
    )
    formatting: Literal["alpaca", "sharegpt"] = Field(
        default="alpaca", description="Record format. Default alpaca."
    )
    columns: dict[FlagName, str] = Field(
        default_factory=dict,
        description=(
            "LLaMA-Factory's column mapping, e.g. {prompt: instruction, query: input, "
            "response: output}. Default: LLaMA-Factory's for the formatting."
        ),
        examples=[{"prompt": "instruction", "query": "input", "response": "output"}],
    )


def _fill_llamafactory_args(data: Any) -> Any:
    # The model and the registered datasets say what model_name_or_path and dataset are,
    # unless the args say it themselves.
    if not isinstance(data, Mapping):
        return data
    args = data.get("args", {})
    if not isinstance(args, Mapping):
        return data
    filled = dict(args)
    model = data.get("model")
    if isinstance(model, Mapping) and "target" in model:
        filled.setdefault("model_name_or_path", model["target"])
    datasets = data.get("datasets")
    if isinstance(datasets, Mapping) and datasets:
        filled.setdefault("dataset", ",".join(str(name) for name in datasets))
    return {**data, "args": filled}


class LlamaFactoryWorkload(_Frozen):
    """LLaMA-Factory training, arguments passed as flags (the config-file form breaks
    under the DeepSpeed launcher, which prepends --local_rank: hiyouga/LLaMA-Factory#6075).

    The model and the datasets are host directories mounted into every container at the
    same path (never downloaded: the ranks run offline, see LLAMAFACTORY_ENV); the datasets
    are registered in a ``dataset_info.json`` generated from ``datasets`` and passed as
    ``--dataset_dir``.
    """

    kind: Literal["llamafactory"] = "llamafactory"
    entrypoint: ContainerPath = Field(
        default=LLAMAFACTORY_ENTRYPOINT,
        description=(
            "Training entry point, absolute or relative to workdir. Default "
            f"{LLAMAFACTORY_ENTRYPOINT} (the image's, with image.llamafactory); a checkout's "
            "src/train.py also works."
        ),
    )
    workdir: AbsolutePath = Field(
        default="/opt/dslab",
        description="Directory deepspeed runs in; relative paths in args start here. Default /opt/dslab.",
    )
    model: Mount | None = Field(
        default=None,
        description=(
            "The model directory on every host (source) and in every container (target); "
            "sets args.model_name_or_path to the target unless given. Checked on every "
            "host before the containers start."
        ),
        examples=[{"source": "/srv/models/chatglm2-6b", "target": "/models/chatglm2-6b", "read_only": True}],
    )
    dataset_dir: Mount | None = Field(
        default=None,
        description="The dataset directory on every host and in every container; checked like model.",
        examples=[{"source": "/srv/datasets", "target": "/datasets", "read_only": True}],
    )
    datasets: dict[FlagName, LlamaFactoryDataset] = Field(
        default_factory=dict,
        description=(
            "Datasets by name, rendered into dataset_info.json; args.dataset defaults to "
            "all of them. Default none (args.dataset_dir then says where dataset_info.json is)."
        ),
        examples=[{"tiny_alpaca": {"file_name": "tiny_alpaca.json"}}],
    )
    args: Annotated[
        dict[FlagName, FlagValue],
        BeforeValidator(_merge_llamafactory_args),
    ] = Field(
        default_factory=lambda: dict(LLAMAFACTORY_DEFAULT_ARGS),
        description=(
            "Training arguments, merged over the write-up's LoRA SFT defaults; null removes one."
        ),
        examples=[{"dataset": "alpaca_gpt4_zh"}],
    )

    @model_validator(mode="before")
    @classmethod
    def _args_follow_model_and_datasets(cls, data: Any) -> Any:
        return _fill_llamafactory_args(data)

    @model_validator(mode="after")
    def _datasets_are_registered_and_found(self) -> LlamaFactoryWorkload:
        problems = Problems()
        for name, dataset in self.datasets.items():
            if not dataset.file_name.startswith("/") and self.dataset_dir is None:
                problems.add(
                    ("datasets", name, "file_name"),
                    f"{dataset.file_name!r} is relative, but there is no dataset_dir to start "
                    "from; set dataset_dir: {source: /srv/datasets, target: /datasets}, or "
                    "give an absolute path in the container",
                )
        if self.datasets:
            if "dataset_dir" in self.args:
                problems.add(
                    ("args", "dataset_dir"),
                    f"{self.args['dataset_dir']!r} would hide the dataset_info.json made from "
                    "datasets; remove it (or remove datasets and bring your own dataset_info.json)",
                )
            wanted = [name.strip() for name in str(self.args.get("dataset", "")).split(",") if name.strip()]
            for name in wanted:
                if name not in self.datasets:
                    problems.add(
                        ("args", "dataset"),
                        f"{name!r} is not one of datasets ({', '.join(self.datasets)}); "
                        f"register it under datasets, or use e.g. dataset: {next(iter(self.datasets))}",
                    )
        problems.raise_if_any()
        return self


Workload = Annotated[ScriptWorkload | LlamaFactoryWorkload, Field(discriminator="kind")]


class LossScaling(_Frozen):
    """fp16 dynamic loss scaling (the write-up's values)."""

    loss_scale: float = Field(default=0, description="0 = dynamic. Default 0.")
    initial_scale_power: int = Field(
        default=16, description="Initial scale 2**n. Default 16."
    )
    loss_scale_window: int = Field(default=1000, description="Default 1000.")
    hysteresis: int = Field(default=2, description="Default 2.")
    min_loss_scale: float = Field(default=1, description="Default 1.")


class DeepSpeedSettings(_Frozen):
    """What goes into ``ds_config.json``; defaults are the write-up's."""

    zero_stage: ZeroStage = Field(default=2, description="ZeRO stage 0..3. Default 2.")
    precision: Literal["auto", "fp16", "bf16", "fp32"] = Field(
        default="auto",
        description=(
            'Mixed precision. "auto" (default) lets the Hugging Face Trainer decide from its '
            'own fp16/bf16 arguments, like the write-up\'s fp16 "enabled": "auto".'
        ),
    )
    train_batch_size: AutoOrPositiveInt = Field(
        default="auto",
        description='Global batch = micro batch x accumulation x world size. Default "auto".',
    )
    train_micro_batch_size_per_gpu: AutoOrPositiveInt = Field(
        default="auto", description='Per-rank batch. Default "auto".'
    )
    gradient_accumulation_steps: AutoOrPositiveInt = Field(
        default="auto", description='Default "auto".'
    )
    gradient_clipping: AutoOrNonNegativeFloat = Field(
        default="auto",
        description='Gradient norm clip; 0 turns it off. Default "auto".',
    )
    zero_allow_untested_optimizer: bool = Field(
        default=True, description="Default true."
    )
    allgather_partitions: bool = Field(default=True, description="Default true.")
    allgather_bucket_size: BucketSize = Field(
        default=500_000_000, description="Elements per allgather bucket. Default 5e8."
    )
    reduce_scatter: bool = Field(default=True, description="Default true.")
    reduce_bucket_size: BucketSize = Field(
        default=500_000_000, description="Elements per reduce bucket. Default 5e8."
    )
    overlap_comm: bool = Field(default=False, description="Default false.")
    contiguous_gradients: bool = Field(default=True, description="Default true.")
    loss_scaling: LossScaling = Field(
        default_factory=LossScaling,
        description="fp16 loss scaling (fp16 and auto only).",
    )


class PreflightConfig(_Frozen):
    """The cluster check before every run: ssh, hostfile, then a short all-reduce."""

    enabled: bool = Field(
        default=True, description="Run the preflight before training. Default true."
    )
    min_busbw_gbps: NonNegativeFloat = Field(
        default=0.0,
        description=(
            "Stop the launch when the all-reduce's bus bandwidth (Gbit/s, largest message) is "
            "below this. Default 0: report only."
        ),
        examples=[50.0],
    )
    sizes_mb: tuple[PositiveFloat, ...] = Field(
        default=(1.0, 16.0, 64.0),
        min_length=1,
        description=(
            "All-reduce message sizes in MiB; the last one gives the bandwidth. "
            "Default [1, 16, 64]."
        ),
    )
    reach_timeout: Seconds = Field(
        default=60, description="How long every node may take to answer ssh. Default 60."
    )
    run_timeout: Seconds = Field(
        default=300, description="How long the all-reduce may take; 0 no limit. Default 300."
    )


class TrainingConfig(_Frozen):
    """The run: which workload, the DeepSpeed settings, and how ``pulumi up`` treats it."""

    launch: bool = Field(
        default=True, description="Start training on pulumi up. Default true."
    )
    wait: bool = Field(
        default=True,
        description="pulumi up waits for training to end (and fails with it). Default true.",
    )
    workload: Workload = Field(
        default_factory=LlamaFactoryWorkload,
        description="kind: script or kind: llamafactory. Default: the write-up's LLaMA-Factory run.",
    )
    deepspeed: DeepSpeedSettings = Field(default_factory=DeepSpeedSettings)
    master_port: Port = Field(
        default=29500, description="Rendezvous port. Default 29500."
    )
    stall_timeout: Seconds = Field(
        default=1800,
        description=(
            "Stop the run (and fail pulumi up in wait mode) when its log stays silent this "
            "many seconds; 0 never. A node pdsh loses stops it at once. Default 1800."
        ),
        examples=[600],
    )
    preflight: PreflightConfig = Field(default_factory=PreflightConfig)
    socket_ifname: InterfaceName | None = Field(
        default=None,
        description=(
            "NCCL/GLOO socket interface. Default: detected in the container at run time as "
            "the interface holding the overlay subnet."
        ),
        examples=["eth0"],
    )

    @model_validator(mode="after")
    def _precision_and_batch_agree_with_workload(self) -> TrainingConfig:
        problems = Problems()
        workload = self.workload
        if isinstance(workload, LlamaFactoryWorkload):
            args = workload.args
            fp16, bf16 = _is_true(args.get("fp16")), _is_true(args.get("bf16"))
            precision = self.deepspeed.precision
            where = ("deepspeed", "precision")
            if fp16 and bf16:
                problems.add(
                    ("workload", "args"),
                    "sets both fp16: true and bf16: true; pick one, e.g. remove bf16",
                )
            elif precision == "fp16" and not fp16:
                problems.add(
                    where,
                    "'fp16' conflicts with training.workload.args "
                    f"({'bf16: true' if bf16 else 'no fp16: true'}); set args.fp16: true, "
                    "or precision: auto to follow the args",
                )
            elif precision == "bf16" and not bf16:
                problems.add(
                    where,
                    "'bf16' conflicts with training.workload.args "
                    f"({'fp16: true' if fp16 else 'no bf16: true'}); set args.bf16: true "
                    "(and fp16: null), or precision: auto to follow the args",
                )
            elif precision == "fp32" and (fp16 or bf16):
                flag = "fp16" if fp16 else "bf16"
                problems.add(
                    where,
                    f"'fp32' conflicts with training.workload.args.{flag}: true; set "
                    f"args.{flag}: null, or precision: auto to follow the args",
                )
            # The Trainer refuses a ds_config whose numbers differ from its own arguments.
            for ds_key, arg_key in (
                ("train_micro_batch_size_per_gpu", "per_device_train_batch_size"),
                ("gradient_accumulation_steps", "gradient_accumulation_steps"),
            ):
                ds_value = getattr(self.deepspeed, ds_key)
                arg_value = as_int(args.get(arg_key))
                if (
                    ds_value != "auto"
                    and arg_value is not None
                    and ds_value != arg_value
                ):
                    problems.add(
                        ("deepspeed", ds_key),
                        f"{ds_value} differs from training.workload."
                        f"args.{arg_key} ({arg_value}); the Trainer rejects the mismatch: set "
                        f'{ds_key}: "auto" or make them equal',
                    )
        problems.raise_if_any()
        return self

    def effective_batch_numbers(self) -> tuple[int | None, int | None, int | None]:
        """(global batch, micro batch, accumulation steps) where known: ds_config numbers,
        else the LLaMA-Factory arguments that fill its "auto" values."""

        def known(value: int | str) -> int | None:
            return value if isinstance(value, int) else None

        ds = self.deepspeed
        micro, accumulation = (
            known(ds.train_micro_batch_size_per_gpu),
            known(ds.gradient_accumulation_steps),
        )
        if isinstance(self.workload, LlamaFactoryWorkload):
            args = self.workload.args
            micro = micro or as_int(args.get("per_device_train_batch_size"))
            # The Trainer's default accumulation is 1.
            accumulation = accumulation or as_int(
                args.get("gradient_accumulation_steps", 1)
            )
        return known(ds.train_batch_size), micro, accumulation


# --- the lab ----------------------------------------------------------------------------

HOST_MODE_SSH_PORT = 2222
"""The container's sshd port on the hosts' network, clear of the host's own sshd on 22."""


class LabConfig(_Frozen):
    """The whole stack configuration (the ``dslab:`` namespace)."""

    hosts: Hosts = Field(
        description="The servers; exactly one has role manager.",
        examples=[[{"name": "server1", "address": "10.0.18.1", "role": "manager"}]],
    )
    operator: OperatorConfig = Field(
        description="ssh key and known_hosts of the machine running Pulumi.",
        examples=[
            {
                "private_key_path": "~/.ssh/id_ed25519",
                "known_hosts_path": "~/.ssh/known_hosts",
            }
        ],
    )
    network: NetworkConfig = Field(default_factory=NetworkConfig)
    image: ImageConfig = Field(default_factory=ImageConfig)
    container: ContainerConfig = Field(default_factory=ContainerConfig)
    training: TrainingConfig = Field(default_factory=TrainingConfig)

    @model_validator(mode="before")
    @classmethod
    def _gpus_follow_image_variant(cls, data: Any) -> Any:
        # A host without `gpus` gets all GPUs on a gpu image and none on a cpu image:
        # the least surprising default either way.
        if not isinstance(data, Mapping) or not isinstance(
            data.get("hosts"), list | tuple
        ):
            return data
        image = data.get("image")
        variant = image.get("variant", "gpu") if isinstance(image, Mapping) else "gpu"
        default = "none" if variant == "cpu" else "all"
        hosts = [
            {**host, "gpus": default}
            if isinstance(host, Mapping) and "gpus" not in host
            else host
            for host in data["hosts"]
        ]
        return {**data, "hosts": hosts}

    @model_validator(mode="after")
    def _cross_section_rules(self) -> LabConfig:
        problems = self._host_mode_problems() if self.network.mode == "host" else self._address_problems()
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
                self.address_plan()
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
                "encrypts the overlay, and network.mode host has none; remove it, or set "
                "network.mode: overlay",
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
        for address in static_candidates(
            self.network.subnet, self.network.effective_ip_range, self.network.gateway
        ):
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

    def node_address(self, host_name: str) -> str:
        """Where the other containers reach host ``host_name``'s container: its overlay
        address, or in host mode the host's own."""
        if self.network.mode == "host":
            return next(host.address for host in self.hosts if host.name == host_name)
        return self.address_plan().address_of(host_name)

    def address_plan(self) -> AddressPlan:
        """Gateway, dynamic range and each host's static container address."""
        return plan_addresses(
            self.network.subnet,
            [(host.name, host.container_address) for host in self.hosts],
            ip_range=self.network.effective_ip_range,
            gateway=self.network.gateway,
        )


TOP_LEVEL_KEYS: tuple[str, ...] = tuple(LabConfig.model_fields)


# --- error formatting -------------------------------------------------------------------


def dotted_path(loc: Iterable[str | int]) -> str:
    """``("hosts", 1, "address")`` -> ``hosts[1].address`` (the form ``--path`` takes)."""
    text = ""
    for item in loc:
        if isinstance(item, int):
            text += f"[{item}]"
        elif item.isidentifier():
            text += f".{item}" if text else item
        else:
            text += f"[{item!r}]"
    return text


def format_path(loc: Iterable[str | int], namespace: str = NAMESPACE) -> str:
    """``("hosts", 1, "address")`` -> ``dslab:hosts[1].address``."""
    return f"{namespace}:{dotted_path(loc)}"


def _unwrap(annotation: Any) -> Any:
    """Strip Annotated and Optional wrappers."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is Annotated:
            annotation = typing.get_args(annotation)[0]
        elif origin in (Union, pytypes.UnionType):
            members = [
                arg for arg in typing.get_args(annotation) if arg is not type(None)
            ]
            if len(members) != 1:
                return annotation
            annotation = members[0]
        else:
            return annotation


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


class _Located:
    """What the error location points at: its display path, field and enclosing model."""

    def __init__(self, loc: Sequence[str | int]) -> None:
        self.path: list[str | int] = []
        self.field: FieldInfo | None = None
        self.model: type[BaseModel] | None = None
        current: Any = LabConfig
        for item in loc:
            current = _unwrap(current)
            if current is None:
                self.path.append(item)
                continue
            origin = typing.get_origin(current)
            if _is_model(current):
                self.model = current
                self.field = current.model_fields.get(str(item))
                current = self.field.annotation if self.field else None
                self.path.append(item)
            elif origin in (Union, pytypes.UnionType):
                # A discriminated union puts the tag in the location; it is not a key.
                members = {
                    member.model_fields["kind"].default: member
                    for member in typing.get_args(current)
                    if _is_model(member) and "kind" in member.model_fields
                }
                current = members.get(item)
                if current is None:
                    self.path.append(item)
            elif origin in (tuple, list):
                current = typing.get_args(current)[0]
                self.path.append(item)
                self.field = None
            elif origin is dict:
                current = typing.get_args(current)[1]
                self.path.append(item)
                self.field = None
            else:
                self.path.append(item)
                current = None
                self.field = None
        self.target: Any = _unwrap(current) if current is not None else None


def _example(field: FieldInfo | None) -> str | None:
    if field is None or not field.examples:
        return None
    example = field.examples[0]
    return example if isinstance(example, str) else json.dumps(example)


def _show(value: Any) -> str:
    if isinstance(value, SecretStr | EncryptedSecret):
        return "(secret)"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: ..." for key in value) + "}"
    return repr(value)


def format_error(error: Mapping[str, Any], namespace: str = NAMESPACE) -> list[str]:
    """One pydantic error (from ``ValidationError.errors()``) as message lines."""
    loc = tuple(item for item in error["loc"] if item != "[key]")
    is_key = "[key]" in error["loc"]
    located = _Located(loc)
    path = format_path(located.path, namespace)
    kind, value, ctx = error["type"], error.get("input"), error.get("ctx") or {}
    cause = ctx.get("error")
    if isinstance(cause, ConfigProblems):
        return [
            f"{format_path([*located.path, *sub], namespace)}: {message}"
            for sub, message in cause.problems
        ]
    if is_key and kind == "value_error":
        return [f"{path}: key {value!r} {cause}"]
    if is_encrypted_value(value) and kind != "extra_forbidden":
        allowed = ", ".join(format_path(p, namespace) for p in sorted(SECRET_PATHS))
        return [
            f"{path}: is a Pulumi secret, but only {allowed} may be secret; set it as plain "
            f"text: pulumi config set --path '{dotted_path(located.path)}' <value>"
        ]
    if kind == "value_error":
        return [f"{path}: {_show(value)} {cause}"]
    example = _example(located.field)
    suffix = f"; expected e.g. {example}" if example else ""
    if kind == "extra_forbidden":
        known = list(located.model.model_fields) if located.model else []
        key = str(located.path[-1]) if located.path else ""
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else "remove it; "
        return [f"{path}: unknown key; {hint}known keys: {', '.join(known)}"]
    if kind == "missing":
        return [
            f"{path}: is required; add it" + (f", e.g. {example}" if example else "")
        ]
    if kind == "literal_error":
        expected = ctx.get("expected", "")
        return [f"{path}: {_show(value)} is not allowed; expected one of {expected}"]
    if kind in ("union_tag_not_found", "union_tag_invalid"):
        tags = [
            str(member.model_fields["kind"].default)
            for member in typing.get_args(located.target)
            if _is_model(member) and "kind" in member.model_fields
        ]
        got = (
            f"kind {value.get('kind')!r} is unknown"
            if kind == "union_tag_invalid" and isinstance(value, Mapping)
            else "kind is missing"
        )
        return [f"{path}: {got}; expected kind: {' or kind: '.join(tags)}"]
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        keys = list(located.target.model_fields) if _is_model(located.target) else []
        expected = f"keys {', '.join(keys)}" if keys else "key: value pairs"
        return [f"{path}: {_show(value)} is not a mapping; expected {expected}"]
    # Tuples are lists in YAML.
    message = str(error["msg"]).replace("valid tuple", "list")
    message = message[0].lower() + message[1:] if message else message
    return [f"{path}: {_show(value)} is not valid ({message}){suffix}"]


def format_validation_error(
    error: ValidationError, namespace: str = NAMESPACE
) -> list[str]:
    """Every problem in a pydantic ``ValidationError`` as one line each, deduplicated."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        for line in format_error(item, namespace):
            if line not in lines:
                lines.append(line)
    return lines


# --- loaders ----------------------------------------------------------------------------


def load_lab_config(values: Mapping[str, Any]) -> LabConfig:
    """Validate the namespace-stripped configuration ``{"hosts": ..., "operator": ...}``.

    Raises :class:`LabConfigError` listing every problem found.
    """
    try:
        return LabConfig.model_validate(dict(values))
    except ValidationError as error:
        raise LabConfigError(format_validation_error(error)) from None


def strip_namespace(
    config: Mapping[str, Any], namespace: str = NAMESPACE
) -> tuple[dict[str, Any], list[str]]:
    """Pick the ``dslab:`` keys out of a full Pulumi config mapping.

    Keys without a namespace belong to the project (Pulumi's own rule). Keys of other
    namespaces configure providers and are ignored, except near-misses of ``dslab`` (a
    typo such as ``dslb:hosts``), reported as problems.
    """
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in config.items():
        prefix, _, name = key.rpartition(":")
        if prefix in ("", namespace):
            values[name] = value
        elif (
            difflib.SequenceMatcher(None, prefix, namespace).ratio() >= 0.6
            and name in TOP_LEVEL_KEYS
        ):
            problems.append(
                f"{key}: unknown namespace {prefix!r}; did you mean '{namespace}:{name}'?"
            )
    return values, problems


def _load(config: Mapping[str, Any]) -> LabConfig:
    values, problems = strip_namespace(config)
    try:
        lab = load_lab_config(values)
    except LabConfigError as error:
        raise LabConfigError([*problems, *error.problems]) from None
    if problems:
        raise LabConfigError(problems)
    return lab


class UniqueKeyLoader(yaml.SafeLoader):
    """A SafeLoader that refuses a key given twice (plain YAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice; keep one (YAML would silently keep the last)",
                    key_node.start_mark,
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_stack_file(path: str | Path) -> LabConfig:
    """Validate the ``config:`` section of a stack file such as ``Pulumi.dev.yaml``.

    Secrets stay encrypted (``{secure: v1:...}``); they are accepted where a secret is
    allowed and reported elsewhere.
    """
    path = Path(path)
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader
    except OSError as error:
        raise LabConfigError([f"{path}: cannot be read ({error.strerror})"]) from None
    except yaml.YAMLError as error:
        raise LabConfigError([f"{path}: is not valid YAML ({error})"]) from None
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise LabConfigError(
            [f"{path}: expected a mapping with a config: key at the top"]
        )
    config = document.get("config", {})
    if not isinstance(config, Mapping):
        raise LabConfigError(
            [f"{path}: config: must be a mapping of keys such as {NAMESPACE}:hosts"]
        )
    return _load(config)


def load_pulumi_config() -> LabConfig:
    """Validate the running program's configuration (call it from ``__main__``, not at import).

    The engine hands structured values over as JSON text, already decrypted.
    """
    from pulumi.runtime import config as runtime_config

    raw: dict[str, Any] = {
        **runtime_config.get_config_env(),
        **runtime_config.CONFIG.get(),
    }
    decoded: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        prefix, _, name = key.rpartition(":")
        if prefix != NAMESPACE:
            decoded[key] = value
            continue
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                problems.append(
                    f"{key}: {value!r} is not a structured value; set its fields with "
                    f"pulumi config set --path '{name}.<field>' <value>"
                )
                continue
        decoded[key] = value
    if problems:
        raise LabConfigError(problems)
    return _load(decoded)
