"""The toolchain's versions are pinned in one file, and everything else agrees with it."""

from __future__ import annotations

import re

import pytest

from harness.pulumi_cli import REPO


def pins() -> dict[str, str]:
    text = (REPO / "toolchain" / "versions.env").read_text()
    return dict(re.findall(r"^([A-Z_]+)=(\S+)", text, flags=re.MULTILINE))


def required_versions() -> dict[str, str]:
    text = (REPO / "requirements.txt").read_text()
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", text, flags=re.MULTILINE))


@pytest.mark.parametrize(
    ("package", "pin"),
    [
        ("pulumi", "PULUMI_PYTHON_SDK_VERSION"),
        ("pulumi-docker", "PULUMI_DOCKER_VERSION"),
        ("pulumi-command", "PULUMI_COMMAND_VERSION"),
    ],
)
def test_each_python_sdk_in_requirements_txt_is_the_pinned_version(package: str, pin: str) -> None:
    assert required_versions().get(package) == pins()[pin], (
        f"requirements.txt has {package}=={required_versions().get(package)}, "
        f"toolchain/versions.env has {pin}={pins()[pin]}: the SDK must match its plugin"
    )


def test_the_sdk_and_the_language_host_are_not_newer_than_the_cli() -> None:
    def version(text: str) -> tuple[int, ...]:
        return tuple(int(part) for part in text.split("."))

    assert version(pins()["PULUMI_PYTHON_SDK_VERSION"]) <= version(pins()["PULUMI_VERSION"])
    assert version(pins()["PULUMI_LANGUAGE_PYTHON_VERSION"]) <= version(pins()["PULUMI_VERSION"])
