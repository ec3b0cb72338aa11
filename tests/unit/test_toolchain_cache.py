"""toolchain/install.sh's build cache when installs run at once (two clones, or a clone and CI, on
one machine): they take turns under the cache's lock and share one build, and a build that was
killed leaves nothing a later install mistakes for a build. Clones on other pins share the cache
without breaking each other: each holds its own hard links of what it runs, so no change to the
cache takes a clone's `pulumi` away. Real bash, flock and folders; the builds are stand-ins."""

from __future__ import annotations

import os
import shutil
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


# The whole install (install.sh's main) in the clone $CLONE, with stand-in builds: a `pulumi` that
# says its version, runs only with its language host beside it (as the real CLI finds it) and
# installs a plugin with `--file` by copying it (as the real one does; it never downloads); a
# language host and two plugins that say their versions. Builds take no time (no progress loop).
CLONE_INSTALL = r"""
source "$CLONE/toolchain/install.sh"
build_inputs_hash() { echo stand-in; }
with_progress() { shift; "$@" >/dev/null; }
stand_in() { printf '#!/bin/sh\necho %s\n' "$2" > "$1"; chmod 755 "$1"; }
build_cli() {
  sed "s/@VERSION@/$PULUMI_VERSION/" "$STAND_IN_CLI" > "$1/pulumi" && chmod 755 "$1/pulumi"
  stand_in "$1/pulumi-language-python-exec" exec
  stand_in "$1/pulumi-resource-pulumi-python" dynamic
}
build_language_python() { stand_in "$1/pulumi-language-python" "language host $PULUMI_LANGUAGE_PYTHON_VERSION"; }
build_resource_docker() { stand_in "$1/pulumi-resource-docker" "docker $PULUMI_DOCKER_VERSION"; }
build_resource_command() { stand_in "$1/pulumi-resource-command" "command $PULUMI_COMMAND_VERSION"; }
main
"""

STAND_IN_CLI = """#!/bin/sh
here=$(dirname "$(readlink -f "$0")")
[ -x "$here/pulumi-language-python" ] || { echo "no pulumi-language-python beside $here/pulumi" >&2; exit 1; }
case "$1" in
  version) echo v@VERSION@ ;;
  plugin) [ "$6" = --file ] || exit 1
          mkdir -p "$PULUMI_HOME/plugins/resource-$4-v$5" && cp "$7" "$PULUMI_HOME/plugins/resource-$4-v$5/" ;;
esac
"""

BIN_FILES = ["pulumi", "pulumi-language-python", "pulumi-language-python-exec", "pulumi-resource-pulumi-python"]


def without_pulumi(path: str) -> str:
    """PATH without the folders that hold a `pulumi` (the tests' own toolchain would be used as is)."""
    return ":".join(entry for entry in path.split(":") if entry and not (Path(entry) / "pulumi").exists())


def make_clone(tmp_path: Path, name: str, version: str) -> Path:
    """A project folder with this checkout's install.sh, every pin at VERSION."""
    clone = tmp_path / name
    (clone / "toolchain").mkdir(parents=True)
    shutil.copy(INSTALL, clone / "toolchain" / "install.sh")
    pins = ("PULUMI_VERSION", "PULUMI_PYTHON_SDK_VERSION", "PULUMI_LANGUAGE_PYTHON_VERSION", "PULUMI_DOCKER_VERSION",
            "PULUMI_COMMAND_VERSION")  # fmt: skip
    (clone / "toolchain" / "versions.env").write_text("".join(f"{pin}={version}\n" for pin in pins))
    return clone


def clone_env(tmp_path: Path) -> dict[str, str]:
    """A stand-in Go and source mirror, a home with no ~/.pulumi, one cache for every clone."""
    tools, mirror = tmp_path / "tools", tmp_path / "mirror"
    tools.mkdir(exist_ok=True)
    (tools / "go").write_text("#!/bin/sh\nexit 0\n")
    (tools / "go").chmod(0o755)
    (tools / "pulumi-cli").write_text(STAND_IN_CLI)
    for part in ("pulumi-language-python", "pulumi-docker", "pulumi-command"):
        (mirror / part).mkdir(parents=True, exist_ok=True)
    (tmp_path / "home").mkdir(exist_ok=True)
    return {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "DSLAB_CACHE": str(tmp_path / "cache"),
        "DSLAB_SOURCE_MIRROR": str(mirror),
        "STAND_IN_CLI": str(tools / "pulumi-cli"),
        "PATH": f"{tools}:{without_pulumi(os.environ['PATH'])}",
    }


def install_clone(clone: Path, tmp_path: Path) -> None:
    ran = subprocess.run(["bash", "-c", CLONE_INSTALL], env={**clone_env(tmp_path), "CLONE": str(clone)},
                         capture_output=True, text=True, timeout=60)  # fmt: skip
    assert ran.returncode == 0, ran.stderr


def run_in_clone(clone: Path, tmp_path: Path, command: str) -> subprocess.CompletedProcess[str]:
    """COMMAND in a shell with the clone's toolchain first on PATH (as toolchain/env.sh sets it)."""
    home = clone / ".pulumi-home"
    env = {
        **clone_env(tmp_path),
        "PULUMI_HOME": str(home),
        "PATH": f"{home / 'bin'}:{without_pulumi(os.environ['PATH'])}",
    }
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, timeout=30)


def test_a_clone_still_runs_its_pulumi_after_another_clone_installs_other_pins_into_the_same_cache(
    tmp_path: Path,
) -> None:
    first, second = make_clone(tmp_path, "first", "1.0"), make_clone(tmp_path, "second", "2.0")
    install_clone(first, tmp_path)
    install_clone(second, tmp_path)
    ran = run_in_clone(first, tmp_path, "pulumi version")
    assert (ran.returncode, ran.stdout) == (0, "v1.0\n"), f"the idle first clone lost its pulumi: {ran.stderr}"
    assert run_in_clone(second, tmp_path, "pulumi version").stdout == "v2.0\n"


def test_a_clone_s_bin_is_a_real_folder_of_its_own_and_its_toolchain_runs_with_the_cache_deleted(
    tmp_path: Path,
) -> None:
    clone = make_clone(tmp_path, "clone", "1.0")
    install_clone(clone, tmp_path)
    bin_folder = clone / ".pulumi-home" / "bin"
    assert bin_folder.is_dir() and not bin_folder.is_symlink(), "not a link into the cache, which may be pruned"
    assert sorted(path.name for path in bin_folder.iterdir()) == BIN_FILES, "the CLI's language host is beside it"
    assert not [path for path in bin_folder.iterdir() if path.is_symlink() or not path.is_file()]

    shutil.rmtree(tmp_path / "cache")
    ran = run_in_clone(clone, tmp_path, "pulumi version && $PULUMI_HOME/plugins/resource-docker-v1.0/pulumi-resource-docker"
                       " && $PULUMI_HOME/plugins/resource-command-v1.0/pulumi-resource-command")  # fmt: skip
    assert (ran.returncode, ran.stdout) == (0, "v1.0\ndocker 1.0\ncommand 1.0\n"), ran.stderr


def test_a_second_install_with_nothing_changed_changes_nothing_in_the_clone_s_bin(tmp_path: Path) -> None:
    clone = make_clone(tmp_path, "clone", "1.0")
    install_clone(clone, tmp_path)
    bin_folder = clone / ".pulumi-home" / "bin"

    def state() -> list[tuple[str, int, int]]:
        return [(path.name, path.stat().st_ino, path.stat().st_mtime_ns) for path in sorted(bin_folder.iterdir())]

    before, folder_changed = state(), bin_folder.stat().st_mtime_ns
    install_clone(clone, tmp_path)
    assert state() == before
    assert bin_folder.stat().st_mtime_ns == folder_changed, "no file was put in again (a rename changes the folder)"


def test_a_new_pin_replaces_the_clone_s_binaries_in_its_folder_and_removes_what_it_no_longer_has(
    tmp_path: Path,
) -> None:
    clone = make_clone(tmp_path, "clone", "1.0")
    install_clone(clone, tmp_path)
    bin_folder = clone / ".pulumi-home" / "bin"
    (bin_folder / "pulumi-watch").write_text("left from another installation\n")
    folder = bin_folder.stat().st_ino
    (clone / "toolchain" / "versions.env").write_text(
        (clone / "toolchain" / "versions.env").read_text().replace("=1.0", "=2.0")
    )
    install_clone(clone, tmp_path)
    assert bin_folder.stat().st_ino == folder and not bin_folder.is_symlink(), "the same folder, updated in place"
    assert sorted(path.name for path in bin_folder.iterdir()) == BIN_FILES
    assert run_in_clone(clone, tmp_path, "pulumi version").stdout == "v2.0\n"


def test_a_clone_of_the_old_layout_gets_its_own_folder_and_the_cache_s_bin_folder_is_kept(tmp_path: Path) -> None:
    clone = make_clone(tmp_path, "clone", "1.0")
    old_bin = tmp_path / "cache" / "toolchain" / "bin-0123456789ab"  # where older installs gathered the binaries
    old_bin.mkdir(parents=True)
    (old_bin / "pulumi").write_text("#!/bin/sh\necho old\n")
    (clone / ".pulumi-home").mkdir()
    (clone / ".pulumi-home" / "bin").symlink_to(old_bin)
    install_clone(clone, tmp_path)
    bin_folder = clone / ".pulumi-home" / "bin"
    assert bin_folder.is_dir() and not bin_folder.is_symlink()
    assert run_in_clone(clone, tmp_path, "pulumi version").stdout == "v1.0\n"
    assert (old_bin / "pulumi").exists(), "another clone not installed since may still link to it"
    assert not list((clone / ".pulumi-home").glob(".bin-*")), "the folder filled beside was renamed into place"


def test_the_cache_keeps_the_three_most_recently_used_builds_of_each_binary(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "go").write_text("#!/bin/sh\nexit 0\n")
    (tmp_path / "bin" / "go").chmod(0o755)
    script = f"""PATH={tmp_path / "bin"}:$PATH
with_progress() {{ shift; "$@"; }}
build_cli() {{ echo built > "$1/fake"; }}
for version in 1 2 3 1 4; do cached_build cli "$version" >/dev/null; sleep 0.05; done"""
    ran = run_install(script, tmp_path)
    assert ran.returncode == 0, ran.stderr
    kept = sorted(path.name for path in (tmp_path / "cache" / "toolchain").iterdir() if path.is_dir())
    assert kept == ["cli-1-inputs1", "cli-3-inputs1", "cli-4-inputs1"], "2 was used least recently"
