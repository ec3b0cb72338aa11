"""The lab's stack configuration: one frozen pydantic model tree, its loaders, and its error text.

Stack files hold six structured keys in the ``dslab:`` namespace, one module each: ``hosts``,
``operator``, ``network``, ``image``, ``container``, ``training``; ``lab`` holds the whole tree
(:class:`LabConfig`) and the rules across sections. :func:`load_lab_config` validates the
namespace-stripped mapping and raises :class:`LabConfigError` listing every problem, each line
naming the key path, the value received, what was expected (with an example) and the fix
(``errors``).

Field-level rules are pydantic validators (reusable field types in ``fields``); cross-field
rules live in each model's ``model_validator`` and report all their findings at once through
``base.ConfigProblems``. A model's cross-field rules run only when its own fields are valid, so
a second pass may find more problems once the first ones are fixed.

This module is the package's interface: the rest of the program imports from here.
"""

from __future__ import annotations

from components.config.base import LabConfigError
from components.config.fields import GpuRequestValue, size_to_mb
from components.config.hosts import Host, Mount
from components.config.operator import OperatorConfig
from components.config.image import CPU_BASE_IMAGE, GPU_BASE_IMAGE, ImageConfig
from components.config.container import Ulimit
from components.config.training import (
    LLAMAFACTORY_DEFAULT_ARGS,
    LLAMAFACTORY_ENV,
    ArgValue,
    DeepSpeedSettings,
    LlamaFactoryWorkload,
    PreflightConfig,
    ScriptWorkload,
)
from components.config.lab import LabConfig
from components.config.errors import format_path
from components.config.loading import load_lab_config, load_pulumi_config, load_stack_file, strip_namespace

__all__ = [
    "ArgValue",
    "CPU_BASE_IMAGE",
    "DeepSpeedSettings",
    "GPU_BASE_IMAGE",
    "GpuRequestValue",
    "Host",
    "ImageConfig",
    "LLAMAFACTORY_DEFAULT_ARGS",
    "LLAMAFACTORY_ENV",
    "LabConfig",
    "LabConfigError",
    "LlamaFactoryWorkload",
    "Mount",
    "OperatorConfig",
    "PreflightConfig",
    "ScriptWorkload",
    "Ulimit",
    "format_path",
    "load_lab_config",
    "load_pulumi_config",
    "load_stack_file",
    "size_to_mb",
    "strip_namespace",
]
