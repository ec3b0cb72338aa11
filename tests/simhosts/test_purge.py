"""simhosts/purge.sh (`make demo-purge`), run here with a stand-in `docker` and a stand-in engine
process: it removes the simulator's images, the cache folder and the engine the simulator started, and
refuses while the simulator is still up."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.simhosts

PURGE = Path(__file__).resolve().parents[2] / "simhosts" / "purge.sh"


def stand_ins(tmp_path: Path, lab_running: bool) -> tuple[dict[str, str], Path, int]:
    """Environment with a `docker` that logs its calls, a filled cache folder, and an engine
    process whose pid is in the simulator's pidfile (not our child, like the real one: init reaps it)."""
    bin_dir, cache = tmp_path / "bin", tmp_path / "cache"
    (cache / "toolchain").mkdir(parents=True)
    (cache / "toolchain" / "pulumi").write_text("binary")
    bin_dir.mkdir()
    calls = tmp_path / "docker-calls"
    docker = bin_dir / "docker"
    docker.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> {calls}\n'
        'case "$1 $2" in\n'
        f"  'ps --all') {'echo 0123abcd' if lab_running else 'true'} ;;\n"
        "esac\n"
    )
    docker.chmod(0o755)
    pidfile = tmp_path / "dockerd.pid"
    subprocess.run(["sh", "-c", f"sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}"], check=True)
    engine = int(pidfile.read_text())
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "DSLAB_CACHE": str(cache),
        "DSLAB_ENGINE_PIDFILE": str(pidfile),
    }
    return env, calls, engine


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(pid: int) -> None:
    if running(pid):
        os.kill(pid, signal.SIGKILL)


def test_purge_removes_the_images_the_cache_and_the_engine_the_lab_started(tmp_path: Path) -> None:
    env, calls, engine = stand_ins(tmp_path, lab_running=False)
    try:
        result = subprocess.run(["bash", str(PURGE)], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 0, result.stderr
        assert not running(engine), "the engine was stopped"
    finally:
        stop(engine)
    removed = [line for line in calls.read_text().splitlines() if line.startswith("image rm")]
    assert removed == ["image rm --force local/dslab-host:trixie", "image rm --force local/debian:trixie"]
    assert not (tmp_path / "cache").exists()


def test_purge_refuses_while_the_lab_is_up_and_touches_nothing(tmp_path: Path) -> None:
    env, calls, engine = stand_ins(tmp_path, lab_running=True)
    try:
        result = subprocess.run(["bash", str(PURGE)], env=env, capture_output=True, text=True, timeout=60, check=False)
        assert result.returncode == 1
        assert "make demo-down" in result.stderr
        assert running(engine), "the engine still runs"
    finally:
        stop(engine)
    assert "image rm" not in calls.read_text()
    assert (tmp_path / "cache" / "toolchain" / "pulumi").exists()
