"""One step on a host as a `command.remote.Command`: a script of `assets/` sent on stdin to
`bash -s`, so the command line (which the provider prints in every error and the preview
shows) stays short, and the host needs only bash.

A Command has no read: what a step keeps inside a container is checked by the hosts' probe
instead (components.hosts.probe, on every preview and up), which hands the step its generation:
the one the step left while its work is intact, the next one when not. The generation is part
of the command line, so a changed one runs the Command again in place (an update), once.
Scripts write progress to stderr, streamed to the Pulumi log, and a result, if any, to stdout.
The text starts by naming the host; the engine's bound (host/lib/engine-bound.sh) is kept on
the host by its own step (host/host-timeout.sh), so a new bound runs no other step again.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_command as command

from components.hosts.remote_host import RemoteHost
from components.paths import ASSETS_DIR

INCLUDE = "# dslab:include "


def script_text(script: str, host: RemoteHost | None = None) -> str:
    """The script with each `# dslab:include <assets path>` line replaced by that file (its own
    includes too): the host receives one text, so shell shared by several host scripts travels
    inside each. For a HOST, the text first names it. The engine's bound is not in the text: the
    host keeps it (host/host-timeout.sh), so a new bound runs no step again."""
    text = included_text(script)
    if host is None:
        return text
    return f"DSLAB_HOST={shlex.quote(host.name)}\n{text}"


def included_text(script: str) -> str:
    """SCRIPT with its `# dslab:include` lines replaced, recursively."""
    lines = (ASSETS_DIR / script).read_text(encoding="utf-8").splitlines(keepends=True)
    return "".join(included_text(line[len(INCLUDE) :].strip()) if line.startswith(INCLUDE) else line for line in lines)


def bash_stdin_call(*args: pulumi.Input[str], generation: int | None = None) -> pulumi.Output[str]:
    """`bash -s -- ARGS...` (after `env DSLAB_GEN=N` for a kept step), quoted for the host's shell."""
    prefix = ["env", f"DSLAB_GEN={generation}"] if generation is not None else []
    return pulumi.Output.all(*args).apply(lambda values: shlex.join([*prefix, "bash", "-s", "--", *map(str, values)]))


def host_script(
    name: str,
    host: RemoteHost,
    script: str,
    args: Sequence[pulumi.Input[str]] = (),
    *,
    delete_args: Sequence[pulumi.Input[str]] | None = None,
    triggers: Sequence[pulumi.Input[Any]] | None = None,
    generation: int | None = None,
    data: pulumi.Input[str] | None = None,
    opts: pulumi.ResourceOptions | None = None,
) -> command.remote.Command:
    """Runs `assets/<script> ARGS` on HOST when created (again when an argument, the data,
    the script or the generation changes; made anew when a trigger does), and
    `<script> DELETE_ARGS` when deleted if given: the provider feeds the same stdin to both.

    DATA follows the script on stdin, for the script to read (it ends in `exit`, so bash never
    takes the data for commands). GENERATION is the kept step's (components.hosts.probe)."""
    text = script_text(script, host)
    stdin: pulumi.Input[str] = text if data is None else pulumi.Output.from_input(data).apply(lambda body: text + body)
    if host.after:
        opts = pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(host.after)))
    return command.remote.Command(
        name,
        connection=host.command,
        create=bash_stdin_call(*args, generation=generation),
        delete=bash_stdin_call(*delete_args) if delete_args is not None else None,
        stdin=stdin,
        triggers=list(triggers) if triggers is not None else None,
        logging=command.remote.Logging.STDERR,
        # Else the last run's stdout and stderr go to the host as environment variables.
        add_previous_output_in_env=False,
        opts=opts,
    )
