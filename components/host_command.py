"""One step on a host as a `command.remote.Command`: a script of `assets/` sent on stdin to
`bash -s`, so the command line (which the provider prints in every error and the preview
shows) stays short, and the host needs only bash.

For steps with nothing to read back: a Command has no read, so `pulumi refresh` cannot
see what it made change on the host (those steps are RemoteScripts, with a read script).
Scripts write progress to stderr, streamed to the Pulumi log, and a result, if any, to stdout.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_command as command

from components.paths import ASSETS_DIR


def bash_stdin_call(*args: pulumi.Input[str]) -> pulumi.Output[str]:
    """`bash -s -- ARGS...`, quoted for the host's shell."""
    return pulumi.Output.all(*args).apply(lambda values: shlex.join(["bash", "-s", "--", *map(str, values)]))


def host_script(
    name: str,
    connection: command.remote.ConnectionArgs,
    script: str,
    args: Sequence[pulumi.Input[str]] = (),
    *,
    delete_args: Sequence[pulumi.Input[str]] | None = None,
    triggers: Sequence[pulumi.Input[Any]] | None = None,
    opts: pulumi.ResourceOptions | None = None,
) -> command.remote.Command:
    """Runs `assets/<script> ARGS` on the host when created (again when an argument, the
    script or a trigger changes), and `<script> DELETE_ARGS` when deleted if given: the
    provider feeds the same stdin to both."""
    return command.remote.Command(
        name,
        connection=connection,
        create=bash_stdin_call(*args),
        delete=bash_stdin_call(*delete_args) if delete_args is not None else None,
        stdin=(ASSETS_DIR / script).read_text(encoding="utf-8"),
        triggers=list(triggers) if triggers is not None else None,
        logging=command.remote.Logging.STDERR,
        # Else the last run's stdout and stderr go to the host as environment variables.
        add_previous_output_in_env=False,
        opts=opts,
    )
