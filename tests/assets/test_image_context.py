"""The Dockerfiles themselves: their build args, layer order and ssh host keys.

What goes into their build context is tested on the code that makes it, in
tests/unit/test_build_context.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

IMAGE = Path(__file__).resolve().parents[2] / "assets" / "image"
DOCKERFILES = {variant: IMAGE / f"Dockerfile.{variant}" for variant in ("cpu", "gpu")}


def declared_args(variant: str) -> set[str]:
    return set(re.findall(r"^ARG (\w+)", DOCKERFILES[variant].read_text(), re.MULTILINE))


def documented_args() -> set[str]:
    """The arg names in the first column of README.md's "Build args" table."""
    section = IMAGE.joinpath("README.md").read_text().split("## Build args", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`(\w+)`", row)}


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_each_dockerfile_takes_the_build_args_both_share(variant: str) -> None:
    assert {"BASE_IMAGE", "APT_PACKAGES", "DEEPSPEED_VERSION"} <= declared_args(variant)


def test_every_build_arg_is_documented_in_the_readme_and_nothing_else_is() -> None:
    declared = declared_args("cpu") | declared_args("gpu")
    assert documented_args() == declared, "assets/image/README.md lists exactly the args the Dockerfiles take"


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_our_scripts_are_the_last_layer_so_editing_them_rebuilds_little(
    variant: str,
) -> None:
    text = DOCKERFILES[variant].read_text()
    instructions = [line.split()[0] for line in text.splitlines() if re.match(r"^[A-Z]+ ", line)]
    copies = [i for i, word in enumerate(instructions) if word == "COPY"]
    runs = [i for i, word in enumerate(instructions) if word == "RUN"]
    assert "COPY dslab/ /opt/dslab/" in text
    assert copies[-1] > runs[-2], "only the chmod of our scripts may follow their COPY"
    assert text.index("deepspeed==") < text.index("APT_PACKAGES}") < text.index("requirements.txt /opt"), (
        "slow layers first: DeepSpeed, then extra apt packages, then extra pip requirements"
    )


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_baked_in_ssh_host_keys_are_removed(variant: str) -> None:
    # Otherwise every container of the image would share one host key.
    assert "rm -f /etc/ssh/ssh_host_*" in DOCKERFILES[variant].read_text()
