"""Hands pytest's terminal to harness.progress, for progress lines of long steps."""

from __future__ import annotations

import pytest

from harness import progress


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if terminal is not None:
        progress.attach(terminal, capture)
