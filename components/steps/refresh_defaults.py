"""The values pulumi-docker's read fills in for the build inputs we leave out, given as inputs: a
refresh then finds in state what it reads from the engine, and a no-op `pulumi preview --diff`
does not list `cpuPeriod: 0`, `noCache: false` and the like on every preview. Each is Docker's own
default: nothing on the hosts changes.

Empty maps and lists (a container's `dns: []`, a volume's `driverOpts: {}`) cannot be settled
this way: pulumi-docker records them as absent when it creates a resource and as empty when it
reads one, whatever the program gives. The first refresh that an `up` keeps (the next `up`'s)
records them; until then a `preview --diff` lists them as added.
"""

from __future__ import annotations

from typing import Any, Final

BUILD_DEFAULTS: Final[dict[str, Any]] = {
    "cpu_period": 0,
    "cpu_quota": 0,
    "cpu_shares": 0,
    "force_remove": False,
    "memory": 0,
    "memory_swap": 0,
    "no_cache": False,
    "pull_parent": False,
    "shm_size": 0,
    "squash": False,
    "suppress_output": False,
}
"""docker.RemoteImageBuildArgs (`remove` we give already)."""
