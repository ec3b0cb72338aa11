"""The configuration reference (pure): every key of the stack file, found by walking the models
from ``LabConfig``, with its type in words, default, an example, its description and what changing
it does to a running lab (``on_change``); rendered as ``docs/configuration.md``.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from components.config.base import NAMESPACE
from components.config.lab import LabConfig
from components.config.on_change import Effect, OnChange, on_change_of
from components.config.shapes import Shape
from components.config.stack_schema import SCHEMA_PATH

REFERENCE_PATH = "docs/configuration.md"
"""Where the reference is kept, relative to the project directory."""

_PLAIN = {bool: "boolean", int: "integer", float: "number", str: "string"}


@dataclass(frozen=True)
class Row:
    """One key: its path from the namespace (``dslab:hosts[].ssh_port``) and what the reference says."""

    path: str
    field: FieldInfo
    type: str
    default: str
    example: str
    change: OnChange | None


@dataclass(frozen=True)
class Section:
    """The keys of one mapping: at PATH (``dslab:hosts[]``), of MODEL; KIND names a workload kind."""

    path: str
    model: type[BaseModel]
    rows: tuple[Row, ...]
    kind: str | None = None

    @property
    def heading(self) -> str:
        """The section's Markdown heading: its path, and its kind where two share the path."""
        return f"`{self.path}`" + (f" with `kind: {self.kind}`" if self.kind else "")


# --- walking the models ------------------------------------------------------------------


def _parts(annotation: Any, metadata: Sequence[Any] = ()) -> tuple[Any, list[Any]]:
    """The annotation without ``Annotated``, and all the metadata found on the way."""
    found = list(metadata)
    while typing.get_origin(annotation) is Annotated:
        annotation, *more = typing.get_args(annotation)
        found += more
    return annotation, found


def _shape(metadata: Sequence[Any]) -> Shape | None:
    """The last Shape among the metadata: the one pydantic applies last."""
    return next((item for item in reversed(metadata) if isinstance(item, Shape)), None)


def _is_model(annotation: Any) -> bool:
    """Whether the annotation is a configuration model (a mapping of its own keys)."""
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _members(annotation: Any) -> list[Any]:
    """A union's members but None; the annotation itself when it is no union."""
    if typing.get_origin(annotation) in (Union, types.UnionType):
        return [member for member in typing.get_args(annotation) if member is not type(None)]
    return [annotation]


def _kind(model: type[BaseModel]) -> str | None:
    """A workload model's `kind`; None for other models."""
    field = model.model_fields.get("kind")
    return str(field.default) if field is not None else None


def nested(annotation: Any, metadata: Sequence[Any] = ()) -> list[tuple[type[BaseModel], str]]:
    """The models a key's value holds, each with the path suffix that reaches it (``[]`` in a
    list, ``.*`` in a mapping, any key): none where a Shape states the whole value (a secret)."""
    annotation, metadata = _parts(annotation, metadata)
    shape = _shape(metadata)
    if shape is not None and shape.replace:
        return []
    members = _members(annotation)
    if members != [annotation]:  # a union, or X | None
        return [found for member in members for found in nested(member)]
    if _is_model(annotation):
        return [(annotation, "")]
    origin = typing.get_origin(annotation)
    if origin is tuple:
        return [(model, f"[]{suffix}") for model, suffix in nested(typing.get_args(annotation)[0])]
    if origin is dict:
        return [(model, f".*{suffix}") for model, suffix in nested(typing.get_args(annotation)[1])]
    return []


def readable(annotation: Any, metadata: Sequence[Any] = ()) -> str:
    """A type in words: ``string (IPv4 address)``, ``list of string (absolute path)``."""
    annotation, metadata = _parts(annotation, metadata)
    shape = _shape(metadata)
    if shape is not None:
        return shape.readable
    members = _members(annotation)
    if len(members) > 1:
        kinds = [_kind(member) for member in members if _is_model(member)]
        if len(kinds) == len(members) and all(kinds):
            return "mapping with " + " or ".join(f"`kind: {kind}`" for kind in kinds)
        return " or ".join(readable(member) for member in members)
    if members[0] is not annotation:  # X | None: X, whose own Annotated metadata counts
        return readable(members[0], metadata)
    origin = typing.get_origin(annotation)
    if origin is Literal:
        values = [f"`{value}`" for value in typing.get_args(annotation)]
        return values[0] if len(values) == 1 else "one of " + "/".join(values)
    if origin is tuple:
        at_least_one = any(isinstance(item, annotated_types.MinLen) and item.min_length >= 1 for item in metadata)
        item = readable(typing.get_args(annotation)[0])
        return f"list of {'mappings' if item == 'mapping' else item}" + (", at least one" if at_least_one else "")
    if origin is dict:
        key, value = typing.get_args(annotation)
        return f"mapping of {readable(key)} to {readable(value)}"
    if _is_model(annotation):
        return "mapping"
    return _PLAIN.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _plain(value: Any) -> Any:
    """VALUE as YAML would hold it: tuples as lists, models as mappings."""
    if isinstance(value, BaseModel):
        return _plain(value.model_dump())
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def yaml_inline(value: Any) -> str:
    """VALUE as one line of YAML, the way a stack file would write it: ``[--steps, '20']``."""
    text = yaml.safe_dump(_plain(value), default_flow_style=True, sort_keys=False, width=2**31, allow_unicode=True)
    return text.removesuffix("\n").removesuffix("\n...")


def _default(field: FieldInfo, change: OnChange | None) -> str:
    """The Default cell: the default in words where it follows other settings, else as YAML."""
    if change is not None and change.default is not None:
        return _prose(change.default)
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    return f"`{yaml_inline(value)}`"


def _example(field: FieldInfo) -> str:
    """The Example cell: the field's first example, as YAML."""
    return f"`{yaml_inline(field.examples[0])}`" if field.examples else ""


def _rows(model: type[BaseModel], path: str) -> tuple[Row, ...]:
    """MODEL's keys at PATH ("" for the namespace's own keys)."""
    rows = []
    for name, field in model.model_fields.items():
        change = on_change_of(field)
        rows.append(
            Row(
                path=f"{path}.{name}" if path else f"{NAMESPACE}:{name}",
                field=field,
                type=readable(field.annotation, field.metadata),
                default=_default(field, change),
                example=_example(field),
                change=change,
            )
        )
    return tuple(rows)


def sections(root: type[BaseModel] = LabConfig) -> list[Section]:
    """Every mapping of the configuration, the namespace first, then depth first in key order."""
    found: list[Section] = []

    def visit(model: type[BaseModel], path: str, kind: str | None = None) -> None:
        section = Section(path, model, _rows(model, path), kind)
        found.append(section)
        for row in section.rows:
            models = nested(row.field.annotation, row.field.metadata)
            several = len(models) > 1
            for child, suffix in models:
                visit(child, row.path + suffix, _kind(child) if several else None)

    visit(root, "")
    return found


def rows(root: type[BaseModel] = LabConfig) -> Iterator[Row]:
    """Every key, in the reference's order."""
    for section in sections(root):
        yield from section.rows


# --- Markdown --------------------------------------------------------------------------------


def _prose(text: str) -> str:
    """Text for a table cell: no pipe ends the cell, no <name> outside `code` reads as an HTML tag."""
    parts = re.split(r"(`[^`]*`)", text.replace("|", "\\|"))
    return "".join(part if part.startswith("`") else part.replace("<", "&lt;").replace(">", "&gt;") for part in parts)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading (lowercase, spaces to '-', other punctuation but '-' and '_' dropped)."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def _type_cell(row: Row, headings: dict[str, str]) -> str:
    """The Type cell, linking to the section of a mapping the key holds."""
    text = _prose(row.type)
    for prefix in (row.path, f"{row.path}[]", f"{row.path}.*"):
        for path, heading in headings.items():
            if path == prefix:
                return f"{text}, [below](#{anchor(heading)})"
    return text


def render(found: Sequence[Section]) -> str:
    """``docs/configuration.md``."""
    headings: dict[str, str] = {}
    for section in found[1:]:
        # A workload's two kinds share a path: a key links to the first.
        headings.setdefault(section.path, section.heading)
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated by `python -m components.reference` from components/config/: edit the models, "
        "then run it again. -->",
        "",
        f"Every key of a stack file (`Pulumi.<stack>.yaml`), namespace `{NAMESPACE}`, as the models in "
        "`components/config/` define it. `python -m components.validate Pulumi.<stack>.yaml` checks a "
        f"file without touching a host. [`{SCHEMA_PATH}`](../{SCHEMA_PATH}) is its JSON Schema, made "
        "from the same models: an editor that reads JSON Schema (VS Code's YAML extension, for one) "
        "checks a stack file as you type when its first line is",
        "",
        "```yaml",
        f"# yaml-language-server: $schema=./{SCHEMA_PATH}",
        "```",
        "",
        "The schema checks each key on its own; the rules across keys (unique host names and "
        "addresses, container addresses inside the subnet, the batch size against the world size) "
        "only `components.validate` and `pulumi up` check.",
        "",
        "The last column says what `pulumi up` does to a lab that runs after the key changed, the "
        "most it does (the note says when it does less); see "
        "[What starts a new run](runs.md#what-starts-a-new-run) and "
        "[Changing the host list](day-two.md#changing-the-host-list):",
        "",
        "| Changing it on a running lab does | What `pulumi up` does |",
        "|---|---|",
        *(f"| {effect.value} | {_prose(effect.meaning)} |" for effect in Effect),
        "",
    ]
    for index, section in enumerate(found):
        if index == 0:
            lines += [f"## The `{NAMESPACE}:` keys", ""]
        else:
            lines += [f"## {section.heading}", ""]
        doc = (section.model.__doc__ or "").strip().split("\n\n")[0]
        if doc and index:
            lines += [_prose(" ".join(doc.split()).replace("``", "`")), ""]
        lines += [
            "| Key | Type | Default | Example | Description | Changing it on a running lab does |",
            "|---|---|---|---|---|---|",
        ]
        for row in section.rows:
            change = _prose(row.change.text) if row.change is not None else ""
            lines.append(
                f"| `{row.path}` | {_type_cell(row, headings)} | {row.default} | {row.example} | "
                f"{_prose(row.field.description or '')} | {change} |"
            )
        lines.append("")
    return "\n".join(lines)


def reference_text() -> str:
    """The reference as written to REFERENCE_PATH."""
    return render(sections())
