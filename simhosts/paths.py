"""Where the simulator keeps its files: operator state in the clone, caches outside it."""

from __future__ import annotations

import os
from pathlib import Path

from simhosts.plan import SimLab

REPO_ROOT = Path(__file__).resolve().parent.parent
ASSETS = Path(__file__).resolve().parent / "assets"
HOST_IMAGE_CONTEXT = ASSETS / "host-image"
ENGINE_SCRIPT = Path(__file__).resolve().parent / "engine.sh"


def state_dir(lab: SimLab) -> Path:
    """Operator-side files of ``lab`` (keys, known_hosts, stack config), in the repo, git-ignored."""
    return lab.state_dir(REPO_ROOT)


def cache_dir() -> Path:
    """Image tarballs kept across labs and engines: ``$DSLAB_CACHE/lab`` (default ~/.cache/dslab)."""
    root = os.environ.get("DSLAB_CACHE") or str(Path.home() / ".cache" / "dslab")
    return Path(root) / "lab"
