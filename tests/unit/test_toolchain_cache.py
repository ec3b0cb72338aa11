"""toolchain/install.sh's build cache when installs run at once (two clones, or a clone and CI, on
one machine): they take turns under the cache's lock and share one build, and a build that was
killed leaves nothing a later install mistakes for a build. Real bash, flock and folders; the
build itself is a stand-in that takes a second."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from harness.pulumi_cli import REPO

INSTALL = REPO / "toolchain" / "install.sh"

# Sources install.sh (which then only defines its functions), stands in for the CLI's build and
# for the hash of its inputs (which would ask Go), and builds "cli 1.0" through the cache. With
# $GATE set, the build goes on only once that file exists (at most a minute).
ONE_INSTALL = f"""
source {INSTALL}
build_cli() {{
  echo started >> "$DSLAB_CACHE/builds"
  for _ in $(seq 1200); do [[ -z ${{GATE:-}} || -e ${{GATE:-}} ]] && break; sleep 0.05; done
  sleep "${{BUILD_SECONDS:-1}}"; echo built > "$1/fake"
}}
build_inputs_hash() {{ echo inputs1; }}
lock_cache
forget_old_layout
cached_build cli 1.0
"""


def install(cache: Path, build_seconds: float = 1, gate: Path | None = None) -> subprocess.Popen[str]:
    stand_in_go = cache.parent / "bin"
    stand_in_go.mkdir(exist_ok=True)
    (stand_in_go / "go").write_text("#!/bin/sh\nexit 0\n")
    (stand_in_go / "go").chmod(0o755)
    env = {
        **os.environ,
        "DSLAB_CACHE": str(cache),
        "BUILD_SECONDS": str(build_seconds),
        "GATE": str(gate or ""),
        "PATH": f"{stand_in_go}:{os.environ['PATH']}",
    }
    return subprocess.Popen(
        ["bash", "-c", ONE_INSTALL], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )


def test_two_installs_at_once_take_turns_and_share_one_build(tmp_path: Path) -> None:
    cache, gate = tmp_path / "cache", tmp_path / "go-on"
    first = install(cache, gate=gate)  # builds until the test lets it finish
    try:
        deadline = time.monotonic() + 20
        while not (cache / "builds").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (cache / "builds").exists(), "the first install started its build"
        second = install(cache)
        assert second.stderr is not None
        # Its first word, or its end: while the first builds, the second can only wait.
        said_first = second.stderr.readline()
    finally:
        gate.touch()
    (first_out, first_err), (second_out, second_err) = first.communicate(timeout=60), second.communicate(timeout=60)
    second_err = said_first + second_err
    assert (first.returncode, second.returncode) == (0, 0), first_err + second_err
    built = Path(first_out.strip())
    assert second_out.strip() == str(built), "both installs use the one build"
    assert (built / "fake").read_text() == "built\n" and (built / ".complete").exists()
    assert (cache / "builds").read_text() == "started\n", "the second found the first's build instead of building"
    assert "waiting for it" in second_err, second_err
    assert sorted(path.name for path in (cache / "toolchain").iterdir() if path.is_dir()) == [built.name]


def test_a_build_killed_half_way_is_built_again_and_its_staging_folder_removed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    killed = install(cache, build_seconds=30)
    deadline = time.monotonic() + 20
    while not (cache / "builds").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(killed.pid, signal.SIGKILL)
    killed.wait(timeout=10)
    staged = [path.name for path in (cache / "toolchain").iterdir() if path.is_dir()]
    assert len(staged) == 1 and staged[0].startswith(".partial-cli-"), staged

    again = install(cache)
    out, err = again.communicate(timeout=60)
    assert again.returncode == 0, err
    built = Path(out.strip())
    assert (built / "fake").read_text() == "built\n"
    assert sorted(path.name for path in (cache / "toolchain").iterdir() if path.is_dir()) == [built.name], (
        "the killed build's staging folder is gone and was never taken for a build"
    )


def run_install(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """SCRIPT after install.sh's functions, with no source mirror and an empty cache."""
    env = {key: value for key, value in os.environ.items() if key != "DSLAB_SOURCE_MIRROR"}
    return subprocess.run(
        ["bash", "-c", f"source {INSTALL}\nbuild_inputs_hash() {{ echo inputs1; }}\nlock_cache\n{script}"],
        env={**env, "DSLAB_CACHE": str(tmp_path / "cache")}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_without_a_source_mirror_or_an_earlier_build_the_install_fails_naming_it_and_caches_nothing(
    tmp_path: Path,
) -> None:
    ran = run_install("cached_build language-python 1.0 pulumi-language-python", tmp_path)
    assert ran.returncode != 0
    assert "no source mirror: set DSLAB_SOURCE_MIRROR" in ran.stderr, ran.stderr
    assert not [path for path in (tmp_path / "cache" / "toolchain").iterdir() if path.is_dir()], "nothing cached"


def test_a_build_that_produces_nothing_fails_and_is_not_taken_for_a_build(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "go").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "go").chmod(0o755)
    ran = run_install(f'PATH={tmp_path / "bin"}:$PATH\nbuild_cli() {{ :; }}\ncached_build cli 1.0', tmp_path)
    assert ran.returncode != 0
    assert "building cli 1.0 produced nothing" in ran.stderr, ran.stderr
    assert not list((tmp_path / "cache" / "toolchain").glob("cli-*/.complete"))
