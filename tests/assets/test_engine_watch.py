"""assets/operator/engine-watch.sh, the watch ssh starts beside each of pulumi-docker's engine
connections: here the watched connection is a process named ssh, and the watch's own login a
stand-in `ssh` that answers as a healthy engine or as one that gave no reply in time (the
host's `timeout` exits 124). tests/faults runs it against a stopped dockerd."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

from components.paths import ASSETS_DIR

WATCH = ASSETS_DIR / "operator" / "engine-watch.sh"


def watched_connection(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A long-lived process whose name is ssh, standing in for the docker CLI's connection."""
    folder = tmp_path / "watched"
    folder.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", folder / "ssh")
    return subprocess.Popen([str(folder / "ssh"), "30"], stderr=subprocess.PIPE)


def run_watch(tmp_path: Path, connection: subprocess.Popen[bytes], engine_exit: int) -> float:
    """Starts the watch as ssh would, with its stderr the connection's; seconds until it returned."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ssh").write_text(f"#!/bin/bash\nsleep 0.5\nexit {engine_exit}\n")
    (bin_dir / "ssh").chmod(0o755)
    started = time.monotonic()
    subprocess.run(
        ["bash", str(WATCH), str(connection.pid), "server2", "root@10.0.18.2", "22", "7", "--", "-o", "BatchMode=yes"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin"}, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "stderr").open("w"), check=True, timeout=10,
    )  # fmt: skip
    return time.monotonic() - started


def test_an_engine_that_gives_no_reply_ends_the_connection_naming_the_host(tmp_path: Path) -> None:
    connection = watched_connection(tmp_path)
    try:
        assert run_watch(tmp_path, connection, engine_exit=124) < 0.4, "the connection is not held up"
        assert connection.wait(timeout=10) != 0
        time.sleep(0.2)
        assert (tmp_path / "stderr").read_text() == "server2: the Docker engine does not answer (no reply in 7 s)\n"
    finally:
        connection.kill()


def test_an_engine_that_answers_or_a_login_that_fails_leaves_the_connection_alone(tmp_path: Path) -> None:
    connections: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for engine_exit in (0, 255):  # side by side
            (tmp_path / str(engine_exit)).mkdir()
            connections[engine_exit] = watched_connection(tmp_path / str(engine_exit))
            run_watch(tmp_path / str(engine_exit), connections[engine_exit], engine_exit=engine_exit)
        time.sleep(2.5)  # the watch waits 1 s, then logs in (0.5 s here)
        for engine_exit, connection in connections.items():
            assert connection.poll() is None, f"exit {engine_exit}: the connection was ended"
            assert (tmp_path / str(engine_exit) / "stderr").read_text() == ""
    finally:
        for connection in connections.values():
            connection.kill()
