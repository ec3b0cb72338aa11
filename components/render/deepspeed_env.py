"""``.deepspeed_env``: the environment DeepSpeed's launcher exports to every remote rank.

pdsh starts remote ranks through non-login ssh shells, which read neither ``/etc/profile``
nor the container's environment; the launcher reads ``.deepspeed_env`` (in its working
directory or home) and exports each ``KEY=VALUE`` line. It splits lines on the first ``=``,
and a blank line breaks it, so the text has none, and values may not contain line breaks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from components.config import LLAMAFACTORY_ENV, LabConfig, LlamaFactoryWorkload

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class DeepSpeedEnvError(ValueError):
    """A variable cannot be written to ``.deepspeed_env``."""


def deepspeed_environment(
    config: LabConfig, socket_ifname: str, path: str | None = None
) -> dict[str, str]:
    """The variables every rank needs.

    ``socket_ifname`` is the container interface that holds the overlay subnet
    (``training.socket_ifname`` when set, otherwise detected in the container); NCCL and
    gloo otherwise pick the first interface, which may be docker_gwbridge's, and hang
    ("Proxy Call to rank 0 failed (Connect)"). ``path`` is the container's PATH (the
    image's venv first), which non-login shells would not have. Debian's CPU torch is
    built without libuv, hence ``USE_LIBUV=0`` for the cpu image. A LLaMA-Factory workload
    runs offline (``LLAMAFACTORY_ENV``). ``container.env`` comes last and wins.
    """
    env: dict[str, str] = {
        "NCCL_SOCKET_IFNAME": socket_ifname,
        "GLOO_SOCKET_IFNAME": socket_ifname,
    }
    if config.image.variant == "cpu":
        env["USE_LIBUV"] = "0"
    if path is not None:
        env["PATH"] = path
    if isinstance(config.training.workload, LlamaFactoryWorkload):
        env.update(LLAMAFACTORY_ENV)
    env.update(config.container.env)
    return env


def render_deepspeed_env(env: Mapping[str, str]) -> str:
    """``KEY=VALUE`` lines sorted by key, newline-terminated, no blank lines.

    Raises :class:`DeepSpeedEnvError` for a name that is not a variable name or a value
    with a line break.
    """
    lines: list[str] = []
    for name in sorted(env):
        value = env[name]
        if not _NAME.match(name):
            raise DeepSpeedEnvError(
                f"{name!r} is not an environment variable name; expected e.g. NCCL_DEBUG"
            )
        if any(char in value for char in "\r\n\x00"):
            raise DeepSpeedEnvError(
                f"{name}: {value!r} contains a line break, which .deepspeed_env cannot hold; "
                "use a single-line value"
            )
        lines.append(f"{name}={value}\n")
    return "".join(lines)
