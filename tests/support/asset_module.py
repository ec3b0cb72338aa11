"""A script of assets/ loaded as a module, for tests of its functions (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

ASSETS = Path(__file__).resolve().parents[2] / "assets"


def load_asset(file_name: str) -> ModuleType:
    path = ASSETS / file_name
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
