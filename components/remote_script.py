"""Retired. Stacks made by dslab before its steps became pulumi-command and pulumi-docker
resources hold resources of a Pulumi dynamic provider defined here (`RemoteScript`); their
state names this module's `RemoteScriptProvider`, which Pulumi loads to refresh or delete
them. Nothing here serves them any more: every call stops with the one line below, naming the
command that forgets them (assets/operator/forget-retired.py, docs/upgrading.md). Stays as
long as such stacks may exist; new code never uses it.
"""

from __future__ import annotations

from typing import Any, NoReturn

UPGRADE = (
    "this stack holds steps of an older dslab (RemoteScript); run `make upgrade STACK=<this stack>` "
    "once, then `pulumi up` (see docs/upgrading.md)"
)


class RetiredStep(Exception):
    pass


class RemoteScriptProvider:
    """What an older stack's state loads: stops every operation with UPGRADE."""

    def _stop(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise RetiredStep(UPGRADE)

    configure = check = diff = create = read = update = delete = _stop
