"""Loaders: a stack file, a namespace-stripped mapping, or the running Pulumi program's
configuration.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from components.config.base import NAMESPACE, LabConfigError
from components.config.errors import format_validation_error
from components.config.lab import TOP_LEVEL_KEYS, LabConfig


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
