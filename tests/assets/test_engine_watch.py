"""assets/operator/engine-watch.sh, the watch ssh starts beside each of pulumi-docker's engine
connections: here the watched connection is a process named ssh, and the watch's own login a
stand-in `ssh` that runs the watch's command on this machine, as the host's login shell would,
with a stand-in `docker` that answers or gives no reply, once the test lets it, and the bound
the host keeps (host/host-timeout.sh) in a home of its own. tests/faults runs it against a
stopped dockerd."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from components.paths import ASSETS_DIR

WATCH = ASSETS_DIR / "operator" / "engine-watch.sh"


def watched_connection(tmp_path: Path) -> subprocess.Popen[bytes]:
    """A long-lived process whose name is ssh, standing in for the docker CLI's connection."""
    folder = tmp_path / "watched"
    folder.mkdir()
    shutil.copy(shutil.which("sleep") or "/bin/sleep", folder / "ssh")
    return subprocess.Popen([str(folder / "ssh"), "60"], stderr=subprocess.DEVNULL)


def start_watch(tmp_path: Path, connection: subprocess.Popen[bytes], engine: str) -> subprocess.Popen[str]:
    """Starts the watch as ssh would, with a pipe as the connection's stderr, and waits until it
    returned. Its login runs the watch's command with `sh` (the last argument ssh gets), where
    `docker` waits until the test creates tmp_path/answer, then does as ENGINE says: `answer`,
    `silent` (the host's `timeout` ran out: 124) or `refused` (the login failed: ssh's 255)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    answer = tmp_path / "answer"
    (tmp_path / ".dslab").mkdir()
    (tmp_path / ".dslab" / "host-timeout").write_text("7\n")
    (bin_dir / "ssh").write_text('#!/bin/bash\n[[ $ENGINE == refused ]] && exit 255\nexec sh -c "${!#}"\n')
    (bin_dir / "docker").write_text(
        f"#!/bin/bash\nuntil [[ -e {answer} ]]; do sleep 0.05; done\n[[ $ENGINE == silent ]] && exit 124\necho 26.1\n"
    )
    for stand_in in ("ssh", "docker"):
        (bin_dir / stand_in).chmod(0o755)
    watch = subprocess.Popen(
        ["bash", str(WATCH), str(connection.pid), "server2", "root@10.0.18.2", "22", "--", "-o", "BatchMode=yes"],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "ENGINE": engine},
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    # The login cannot have answered yet: returning now means the watch does not hold up the connection.
    assert watch.wait(timeout=20) == 0, "the watch returns while its login waits for the engine"
    return watch


def watch_said(tmp_path: Path, watch: subprocess.Popen[str]) -> str:
    """Lets the engine answer, then what the watch wrote on the connection's stderr, read until
    the watch's background work, the last holder of that pipe, has ended."""
    (tmp_path / "answer").touch()
    _, stderr = watch.communicate(timeout=30)
    return stderr


def test_an_engine_that_gives_no_reply_ends_the_connection_naming_the_host(tmp_path: Path) -> None:
    connection = watched_connection(tmp_path)
    try:
        watch = start_watch(tmp_path, connection, engine="silent")
        assert connection.poll() is None, "the connection goes on while the engine is asked"
        said = watch_said(tmp_path, watch)
        assert said == "server2: the Docker engine does not answer (no reply in 7 s)\n", "the bound the host keeps"
        assert connection.wait(timeout=10) != 0, "the watch ended the connection"
    finally:
        (tmp_path / "answer").touch()
        connection.kill()


def test_an_engine_that_answers_or_a_login_that_fails_leaves_the_connection_alone(tmp_path: Path) -> None:
    connections: dict[str, subprocess.Popen[bytes]] = {}
    watches: dict[str, subprocess.Popen[str]] = {}
    try:
        for engine in ("answer", "refused"):  # side by side
            (tmp_path / engine).mkdir()
            connections[engine] = watched_connection(tmp_path / engine)
            watches[engine] = start_watch(tmp_path / engine, connections[engine], engine)
        for engine, connection in connections.items():
            # The watch has finished with this connection (its stderr is closed): it stays.
            assert watch_said(tmp_path / engine, watches[engine]) == "", engine
            assert connection.poll() is None, f"{engine}: the connection was ended"
    finally:
        for engine, connection in connections.items():
            (tmp_path / engine / "answer").touch()
            connection.kill()
