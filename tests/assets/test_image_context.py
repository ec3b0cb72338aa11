"""The training image's build context (make-context.sh) and the Dockerfiles' contract with it."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

ASSETS = Path(__file__).resolve().parents[2] / "assets"
MAKE_CONTEXT = ASSETS / "image" / "make-context.sh"
DOCKERFILES = {variant: ASSETS / "image" / f"Dockerfile.{variant}" for variant in ("cpu", "gpu")}


def make_context(*argv: str | Path) -> tarfile.TarFile:
    result = subprocess.run([str(MAKE_CONTEXT), *map(str, argv)], capture_output=True, check=True)
    return tarfile.open(fileobj=io.BytesIO(result.stdout))


@pytest.fixture
def ca_bundle(tmp_path: Path) -> Path:
    path = tmp_path / "ca.crt"
    path.write_text("-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    return path


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_the_context_holds_the_variants_dockerfile_and_every_input(variant: str, ca_bundle: Path) -> None:
    with make_context("--variant", variant, "--ca-bundle", ca_bundle) as tar:
        names = {name.removeprefix("./") for name in tar.getnames()} - {"."}
        dockerfile = tar.extractfile("./Dockerfile")
        assert dockerfile is not None
        assert dockerfile.read() == DOCKERFILES[variant].read_bytes()
        requirements = tar.extractfile("./requirements.txt")
        assert requirements is not None and requirements.read() == b"", "no requirements: an empty file"
    assert names == {
        "Dockerfile",
        "ca-bundle.crt",
        "requirements.txt",
        "wheelhouse",
        "dslab",
        "dslab/entrypoint.sh",
        "dslab/run-deepspeed.sh",
        "dslab/socket-ifname.sh",
        "dslab/train_tiny.py",
    }


def test_requirements_and_wheels_are_copied_when_given(tmp_path: Path, ca_bundle: Path) -> None:
    (tmp_path / "req.txt").write_text("transformers==4.33.1\n")
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "a-1.0-py3-none-any.whl").write_bytes(b"PK")
    with make_context(
        "--variant",
        "cpu",
        "--ca-bundle",
        ca_bundle,
        "--requirements",
        tmp_path / "req.txt",
        "--wheelhouse",
        tmp_path / "wheels",
    ) as tar:
        assert "./wheelhouse/a-1.0-py3-none-any.whl" in tar.getnames()
        requirements = tar.extractfile("./requirements.txt")
        assert requirements is not None and requirements.read() == b"transformers==4.33.1\n"


def test_the_same_inputs_give_the_same_bytes(ca_bundle: Path) -> None:
    def stream() -> bytes:
        return subprocess.run(
            [str(MAKE_CONTEXT), "--variant", "cpu", "--ca-bundle", str(ca_bundle)],
            capture_output=True,
            check=True,
        ).stdout

    assert stream() == stream(), "a stable context lets a content hash decide when to rebuild"


def test_a_missing_ca_bundle_is_refused_by_name(tmp_path: Path) -> None:
    result = subprocess.run(
        [str(MAKE_CONTEXT), "--variant", "cpu", "--ca-bundle", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "--ca-bundle" in result.stderr


@pytest.mark.parametrize("variant", ["cpu", "gpu"])
def test_each_dockerfile_takes_the_documented_build_args(variant: str) -> None:
    args = set(re.findall(r"^ARG (\w+)", DOCKERFILES[variant].read_text(), re.MULTILINE))
    assert {"BASE_IMAGE", "APT_PACKAGES", "DEEPSPEED_VERSION"} <= args


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
