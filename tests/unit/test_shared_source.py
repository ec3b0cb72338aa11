"""One source run shared by several receivers: with real threads, and through RemoteScript's
piped create with real local scripts (`connection=None`), the way build-once ships an image."""

from __future__ import annotations

import hashlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from components.remote_script import RemoteScriptProvider
from components.shared_source import Abandoned, Sink, shared_run
from tests.unit.test_remote_script import outs_of, props, write_script


def test_receivers_at_the_same_time_share_one_run_and_get_every_byte(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    # 8 MiB of varied bytes, slowly enough that every receiver joins while it runs.
    source = write_script(
        tmp_path, "save.sh", f"echo run >>{runs}\nfor i in $(seq 1 8); do head -c 1048576 /dev/urandom; sleep 0.2; done\n"
    )
    load = write_script(
        tmp_path, "load.sh", "sum=$(sha256sum | cut -d' ' -f1)\nprintf '{\"sha256\": \"%s\"}\\n' \"$sum\"\n"
    )

    def ship(_: int) -> dict[str, Any]:
        created = RemoteScriptProvider().create(props(load, pipe_from={"connection": None, "create": source}))
        return dict(outs_of(created)["result"])

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(ship, range(4)))
    assert runs.read_text().splitlines() == ["run"], "one docker save for every worker"
    assert len({result["sha256"] for result in results}) == 1, f"every receiver got the same bytes: {results}"


def test_a_receiver_that_joins_late_gets_the_stream_from_its_first_byte() -> None:
    first_written = threading.Event()
    second_joined = threading.Event()
    starts: list[str] = []

    def produce(sink: Sink) -> tuple[int, str]:
        starts.append("start")
        sink(b"first,")
        first_written.set()
        second_joined.wait(timeout=10)
        sink(b"second")
        return 0, ""

    with shared_run("late-join", produce) as early:
        pieces = early.chunks()
        assert next(pieces) == b"first,"
        assert first_written.wait(timeout=10)
        with shared_run("late-join", produce) as late:
            second_joined.set()
            assert b"".join(late.chunks()) == b"first,second", "what it missed is replayed"
        assert b"".join(pieces) == b"second"
        assert early.wait() == (0, "")
    assert starts == ["start"], "the late receiver joined the run under way"


def test_when_every_receiver_has_left_the_source_is_stopped_and_the_next_one_starts_anew() -> None:
    outcomes: list[str] = []

    def endless(sink: Sink) -> tuple[int, str]:
        try:
            while True:
                sink(b"x" * 1024)
        except Abandoned:
            outcomes.append("stopped")
            raise

    with shared_run("endless", endless) as run:
        assert next(run.chunks()).startswith(b"x")
    assert outcomes == ["stopped"], "the last receiver to leave stops the source"
    assert run.wait()[1] == "every receiver stopped before the source ended"

    with shared_run("endless", lambda sink: (sink(b"fresh") or (0, ""))) as again:
        assert b"".join(again.chunks()) == b"fresh", "a receiver after that gets a run of its own"


def test_a_source_that_fails_reports_its_exit_code_and_stderr_to_every_receiver() -> None:
    with shared_run("failing", lambda sink: (sink(b"partial") or (1, "no such image\n"))) as one:
        with shared_run("failing", lambda sink: (0, "never started")) as two:
            assert b"".join(one.chunks()) == b"partial"
            assert b"".join(two.chunks()) == b"partial"
            assert one.wait() == two.wait() == (1, "no such image\n")


def test_a_source_that_cannot_start_ends_every_receivers_stream_with_the_reason() -> None:
    def broken(sink: Sink) -> tuple[int, str]:
        raise FileNotFoundError("ssh")

    with shared_run("broken", broken) as run:
        assert b"".join(run.chunks()) == b""
        code, errors = run.wait()
    assert code != 0 and "FileNotFoundError: ssh" in errors, errors


def test_the_spooled_bytes_match_what_the_source_wrote() -> None:
    pieces = [bytes([index]) * (index * 997 + 1) for index in range(64)]

    def produce(sink: Sink) -> tuple[int, str]:
        for piece in pieces:
            sink(piece)
        return 0, ""

    with shared_run("exact", produce) as run:
        got = b"".join(run.chunks())
    assert hashlib.sha256(got).digest() == hashlib.sha256(b"".join(pieces)).digest()
