"""assets/host/image-build.sh and image-load.sh, run here with a stand-in `docker` that prints
what a classic build prints: the user sees the step a long build is at, every few seconds,
and the whole output only when the build fails. The real engines run them in tests/e2e."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from components.remote_script import script_argv

# As RemoteScript runs them: with the shell they include (`# dslab:include`) in their text.
IMAGE_BUILD = "host/image-build.sh"

BUILD_OUTPUT = """Sending build context to Docker daemon  10.24kB
Step 1/3 : FROM local/debian:trixie
 ---> 0123456789ab
Step 2/3 : RUN apt-get install -y openssh-server
 ---> Running in 1a2b3c4d
{noise}
Step 3/3 : COPY . /opt/dslab
Successfully built 0123456789ab
"""


def stand_in_docker(tmp_path: Path, build_exit: int, step_seconds: float = 0) -> dict[str, str]:
    """PATH with a `docker` whose build prints BUILD_OUTPUT (with 500 lines of package noise),
    taking STEP_SECONDS at its second step, and exits `build_exit`; the image exists only once
    a build succeeded."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    first, rest = BUILD_OUTPUT.format(noise="\n".join(f"Unpacking package-{n} ..." for n in range(500))).split(" ---> Running")
    (tmp_path / "build-output-1").write_text(first)
    (tmp_path / "build-output-2").write_text(" ---> Running" + rest)
    built = tmp_path / "built"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "  buildx) exit 1 ;;\n"
        f"  build) cat >/dev/null; cat {tmp_path / 'build-output-1'}; sleep {step_seconds}; "
        f"cat {tmp_path / 'build-output-2'}; [ {build_exit} = 0 ] && touch {built}; exit {build_exit} ;;\n"
        f"  image) [ -e {built} ] || exit 1; echo sha256:built ;;\n"
        "esac\n"
    )
    docker.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}


def build(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        script_argv(None, {"script": IMAGE_BUILD, "args": ["dslab/train:abc"]}), input="context", env=env,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_a_quick_build_says_what_it_builds_and_how_long_it_took(tmp_path: Path) -> None:
    result = build(stand_in_docker(tmp_path, build_exit=0))
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"image_id": "sha256:built"}\n'
    lines = result.stderr.splitlines()
    assert lines[0].startswith("building dslab/train:abc (full output: ") and lines[-1].startswith("built dslab/train:abc in ")
    assert len(lines) == 2, "no step by step account of a build that took no time"
    assert not list(tmp_path.glob("dslab-image-build.*")), "a successful build leaves no log behind"


def test_a_long_build_says_every_few_seconds_which_step_it_is_at(tmp_path: Path) -> None:
    env = {**stand_in_docker(tmp_path, build_exit=0, step_seconds=2.5), "DSLAB_PROGRESS_SECONDS": "1"}
    started = time.monotonic()
    result = build(env)
    assert result.returncode == 0, result.stderr
    ticks = [line for line in result.stderr.splitlines() if line.startswith("still building dslab/train:abc: ")]
    assert 1 <= len(ticks) <= 3, result.stderr
    assert "Step 2/3 : RUN apt-get install -y openssh-server (" in ticks[-1], "the step it is at, and the time so far"
    assert "Unpacking" not in result.stderr, "the package noise stays in the log"
    assert time.monotonic() - started < 5, "its ticker ended with the build"


def test_a_failed_build_shows_the_end_of_its_output_and_keeps_the_log(tmp_path: Path) -> None:
    result = build(stand_in_docker(tmp_path, build_exit=1))
    assert result.returncode == 1
    assert "the build of dslab/train:abc failed" in result.stderr
    assert "Unpacking package-499" in result.stderr, "the last lines, where the error is"
    assert "Unpacking package-0 " not in result.stderr, "not all of them"
    logs = list(tmp_path.glob("dslab-image-build.*"))
    assert len(logs) == 1 and "Unpacking package-0 " in logs[0].read_text(), "the whole output is kept"
    assert str(logs[0]) in result.stderr, "and named"


IMAGE_LOAD = "host/image-load.sh"


def test_a_load_ends_when_docker_load_does_though_its_ticker_sleeps(tmp_path: Path) -> None:
    # Its ticker says every 15 s that the image is still coming; at the end it must not keep
    # the pipes (over ssh: the session) open until its sleep ends.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text('#!/bin/sh\ncase "$1" in load) cat >/dev/null; echo "Loaded image: t" ;; image) echo sha256:loaded ;; esac\n')
    docker.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    started = time.monotonic()
    result = subprocess.run(
        script_argv(None, {"script": IMAGE_LOAD, "args": ["dslab/train:abc"]}), input="image bytes", env=env,
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"image_id": "sha256:loaded"}\n'
    assert "received dslab/train:abc in" in result.stderr
    assert time.monotonic() - started < 5, "its output ended with the load, not 15 s later"
