"""The toolchain's versions are pinned in one file, and everything else agrees with it."""

from __future__ import annotations

import re

from tests.support.pulumi_cli import REPO


def pins() -> dict[str, str]:
    text = (REPO / "toolchain" / "versions.env").read_text()
    return dict(re.findall(r"^([A-Z_]+)=(\S+)", text, flags=re.MULTILINE))


def test_the_python_sdk_pin_matches_requirements_txt() -> None:
    requirements = (REPO / "requirements.txt").read_text()
    assert f"pulumi=={pins()['PULUMI_PYTHON_SDK_VERSION']}" in requirements


def test_the_language_host_builds_against_the_pinned_sdk() -> None:
    go_mod = (REPO / "toolchain" / "langhost" / "go.mod").read_text()
    assert f"github.com/pulumi/pulumi/sdk/v3 v{pins()['PULUMI_VERSION']}" in go_mod


def test_the_sdk_is_not_newer_than_the_cli() -> None:
    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    assert version(pins()["PULUMI_PYTHON_SDK_VERSION"]) <= version(pins()["PULUMI_VERSION"])
