"""`dslab:image`: the training image (variant, base image, Python, packages, distribution)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from components.config.base import FrozenModel, Problems
from components.config.fields import AptPackage, ImageReference, PipRequirement, PythonVersion
from components.config.on_change import Effect, on_change

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

# A build input: a new image tag, built (or copied) to every host; the containers run it.
_NEW_IMAGE = on_change(Effect.NEW_CONTAINERS, "a new image: every container, and a new run")


class ImageConfig(FrozenModel):
    """The training image, built from ``assets/image/Dockerfile.<variant>``."""

    variant: Literal["gpu", "cpu"] = Field(
        default="gpu",
        description="gpu: CUDA base with pip-installed torch/DeepSpeed; cpu: Debian's torch. Default gpu.",
        examples=["cpu"],
        json_schema_extra=_NEW_IMAGE,
    )
    base_image: ImageReference = Field(
        default=GPU_BASE_IMAGE,
        description=f"FROM image. Default {GPU_BASE_IMAGE} (gpu) or {CPU_BASE_IMAGE} (cpu).",
        examples=[GPU_BASE_IMAGE],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "a new image: every container, and a new run",
            default=f"{GPU_BASE_IMAGE} (gpu), {CPU_BASE_IMAGE} (cpu)",
        ),
    )
    python: PythonVersion | None = Field(
        default=GPU_PYTHON,
        description=(
            f'Python version to install. Default "{GPU_PYTHON}" (gpu); none for cpu, which '
            "uses the base image's python3 (Debian's torch is built for it)."
        ),
        examples=["3.11"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "a new image: every container, and a new run",
            default=f'"{GPU_PYTHON}" (gpu), the base image\'s python3 (cpu)',
        ),
    )
    apt_packages: tuple[AptPackage, ...] = Field(
        default=(), description="Extra apt packages.", examples=[["vim", "htop"]], json_schema_extra=_NEW_IMAGE
    )
    pip_requirements: tuple[PipRequirement, ...] = Field(
        default=(),
        description="Extra pip requirements, one specifier each.",
        examples=[["deepspeed==0.12.3"]],
        json_schema_extra=_NEW_IMAGE,
    )
    ca_bundle_path: str | None = Field(
        default=None,
        description="Extra CA bundle (PEM) for TLS-inspecting proxies, relative to the project.",
        examples=["/etc/ssl/certs/ca-certificates.crt"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, "when the file's content differs: a new image, every container, and a new run"
        ),
    )
    wheelhouse_path: str | None = Field(
        default=None,
        description="Local directory of wheels for air-gapped labs (pip --find-links).",
        examples=["wheels"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS, "when the wheels differ: a new image, every container, and a new run"
        ),
    )
    llamafactory: LlamaFactoryRelease | None = Field(
        default=None,
        description=(
            "Install this LLaMA-Factory release (pip package llamafactory) and its "
            "requirements, pinned by assets/image/llamafactory/<release>.txt. Needs "
            'Python 3.11 or later (gpu: python: "3.11"). Default: not installed.'
        ),
        examples=["0.9.4"],
        json_schema_extra=_NEW_IMAGE,
    )
    distribution: Literal["every-host", "build-once", "relay"] = Field(
        default="every-host",
        description=(
            "Build on every host; or build on the manager and copy it through this machine to each "
            "host (build-once); or build on the manager and let the hosts pass it on to each other "
            "over the lab's network, each loading it while it forwards it (relay: about one copy's "
            "time for the whole lab). Default every-host."
        ),
        examples=["relay"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "from or to every-host: the workers' images are made again (built there, or the manager's), "
            "and with them their containers; the image's content is the same",
        ),
    )
    tag: ImageReference = Field(
        default="dslab/train",
        description="Image name. Default dslab/train.",
        examples=["lab/train"],
        json_schema_extra=on_change(
            Effect.NEW_CONTAINERS,
            "the image is built again under the new name: a new run (the run names its image), and new "
            "containers where its id differs",
        ),
    )
    platform: str = Field(
        default="linux/amd64",
        description="Target platform of the build. Default linux/amd64. Not read by the program today.",
        examples=["linux/arm64"],
        json_schema_extra=on_change(Effect.NOTHING, "not read by the program: each engine builds for its own"),
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
