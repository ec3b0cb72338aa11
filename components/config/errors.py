"""Error text: every validation problem as one line naming the key path, the value received, what
was expected and the fix.
"""

from __future__ import annotations

import difflib
import json
import types as pytypes
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Union

from pydantic import BaseModel, SecretStr, ValidationError
from pydantic.fields import FieldInfo

from components.config.base import NAMESPACE, SECRET_PATHS, ConfigProblems
from components.config.fields import EncryptedSecret, is_encrypted_value
from components.config.lab import LabConfig


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
