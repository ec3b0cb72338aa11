"""assets/host/container-place-files.sh as a Command runs it (the script, then the files, on
one stdin to `bash -s`), here with a stand-in `docker exec` that runs in a folder standing
for the container's root. The real engines run it in tests/e2e and tests/faults."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from components.render.file_bundle import render_bundle
from components.hosts.host_script import script_text

STAND_IN_DOCKER = r"""#!/bin/bash
# docker exec [-i] CONTAINER COMMAND ARGS...: COMMAND runs here, absolute paths under $ROOT
# (an argument that is one, and one quoted inside a command string).
shift
[[ $1 == -i ]] && shift
shift
words=()
for word in "$@"; do
  [[ $word == /* ]] && word="$ROOT$word"
  words+=("${word//\'\//\'$ROOT\/}")
done
exec "${words[@]}"
"""


def place(tmp_path: Path, files: dict[str, tuple[str, int]], generation: int = 0) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(STAND_IN_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    stdin = script_text("host/container-place-files.sh") + render_bundle(files)
    return subprocess.run(
        ["bash", "-s", "--", "llm", "run-files"],
        input=stdin, capture_output=True, text=True, timeout=30,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ROOT": str(root), "DSLAB_GEN": str(generation)},
    )  # fmt: skip


def test_every_file_lands_whole_with_its_mode_though_its_text_looks_like_a_header(tmp_path: Path) -> None:
    tricky = "dslab-file 0644 3 /etc/passwd\nabc\n"  # in a file's text: only the sizes say where files end
    ran = place(tmp_path, {"/opt/dslab/run/hostfile": ("server1 slots=1\n", 0o644), "/root/.ssh/config": (tricky, 0o600)})
    assert ran.returncode == 0, ran.stderr
    root = tmp_path / "root"
    assert (root / "opt/dslab/run/hostfile").read_text() == "server1 slots=1\n"
    assert (root / "root/.ssh/config").read_text() == tricky
    assert (root / "root/.ssh/config").stat().st_mode & 0o777 == 0o600
    assert not (root / "etc/passwd").exists()
    assert ran.stdout == "" and ran.stderr == "", "a quick step says nothing when it succeeds"


def test_the_step_leaves_its_generation_and_what_it_placed_for_the_probe(tmp_path: Path) -> None:
    ran = place(tmp_path, {"/opt/dslab/run/ds_config.json": ("{}\n", 0o644)}, generation=3)
    assert ran.returncode == 0, ran.stderr
    steps = tmp_path / "root/opt/dslab/steps"
    assert (steps / "run-files.gen").read_text() == "3\n"
    placed = tmp_path / "root/opt/dslab/run/ds_config.json"
    assert (steps / "run-files.sha256").read_text() == f"{hashlib.sha256(b'{}' + bytes([10])).hexdigest()}  {placed}\n"


def test_a_broken_header_fails_the_step_naming_it(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(STAND_IN_DOCKER)
    (bin_dir / "docker").chmod(0o755)
    stdin = script_text("host/container-place-files.sh") + "dslab-file 0644 many /x\n"
    ran = subprocess.run(
        ["bash", "-s", "--", "llm", "run-files"], input=stdin, capture_output=True, text=True, timeout=30,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "ROOT": str(tmp_path)},
    )  # fmt: skip
    assert ran.returncode == 65 and "not a file header: dslab-file 0644 many /x" in ran.stderr
