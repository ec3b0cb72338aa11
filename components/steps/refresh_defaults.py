"""The values pulumi-docker's read fills in for inputs we leave out, given as inputs: a refresh
then finds in state what it reads from the engine, and a no-op `pulumi preview --diff` shows
nothing for our resources (else every one of them lists these as `+ dns: []`, `+ cpuPeriod: 0`
and so on, on every preview). Each is the engine's own default: nothing on the hosts changes."""

from __future__ import annotations

from typing import Any, Final

VOLUME_DEFAULTS: Final[dict[str, Any]] = {"driver_opts": {}}
"""docker.Volume."""

CONTAINER_DEFAULTS: Final[dict[str, Any]] = {
    "dns": [],
    "dns_opts": [],
    "dns_searches": [],
    "group_adds": [],
    "log_opts": {},
    "storage_opts": {},
    "sysctls": {},
    "tmpfs": {},
}
"""docker.Container."""

BUILD_DEFAULTS: Final[dict[str, Any]] = {
    "cpu_period": 0,
    "cpu_quota": 0,
    "cpu_shares": 0,
    "force_remove": False,
    "label": {},
    "labels": {},
    "memory": 0,
    "memory_swap": 0,
    "no_cache": False,
    "pull_parent": False,
    "shm_size": 0,
    "squash": False,
    "suppress_output": False,
}
"""docker.RemoteImageBuildArgs (`remove` we give already)."""
