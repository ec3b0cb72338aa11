"""RemoteScript: a resource that runs one of our `assets/` scripts on a host over SSH.

Steps with nothing to read back are `command.remote.Command`s (components.host_command).
RemoteScript is for what `command.remote.Command` cannot do:
- a `read` script, so `pulumi refresh` (which every command runs: `refresh: always`) sees what
  really exists on the host: a swarm membership, a claim, keys and files in a container, an
  image; with `repair_in_place`, drift is put back without replacing what depends on it;
- a connection change (a new key file) that re-runs nothing: a Command runs its create again
  on any input change, which for training means training again;
- a failure that reads as the host, the step and the script's last lines: a Command's error
  holds the whole output, which for training is its whole log, printed twice.

Conventions for the scripts (all in `assets/`, run with bash):
- create/delete/read get their arguments as argv and secrets on stdin;
- progress goes to stderr (shown live as `[label] ...`), the result is one JSON object on
  the last line of stdout (or nothing);
- a read script exits 3 when the thing is gone (refresh then drops the resource, and the
  next `up` creates it again) and 4 when it exists but has drifted (the next `up`
  replaces it, or with `repair_in_place` runs create again and keeps the resource, so that
  what depends on its id, a training run say, is left alone).
"""

from __future__ import annotations

import functools
import io
import json
import os
import shlex
import subprocess
import sys
import tarfile
import tempfile
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import pulumi
from components.host_command import script_text
from components.paths import ASSETS_DIR
from components.provider_exit import exit_without_teardown
from components.unreachable import cannot_reach
from components.provider_pool import in_dynamic_provider, widen_provider_pool
from components.shared_source import CHUNK, Producer, Sink, shared_run
from pulumi.dynamic import (
    CreateResult,
    DiffResult,
    ReadResult,
    Resource,
    ResourceProvider,
    UpdateResult,
)

READ_GONE_EXIT = 3
READ_DRIFTED_EXIT = 4
SSH_FAILURE_EXIT = 255
QUIET_SECONDS = 5.0
"""A step's progress is shown once it has run this long (QuietWhenQuick)."""
HARMLESS_SSH_NOTICE = "already exists, disabling multiplexing"
"""ssh's word when two sessions to one host start together and the second finds the first's
control socket not yet listening: it then runs without multiplexing, nothing is wrong."""

if in_dynamic_provider():
    widen_provider_pool()
    exit_without_teardown()
    # The SDK hands a failed step to the engine as the traceback it formats: without frames
    # a RemoteScriptError reads as its message, which names the host, the step and the cause.
    # Anything else carries its own traceback in its message (see `reported`).
    sys.tracebacklimit = 0

# Inputs whose change means the thing on the host must be made again.
REPLACING_INPUTS = ("create", "stdin", "stdin_archive", "pipe_from", "triggers")
# Inputs whose change alone runs nothing: the resource is updated in place.
IN_PLACE_INPUTS = ("connection", "label", "delete", "read", "delete_before_replace", "repair_in_place")
# Which host the thing lives on; a new key or known_hosts file reaches the same host.
CONNECTION_IDENTITY = ("host", "port", "user")


class RemoteScriptError(Exception):
    """A script failed on a host; the message names the host, the script and the cause."""


class RemoteScriptBug(Exception):
    """The provider itself failed: the message holds the traceback, for a bug report."""


P = ParamSpec("P")
R = TypeVar("R")


def reported(method: Callable[P, R]) -> Callable[P, R]:
    """A provider method whose unexpected errors keep their traceback in their message (the
    provider prints tracebacks without frames, for RemoteScriptError's sake)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except RemoteScriptError:
            raise
        except Exception as error:
            details = "".join(traceback.format_exception(error, limit=64))
            raise RemoteScriptBug(f"{method.__qualname__} failed:\n{details}") from None

    return wrapper


@contextmanager
def private_key_file(connection: dict[str, Any] | None) -> Iterator[dict[str, Any] | None]:
    """The connection with a key file: a key given as a secret lives in a 0600 file only
    while the script runs."""
    if connection is None or "private_key" not in connection:
        yield connection
        return
    with tempfile.NamedTemporaryFile("w", prefix="dslab-key-", dir=os.environ.get("XDG_RUNTIME_DIR")) as key:
        os.chmod(key.name, 0o600)
        key.write(connection["private_key"].rstrip("\n") + "\n")
        key.flush()
        yield {**connection, "private_key_path": key.name}


def ssh_argv(connection: dict[str, Any]) -> list[str]:
    """The ssh command line for a host: strict host keys, our key only, multiplexed.

    Multiplexing (ControlMaster) keeps the many short commands of one `pulumi up` from
    tripping sshd's MaxStartups; ServerAlive bounds how long a cut network can hang us.
    """
    control_dir = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
    return [
        "ssh",
        "-i", str(Path(connection["private_key_path"]).expanduser()),
        "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={Path(connection['known_hosts_path']).expanduser()}",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=4",
        "-o", "ControlMaster=auto",
        "-o", f"ControlPath={control_dir}/dslab-ssh-%C",
        "-o", "ControlPersist=30",
        "-p", str(int(connection["port"])),  # numbers come back from state as floats
        f"{connection['user']}@{connection['host']}",
    ]  # fmt: skip


def retired(call: dict[str, Any] | None) -> bool:
    """Whether this version no longer has the script: a step that became a Command. A stack made
    before keeps its RemoteScript until this `up` deletes it; its read and delete are skipped
    (forgotten, not run: the Command that took over keeps what it made)."""
    return call is not None and not (ASSETS_DIR / call["script"]).exists()


def script_argv(connection: dict[str, Any] | None, call: dict[str, Any]) -> list[str]:
    """How to run `call` (an assets script with its arguments) on the connection's host."""
    argv = ["bash", "-c", script_text(call["script"]), call["script"], *call.get("args", [])]
    if connection is None:
        return argv
    # ssh hands the remote side one command line: quote every word.
    return [*ssh_argv(connection), "--", shlex.join(argv)]


def describe(connection: dict[str, Any] | None) -> str:
    if connection is None:
        return "this machine"
    return f"{connection.get('name') or connection['host']} ({connection['host']}:{int(connection['port'])})"


def archive_bytes(entries: dict[str, dict[str, Any]]) -> bytes:
    """A tar of `name -> {"path": local file}` or `name -> {"content": text, "mode": int}`.

    Built when the script runs, so state holds file paths and hashes, not file contents.
    """
    buffer = io.BytesIO()
    # GNU format: `docker build -` takes PAX extended headers for a Dockerfile, not a tar.
    # dereference: a linked file (a CA bundle, say) goes in as the file, which is what is hashed.
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT, dereference=True) as archive:
        for name, entry in sorted(entries.items()):
            if "path" in entry:
                archive.add(str(Path(entry["path"]).expanduser()), arcname=name, recursive=True)
                continue
            data = entry["content"].encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = int(entry.get("mode", 0o644))
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def stdin_bytes(props: dict[str, Any], *, with_archive: bool) -> bytes:
    """What a script reads on stdin: the archive (create only) or the secret text."""
    if with_archive and props.get("stdin_archive"):
        return archive_bytes(props["stdin_archive"])
    return (props.get("stdin") or "").encode()


def run_script(
    label: str,
    connection: dict[str, Any] | None,
    call: dict[str, Any],
    stdin: bytes = b"",
    *,
    explained_by: tuple[int, ...] = (),
) -> tuple[int, str, str]:
    """Runs a script, showing its stderr live once it has run a while, and all of it when it
    exits with one of the codes EXPLAINED_BY (a read naming what it found changed); returns
    (exit code, stdout, stderr)."""
    with private_key_file(connection) as usable:
        return _run_streaming(label, script_argv(usable, call), stdin, explained_by)


def run_piped(
    label: str,
    source: dict[str, Any],
    connection: dict[str, Any] | None,
    call: dict[str, Any],
) -> tuple[int, str, str]:
    """Runs `source["create"]` on `source["connection"]` with its stdout piped into `call`
    on `connection` (e.g. `docker save` on one host into `docker load` on another), through
    this machine, so the hosts need not trust each other. Receivers of the same source at
    the same time share one run of it (components.shared_source). A failing source raises an
    error that names the source; otherwise the receiver's exit code, stdout and stderr come back."""
    key = json.dumps([host_identity(source["connection"]), source["create"]])
    with shared_run(key, _producer(label, source)) as run, private_key_file(connection) as usable:
        code, stdout, stderr = _run_streaming(label, script_argv(usable, call), run.chunks())
    if code != 0:
        return code, stdout, stderr  # a receiver that stopped first has the news
    source_code, source_errors = run.wait()
    if source_code != 0:
        raise failure(label, source["connection"], source["create"], source_code, source_errors)
    return code, stdout, stderr


def _producer(label: str, source: dict[str, Any]) -> Producer:
    """Runs the source script, handing its stdout on piece by piece; stderr streamed live."""

    def produce(sink: Sink) -> tuple[int, str]:
        with private_key_file(source["connection"]) as usable:
            process = subprocess.Popen(
                script_argv(usable, source["create"]), stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            progress, threads = _pump_stderr(f"{label} <-", process)
            output = process.stdout
            assert isinstance(output, io.BufferedReader)
            try:
                for chunk in iter(lambda: output.read1(CHUNK), b""):
                    sink(chunk)
            finally:
                output.close()  # when abandoned, the source ends on SIGPIPE
                process.wait()
                for thread in threads:
                    thread.join()
        return process.returncode, "".join(progress.lines)

    return produce


class QuietWhenQuick:
    """A script's progress, shown live once it has run QUIET_SECONDS: a step done before
    then says nothing (a successful `up` reads as the steps that took time, the training
    log among them); its lines are kept for the error message if it failed."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.lines: list[str] = []
        self.live = False
        self.lock = threading.Lock()
        self.timer = threading.Timer(QUIET_SECONDS, self.go_live)
        self.timer.daemon = True
        self.timer.start()

    def show(self, line: str) -> None:
        print(f"[{self.label}] {line.rstrip()}", file=sys.stderr, flush=True)

    def go_live(self) -> None:
        with self.lock:
            if not self.live:
                self.live = True
                for line in self.lines:
                    self.show(line)

    def add(self, line: str) -> None:
        with self.lock:
            self.lines.append(line)
            if self.live:
                self.show(line)

    def done(self) -> None:
        self.timer.cancel()


def _pump_stderr(label: str, process: subprocess.Popen[bytes]) -> tuple[QuietWhenQuick, list[threading.Thread]]:
    """Copies the process's stderr to ours (the engine shows a provider's stderr live: this
    is the user's progress), once the step has taken a while, and keeps it for error messages."""
    progress = QuietWhenQuick(label)

    def pump() -> None:
        assert process.stderr is not None
        for raw in process.stderr:
            line = raw.decode(errors="replace")
            if HARMLESS_SSH_NOTICE not in line:
                progress.add(line)
        progress.done()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return progress, [thread]


def _run_streaming(
    label: str, argv: list[str], stdin: bytes | Iterator[bytes], explained_by: tuple[int, ...] = ()
) -> tuple[int, str, str]:
    """Runs argv with stdin (bytes, or pieces as they come); stderr shown as run_script says."""
    feed: Iterator[bytes] = iter((stdin,)) if isinstance(stdin, bytes) else stdin
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    progress, threads = _pump_stderr(label, process)
    # Not joined: fed from a shared run, it may wait for the source's next piece after the
    # script has gone; its next write then fails and it ends.
    threading.Thread(target=_feed, args=(process, feed), daemon=True).start()
    assert process.stdout is not None
    stdout = process.stdout.read()
    process.wait()
    for thread in threads:
        thread.join()
    if process.returncode in explained_by:
        progress.go_live()
    return process.returncode, stdout.decode(errors="replace"), "".join(progress.lines)


def _feed(process: subprocess.Popen[bytes], pieces: Iterator[bytes]) -> None:
    assert process.stdin is not None
    try:
        for piece in pieces:
            process.stdin.write(piece)
        process.stdin.close()
    except BrokenPipeError:
        pass  # the script did not read all of its stdin; its exit code says more


class BrokenResult(ValueError):
    """The script's last stdout line opens a JSON object that does not parse."""


def parse_result(stdout: str) -> dict[str, Any]:
    """The JSON object on the script's last stdout line, or {} when it printed none (a last
    line that is not one, a container name `docker rm` printed say, is no result).

    Raises BrokenResult when that line starts like an object but does not parse: a script
    meant a result and wrote it badly, and an empty one would hide it (a stack output would
    read "" over a run that succeeded)."""
    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        return {}
    last = lines[-1].strip()
    try:
        result = json.loads(last)
    except json.JSONDecodeError as error:
        if last.startswith("{"):
            raise BrokenResult(f"its result is not JSON ({error}): {last[:200]}") from None
        return {}
    return result if isinstance(result, dict) else {}


def script_result(label: str, connection: dict[str, Any] | None, call: dict[str, Any], stdout: str) -> dict[str, Any]:
    try:
        return parse_result(stdout)
    except BrokenResult as error:
        raise RemoteScriptError(f"{label}: {call['script']} on {describe(connection)}: {error}") from None


def failure(label: str, connection: dict[str, Any] | None, call: dict[str, Any], code: int, stderr: str) -> RemoteScriptError:
    tail = "\n".join(stderr.strip().splitlines()[-15:])
    if connection is not None and code == SSH_FAILURE_EXIT:
        return RemoteScriptError(f"{label}: {cannot_reach(describe(connection), connection['known_hosts_path'])}:\n{tail}")
    return RemoteScriptError(f"{label}: {call['script']} failed on {describe(connection)} (exit {code}):\n{tail}")


def host_identity(connection: dict[str, Any] | None) -> tuple[Any, ...] | None:
    """Host, port and user: state gives numbers back as floats, so the port is an int here."""
    if connection is None:
        return None
    return tuple(int(connection[key]) if key == "port" else connection.get(key) for key in CONNECTION_IDENTITY)


class RemoteScriptProvider(ResourceProvider):
    """CRUD for RemoteScript; the state of a RemoteScript is its inputs plus `result`."""

    # Only the inputs that are secret make the stored provider secret, not the provider itself.
    serialize_as_secret_always = False

    def _run(self, props: dict[str, Any], call: dict[str, Any], *, with_archive: bool = False) -> dict[str, Any]:
        if with_archive and props.get("pipe_from"):
            code, stdout, stderr = run_piped(props["label"], props["pipe_from"], props.get("connection"), call)
        else:
            stdin = stdin_bytes(props, with_archive=with_archive)
            code, stdout, stderr = run_script(props["label"], props.get("connection"), call, stdin)
        if code != 0:
            raise failure(props["label"], props.get("connection"), call, code, stderr)
        return script_result(props["label"], props.get("connection"), call, stdout)

    @reported
    def create(self, props: dict[str, Any]) -> CreateResult:
        result = self._run(props, props["create"], with_archive=True)
        return CreateResult(id_=uuid.uuid4().hex, outs={**props, "result": result, "drifted": False})

    @reported
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [key for key in REPLACING_INPUTS if olds.get(key) != news.get(key)]
        if host_identity(olds.get("connection")) != host_identity(news.get("connection")):
            replaces.insert(0, "connection")
        if olds.get("drifted") and not news.get("repair_in_place"):
            replaces.append("drifted")
        changed = bool(replaces) or bool(olds.get("drifted")) or any(
            olds.get(key) != news.get(key) for key in IN_PLACE_INPUTS
        )
        return DiffResult(
            changes=changed,
            replaces=replaces,
            delete_before_replace=bool(news.get("delete_before_replace")),
        )

    @reported
    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if olds.get("drifted"):  # repaired in place: create runs again, the id stays
            return UpdateResult(outs={**news, "result": self._run(news, news["create"], with_archive=True), "drifted": False})
        # Only the delete/read scripts or the label changed: nothing to run now.
        return UpdateResult(outs={**news, "result": olds.get("result", {}), "drifted": False})

    @reported
    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        call = props.get("read")
        if not call or retired(call) or retired(props.get("create")):
            return ReadResult(id_=id_, outs=props)
        stdin = stdin_bytes(props, with_archive=False)
        code, stdout, stderr = run_script(
            props["label"], props.get("connection"), call, stdin, explained_by=(READ_GONE_EXIT, READ_DRIFTED_EXIT)
        )
        if code == READ_GONE_EXIT:
            return ReadResult(id_="", outs={})
        if code == READ_DRIFTED_EXIT:
            return ReadResult(id_=id_, outs={**props, "drifted": True})
        if code != 0:
            raise failure(props["label"], props.get("connection"), call, code, stderr)
        observed = script_result(props["label"], props.get("connection"), call, stdout)
        return ReadResult(
            id_=id_, outs={**props, "result": {**props.get("result", {}), **observed}, "drifted": False}
        )

    @reported
    def delete(self, _id: str, props: dict[str, Any]) -> None:
        call = props.get("delete")
        if call and not retired(call) and not retired(props.get("create")):
            self._run(props, call)


def script_call(script: str, *args: pulumi.Input[str]) -> dict[str, Any]:
    """An assets script with its arguments, as RemoteScript takes it."""
    return {"script": script, "args": list(args)}


class RemoteScript(Resource, module="dslab", name="RemoteScript"):
    """Runs `create` on a host when made, `delete` when destroyed, `read` on refresh.

    Outputs:
        result: the JSON object the create script printed, updated by read on refresh.
    """

    result: pulumi.Output[dict[str, Any]]

    def __init__(
        self,
        name: str,
        *,
        label: str,
        connection: pulumi.Input[dict[str, Any]] | None,
        create: dict[str, Any],
        delete: dict[str, Any] | None = None,
        read: dict[str, Any] | None = None,
        stdin: pulumi.Input[str] | None = None,
        stdin_archive: pulumi.Input[dict[str, Any]] | None = None,
        pipe_from: pulumi.Input[dict[str, Any]] | None = None,
        triggers: list[pulumi.Input[Any]] | None = None,
        delete_before_replace: bool = False,
        repair_in_place: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            RemoteScriptProvider(),
            name,
            {
                "label": label,
                "connection": connection,
                "create": create,
                "delete": delete,
                "read": read,
                "stdin": stdin,
                "stdin_archive": stdin_archive,
                "pipe_from": pipe_from,
                "triggers": triggers or [],
                "delete_before_replace": delete_before_replace,
                "repair_in_place": repair_in_place,
                "result": None,
                "drifted": None,
            },
            opts,
        )
