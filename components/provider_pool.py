"""More threads for the dynamic provider, so every host's step runs at the same time.

Pulumi serves every dynamic resource of a program from one provider process whose gRPC
server has a pool of 4 threads (`pulumi.dynamic.__main__`), while the engine itself runs
up to 4 x CPUs steps at once. Our steps mostly wait on ssh, so with 4 threads an 8-host lab
does each per-host step (claim, join, image copy, container, keys) in two waves. Widening
that pool is reaching into the SDK: a private attribute of the standard library's
ThreadPoolExecutor, which new threads consult on every submit. If the SDK changes, this
finds no pool and changes nothing.
"""

from __future__ import annotations

import gc
import sys
from concurrent.futures import ThreadPoolExecutor

PROVIDER_THREADS = 64


def in_dynamic_provider() -> bool:
    """True in the process that serves dynamic resources (`python -m pulumi.dynamic`)."""
    main = sys.modules.get("__main__")
    return getattr(main, "__spec__", None) is not None and main.__spec__.name == "pulumi.dynamic.__main__"  # type: ignore[union-attr]


def widen_provider_pool(threads: int = PROVIDER_THREADS) -> int:
    """Raises the thread limit of the provider's request pools; returns how many it widened."""
    widened = 0
    for candidate in gc.get_objects():
        if isinstance(candidate, ThreadPoolExecutor) and getattr(candidate, "_max_workers", threads) < threads:
            candidate._max_workers = threads
            widened += 1
    return widened
