"""The JSON Schema of a stack file (``Pulumi.<stack>.yaml``), made from the configuration models:
``schema/stack.schema.json``, which editors that read JSON Schema check a stack file against as
it is typed (``# yaml-language-server: $schema=...`` on its first line).

It states each key's type and the rules of one key or one mapping (patterns, ranges, required
keys, unknown keys refused, exactly one manager, exactly one of the operator's keys); the rules
across keys that JSON Schema cannot state (unique host names and addresses, addresses inside the
subnet, the batch size) only ``python -m components.validate`` checks. It is stricter than the
loader in one way: a plain number or boolean key written as text (``ssh_port: "22"``), which
pydantic converts and Pulumi never writes, is refused.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic.json_schema import GenerateJsonSchema
from pydantic_core import CoreSchema

from components.config.base import NAMESPACE
from components.config.lab import TOP_LEVEL_KEYS, LabConfig
from components.config.on_change import DEFAULT_KEY, NOTE_KEY, ON_CHANGE_KEY, Effect, OnChange
from components.config.shapes import JsonSchema

SCHEMA_PATH = "schema/stack.schema.json"
"""Where the schema is kept, relative to the project directory."""

DRAFT = "https://json-schema.org/draft/2020-12/schema"


class _WithoutFieldTitles(GenerateJsonSchema):
    """pydantic's generator without a title on every key ("Ssh Port"), which editors would show."""

    def field_title_should_be_set(self, schema: CoreSchema) -> bool:
        """Never: a key's name is its title."""
        return False


def near_misses(namespace: str = NAMESPACE) -> str:
    """A pattern for the namespaces one typo from NAMESPACE (a letter left out, changed, added or two
    swapped): the loader takes such a key for a typo of ``dslab:`` (loading.strip_namespace)."""
    any_char = "[^:]"
    variants = set()
    for index in range(len(namespace) + 1):
        head, tail = re.escape(namespace[:index]), re.escape(namespace[index:])
        variants.add(f"{head}{any_char}{tail}")
        if index < len(namespace):
            variants.add(f"{head}{re.escape(namespace[index + 1 :])}")
            variants.add(f"{head}{any_char}{re.escape(namespace[index + 1 :])}")
        if index < len(namespace) - 1:
            swapped = namespace[:index] + namespace[index + 1] + namespace[index] + namespace[index + 2 :]
            if swapped != namespace:
                variants.add(re.escape(swapped))
    # The wildcards match the namespace itself too, which is no typo.
    return f"^(?!{re.escape(namespace)}:)(?:{'|'.join(sorted(variants))}):(?:{'|'.join(TOP_LEVEL_KEYS)})$"


def _config_schema(lab: JsonSchema) -> JsonSchema:
    """The ``config:`` mapping: the ``dslab:`` keys, and any other namespace's (a provider's,
    ``pulumi:``), whose values are theirs to check."""
    ours = [f"{NAMESPACE}:{key}" for key in lab["properties"]]
    return {
        "type": "object",
        "description": f"The stack's configuration: the {NAMESPACE}: keys, and other namespaces' keys.",
        "properties": {f"{NAMESPACE}:{key}": value for key, value in lab["properties"].items()},
        "required": [f"{NAMESPACE}:{key}" for key in lab.get("required", [])],
        "propertyNames": {
            "anyOf": [
                {"enum": ours},
                {
                    # Pulumi's key forms `<namespace>:<name>` and `<namespace>:config:<name>`.
                    "pattern": rf"^(?!{re.escape(NAMESPACE)}:)[^:]+:(?:config:)?[^:]+$",
                    "not": {"pattern": near_misses()},
                },
            ]
        },
    }


def _fold_on_change(node: Any) -> None:
    """Moves each key's on-change note into its description, for an editor's hover; a key whose
    default follows other settings states none."""
    if isinstance(node, dict):
        if ON_CHANGE_KEY in node:
            change = OnChange(Effect(node.pop(ON_CHANGE_KEY)), str(node.pop(NOTE_KEY, "")))
            if node.pop(DEFAULT_KEY, None) is not None:
                node.pop("default", None)
            description = str(node.get("description", "")).strip()
            node["description"] = f"{description} On a running lab: {change.text}.".strip()
        for value in node.values():
            _fold_on_change(value)
    elif isinstance(node, list):
        for item in node:
            _fold_on_change(item)


def _keys_by_pattern(node: Any) -> None:
    """pydantic writes a mapping whose keys follow a pattern (``dict[EnvName, ...]``) as
    ``patternProperties``, which lets any other key through; the loader refuses those."""
    if isinstance(node, dict):
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict) and len(patterns) == 1 and "additionalProperties" not in node:
            ((pattern, value),) = patterns.items()
            del node["patternProperties"]
            node["propertyNames"] = {"pattern": pattern}
            node["additionalProperties"] = value
        for value in node.values():
            _keys_by_pattern(value)
    elif isinstance(node, list):
        for item in node:
            _keys_by_pattern(item)


def stack_schema() -> JsonSchema:
    """The JSON Schema of a whole stack file."""
    lab = LabConfig.model_json_schema(mode="validation", schema_generator=_WithoutFieldTitles)
    schema: JsonSchema = {
        "$schema": DRAFT,
        "title": f"{NAMESPACE} stack file",
        "description": (
            "A Pulumi stack file of the dslab project (Pulumi.<stack>.yaml). Rules across keys are "
            "checked by python -m components.validate only."
        ),
        "type": "object",
        "properties": {
            "config": _config_schema(lab),
            "secretsprovider": {"type": "string", "description": "Pulumi's secrets provider of the stack."},
            "encryptedkey": {"type": "string", "description": "The data key, encrypted by a cloud secrets provider."},
            "encryptionsalt": {"type": "string", "description": "The passphrase secrets provider's salt."},
            "environment": {
                "type": ["array", "object"],
                "description": "Pulumi ESC environments the stack imports.",
            },
        },
        "required": ["config"],
        "additionalProperties": False,
        "$defs": lab["$defs"],
    }
    _keys_by_pattern(schema)
    _fold_on_change(schema)
    return schema


def schema_text() -> str:
    """``schema/stack.schema.json`` as written: two-space indented, one final newline."""
    return json.dumps(stack_schema(), indent=2, ensure_ascii=False) + "\n"
