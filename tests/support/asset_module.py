"""A script of assets/ loaded as a module, for tests of its functions (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def load_asset(file_name: str) -> ModuleType:
    """The script as a module; it imports its siblings (as in /opt/dslab/) as they are in assets/."""
    if str(ASSETS) not in sys.path:
        sys.path.append(str(ASSETS))
    path = ASSETS / file_name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
