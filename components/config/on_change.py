"""What changing a key on a running lab does, written next to the key: every configuration field
carries one `Effect` (and a note where it needs one) in its ``json_schema_extra``, which the
configuration reference (``python -m components.reference``) prints and a unit test requires.

The effect is what `pulumi up` does today after the key changed, the most it does: a key whose
change makes the containers again is `NEW_CONTAINERS` even where it only sometimes does (the note
says when).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from pydantic.fields import FieldInfo
from pydantic.json_schema import JsonDict

ON_CHANGE_KEY = "x-dslab-on-change"
NOTE_KEY = "x-dslab-on-change-note"
DEFAULT_KEY = "x-dslab-default"
"""Keys of a field's ``json_schema_extra``; the stack file's JSON Schema folds them into the
description (components.config.stack_schema)."""


class Effect(Enum):
    """What `pulumi up` does to a running lab after a key changed, least first."""

    NOTHING = "nothing"
    REPORTS_ONLY = "reports only"
    NEW_RUN = "new run"
    NEW_CONTAINERS = "new containers"

    @property
    def rank(self) -> int:
        """Its place from NOTHING (0) to NEW_CONTAINERS (3)."""
        return list(Effect).index(self)

    @property
    def meaning(self) -> str:
        """What it means, for the reference's legend."""
        return _MEANINGS[self]


_MEANINGS = {
    Effect.NOTHING: (
        "no container is made again and the run is left alone: the key changes how this machine reaches or "
        "waits for the hosts, or a setting applied in place or later (the note says when)"
    ),
    Effect.REPORTS_ONLY: (
        "the run's step runs again and reports the run as it is, starting and stopping nothing; the value "
        "applies to the run going (how it is watched) or to the next one"
    ),
    Effect.NEW_RUN: "what the run is changed: the run going is stopped and a new one starts",
    Effect.NEW_CONTAINERS: (
        "containers are made again (every one, or the host's own, as noted), which stops the run going; it "
        "then goes on from its last checkpoint, or starts anew when what it is changed too"
    ),
}


@dataclass(frozen=True)
class OnChange:
    """A key's effect on a running lab, a note that says more, and its default in words where the
    default follows other settings (the schema then states no default)."""

    effect: Effect
    note: str = ""
    default: str | None = None

    @property
    def text(self) -> str:
        """``new containers — a new overlay: every container``."""
        return f"{self.effect.value} — {self.note}" if self.note else self.effect.value


def on_change(effect: Effect, note: str = "", *, default: str | None = None) -> JsonDict:
    """A field's ``json_schema_extra``: EFFECT, a NOTE where it needs one, and the DEFAULT in
    words where it follows other settings."""
    extra: JsonDict = {ON_CHANGE_KEY: effect.value}
    if note:
        extra[NOTE_KEY] = note
    if default is not None:
        extra[DEFAULT_KEY] = default
    return extra


def on_change_of(field: FieldInfo) -> OnChange | None:
    """What the field says changing it does; None for a field that says nothing (a test refuses it)."""
    extra = field.json_schema_extra
    if not isinstance(extra, dict) or ON_CHANGE_KEY not in extra:
        return None
    return OnChange(
        effect=Effect(extra[ON_CHANGE_KEY]),
        note=str(extra.get(NOTE_KEY, "")),
        default=str(extra[DEFAULT_KEY]) if DEFAULT_KEY in extra else None,
    )
