"""What every section of the stack configuration shares: the namespace, the frozen model base, and
how cross-field problems are collected and raised.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

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


def is_true(value: Any) -> bool:
    """A LLaMA-Factory flag value that means true (``pulumi config set`` may store "true")."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


class FrozenModel(BaseModel):
    """Base of every configuration model: immutable, unknown keys rejected."""

    model_config = ConfigDict(frozen=True, extra="forbid")


