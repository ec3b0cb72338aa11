"""RemoteScript without hosts: its pure parts (result parsing, ssh and script command lines,
the provider's diff) and its CRUD run for real on this machine (`connection=None` runs the
script with the local bash), with small scripts written for each test."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pulumi.dynamic import CreateResult, ReadResult, UpdateResult

from components import remote_script
from components.host_command import script_text
from components.paths import ASSETS_DIR
from components.remote_script import (
    REPLACING_INPUTS,
    BrokenResult,
    RemoteScriptBug,
    RemoteScriptError,
    RemoteScriptProvider,
    failure,
    parse_result,
    private_key_file,
    run_script,
    script_argv,
    ssh_argv,
)

CONNECTION: dict[str, Any] = {
    "name": "server2",
    "host": "10.0.18.2",
    "port": 22.0,  # what Pulumi hands back from state: numbers are floats
    "user": "root",
    "private_key_path": "~/.ssh/id_ed25519",
    "known_hosts_path": "~/.ssh/known_hosts",
}

# Prints its arguments as a JSON list, the way our scripts print their result.
ECHO_ARGS = 'python3 -c \'import json, sys; print(json.dumps({"args": sys.argv[1:]}))\' "$@"\n'


def write_script(tmp_path: Path, name: str, body: str) -> dict[str, Any]:
    """A script call for `body`, by absolute path (ASSETS_DIR / an absolute path is that path)."""
    path = tmp_path / name
    path.write_text("set -euo pipefail\n" + body)
    assert ASSETS_DIR / str(path) == path
    return {"script": str(path), "args": []}


def props(create: dict[str, Any], **inputs: Any) -> dict[str, Any]:
    """A RemoteScript's inputs as the provider receives them, run on this machine."""
    return {
        "label": "test",
        "connection": None,
        "create": create,
        "delete": None,
        "read": None,
        "stdin": None,
        "stdin_archive": None,
        "pipe_from": None,
        "triggers": [],
        "delete_before_replace": False,
        "result": None,
        "drifted": None,
        **inputs,
    }


def outs_of(result: CreateResult | ReadResult | UpdateResult) -> dict[str, Any]:
    assert result.outs is not None, "the provider always returns the outputs"
    return result.outs


def ssh_options(argv: list[str]) -> dict[str, str]:
    values = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    return dict(value.split("=", 1) for value in values)


# --- parse_result ----------------------------------------------------------------------------


def test_the_result_is_the_json_object_on_the_last_stdout_line() -> None:
    stdout = 'progress on stdout by mistake\n{"first": 1}\n{"image_id": "sha256:abc"}\n\n'
    assert parse_result(stdout) == {"image_id": "sha256:abc"}, "only the last non-blank line is the result"


def test_a_script_that_prints_nothing_has_an_empty_result() -> None:
    assert parse_result("") == {}
    assert parse_result("\n  \n") == {}


@pytest.mark.parametrize("last_line", ["done", "[1, 2]", '"text"', "42"])
def test_a_last_line_that_is_not_a_json_object_gives_an_empty_result(last_line: str) -> None:
    assert parse_result(f'{{"earlier": 1}}\n{last_line}\n') == {}, "an earlier JSON line is not taken instead"


@pytest.mark.parametrize("last_line", ["{not json", '{"summary": "tab\there"}', '{"status": "a "quoted" word"}'])
def test_a_result_line_that_does_not_parse_fails_the_step_naming_the_script(tmp_path: Path, last_line: str) -> None:
    with pytest.raises(BrokenResult):
        parse_result(f"{last_line}\n")
    create = write_script(tmp_path, "broken.sh", f"printf '%s\\n' {shlex.quote(last_line)}\n")
    with pytest.raises(RemoteScriptError, match=r"test: .*broken\.sh on this machine: its result is not JSON"):
        RemoteScriptProvider().create(props(create))



# --- ssh_argv and script_argv ----------------------------------------------------------------


def test_ssh_checks_host_keys_strictly_with_our_key_only_and_never_prompts() -> None:
    options = ssh_options(ssh_argv(CONNECTION))
    assert options["StrictHostKeyChecking"] == "yes", "an unknown or changed host key must stop us"
    assert options["IdentitiesOnly"] == "yes", "an agent's other keys must not be offered"
    assert options["BatchMode"] == "yes", "a password prompt would hang `pulumi up`"
    assert options["UserKnownHostsFile"] == str(Path("~/.ssh/known_hosts").expanduser())


def test_ssh_gets_the_port_as_an_integer_even_when_state_gives_a_float() -> None:
    argv = ssh_argv(CONNECTION)
    assert argv[argv.index("-p") + 1] == "22", "ssh refuses `-p 22.0`"
    assert argv[-1] == "root@10.0.18.2", "the destination is the last word"


def test_ssh_expands_the_key_path_and_keeps_its_control_socket_in_the_runtime_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    argv = ssh_argv(CONNECTION)
    assert argv[argv.index("-i") + 1] == str(Path("~/.ssh/id_ed25519").expanduser()), "ssh does not expand ~ in -i"
    assert ssh_options(argv)["ControlPath"].startswith(f"{tmp_path}/"), "the multiplexing socket stays private"


def test_a_local_script_runs_with_bash_and_its_arguments_as_they_are(tmp_path: Path) -> None:
    call = {**write_script(tmp_path, "echo.sh", ECHO_ARGS), "args": ["a b", "it's"]}
    argv = script_argv(None, call)
    assert argv[:2] == ["bash", "-c"] and argv[3:] == [call["script"], "a b", "it's"], "$0 names the script"


def test_every_argument_survives_the_remote_shell_unchanged(tmp_path: Path) -> None:
    tricky = ["with spaces", 'it\'s "quoted"', "$HOME", "`id`; rm -rf /", "", "new\nline"]
    call = {**write_script(tmp_path, "echo.sh", ECHO_ARGS), "args": tricky}
    argv = script_argv(CONNECTION, call)
    assert argv[: argv.index("--")] == ssh_argv(CONNECTION), "ssh options come before `--`"
    remote_command = argv[-1]
    assert argv.index("--") == len(argv) - 2, "the remote side gets one command line"
    assert shlex.split(remote_command) == script_argv(None, call), "quoted word by word"
    # sshd runs the command line with the user's shell: do the same here.
    ran = subprocess.run(["sh", "-c", remote_command], capture_output=True, text=True, check=True)
    assert parse_result(ran.stdout) == {"args": tricky}, "no word split, expanded or executed on the host"


# --- the provider's diff ---------------------------------------------------------------------

OLD: dict[str, Any] = {
    **props({"script": "host/image-build.sh", "args": ["dslab/train:abc"]}),
    "connection": CONNECTION,
    "delete": {"script": "host/image-remove.sh", "args": ["dslab/train:abc"]},
    "read": {"script": "host/image-read.sh", "args": ["dslab/train:abc"]},
    "stdin": "secret",
    "stdin_archive": {"Dockerfile": {"content": "FROM x\n"}},
    "triggers": ["container-id"],
    "result": {"image_id": "sha256:abc"},
    "drifted": False,
}
CHANGED: dict[str, Any] = {
    "connection": {**CONNECTION, "host": "10.0.18.3"},
    "create": {"script": "host/image-build.sh", "args": ["dslab/train:def"]},
    "stdin": "another secret",
    "stdin_archive": {"Dockerfile": {"content": "FROM y\n"}},
    "pipe_from": {"connection": CONNECTION, "create": {"script": "host/image-save.sh", "args": []}},
    "triggers": ["another-container-id"],
    "delete": {"script": "host/image-remove.sh", "args": ["--force"]},
    "read": None,
    "label": "renamed",
}


def news_of(old: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """New inputs: the old ones without the outputs, with `changes`."""
    return {key: value for key, value in {**old, **changes}.items() if key not in ("result", "drifted")}


def test_the_same_inputs_are_no_change() -> None:
    diff = RemoteScriptProvider().diff("id", OLD, news_of(OLD))
    assert not diff.changes and not diff.replaces


def test_a_port_read_back_as_a_float_is_no_change() -> None:
    news = news_of(OLD, connection={**CONNECTION, "port": 22})
    assert not RemoteScriptProvider().diff("id", OLD, news).changes, "22.0 from state is the configured 22"


@pytest.mark.parametrize("key", REPLACING_INPUTS)
def test_a_change_of_what_the_create_script_does_or_where_replaces_the_resource(key: str) -> None:
    diff = RemoteScriptProvider().diff("id", OLD, news_of(OLD, **{key: CHANGED[key]}))
    assert diff.changes and diff.replaces == [key], f"a new {key} means the thing on the host must be made again"


@pytest.mark.parametrize("key", ["delete", "read", "label"])
def test_a_change_of_only_the_delete_or_read_script_or_the_label_updates_in_place(key: str) -> None:
    diff = RemoteScriptProvider().diff("id", OLD, news_of(OLD, **{key: CHANGED[key]}))
    assert diff.changes and not diff.replaces, f"{key} is used later; nothing on the host changes now"


def test_a_resource_a_refresh_found_drifted_is_replaced_even_with_the_same_inputs() -> None:
    diff = RemoteScriptProvider().diff("id", {**OLD, "drifted": True}, news_of(OLD))
    assert diff.changes and diff.replaces == ["drifted"]


@pytest.mark.parametrize("wanted", [True, False])
def test_delete_before_replace_follows_the_input(wanted: bool) -> None:
    news = news_of(OLD, delete_before_replace=wanted, create=CHANGED["create"])
    assert RemoteScriptProvider().diff("id", OLD, news).delete_before_replace is wanted


# --- CRUD, run for real on this machine ------------------------------------------------------


def test_create_returns_what_the_script_printed_last(tmp_path: Path) -> None:
    create = {**write_script(tmp_path, "create.sh", 'echo "working" >&2\n' + ECHO_ARGS), "args": ["x y"]}
    result = RemoteScriptProvider().create(props(create))
    assert outs_of(result)["result"] == {"args": ["x y"]}
    assert outs_of(result)["drifted"] is False and outs_of(result)["create"] == create, (
        "outputs are the inputs plus result"
    )
    assert result.id, "a created resource has an id"


def test_a_slow_scripts_progress_is_shown_live_under_its_label_from_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_script, "QUIET_SECONDS", 0.2)
    create = write_script(tmp_path, "create.sh", 'echo "step 1 of 2" >&2\nsleep 0.6\necho "step 2 of 2" >&2\n')
    RemoteScriptProvider().create(props(create))
    shown = capsys.readouterr().err.splitlines()
    assert shown == ["[test] step 1 of 2", "[test] step 2 of 2"], "the lines before the step went live come too"


def test_a_quick_step_says_nothing_when_it_succeeds_and_everything_when_it_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    RemoteScriptProvider().create(props(write_script(tmp_path, "create.sh", 'echo "files placed" >&2\n')))
    assert capsys.readouterr().err == "", "a successful `up` lists the steps that took time, not every step"
    with pytest.raises(RemoteScriptError, match="files not placed"):
        RemoteScriptProvider().create(props(write_script(tmp_path, "fails.sh", 'echo "files not placed" >&2\nexit 1\n')))


def test_ssh_saying_it_runs_without_multiplexing_is_not_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote_script, "QUIET_SECONDS", 0.0)
    notice = "ControlSocket /run/dslab-ssh-1 already exists, disabling multiplexing"
    create = write_script(tmp_path, "create.sh", f'echo "{notice}" >&2\nsleep 0.3\necho done >&2\n')
    RemoteScriptProvider().create(props(create))
    shown = capsys.readouterr().err
    assert "[test] done" in shown and "multiplexing" not in shown


def test_a_failing_create_names_the_script_and_shows_the_end_of_its_stderr(tmp_path: Path) -> None:
    create = write_script(tmp_path, "fails.sh", 'for i in $(seq 1 30); do echo "line $i" >&2; done\nexit 7\n')
    with pytest.raises(RemoteScriptError) as raised:
        RemoteScriptProvider().create(props(create))
    message = str(raised.value)
    assert message.startswith("test: ") and create["script"] in message, "which resource and which script"
    assert "this machine" in message and "(exit 7)" in message
    assert message.endswith("line 30") and "line 16" in message, "the last 15 stderr lines say why"
    assert "line 15\n" not in message, "not the whole log"


def test_an_ssh_failure_names_the_host_and_its_known_hosts_file() -> None:
    error = failure("test", CONNECTION, {"script": "host/x.sh"}, 255, "Host key verification failed.\n")
    assert "cannot reach server2 (10.0.18.2:22) over SSH" in str(error), "the port is shown as configured"
    assert "~/.ssh/known_hosts" in str(error) and str(error).endswith("Host key verification failed.")


def test_stdin_text_reaches_the_script(tmp_path: Path) -> None:
    create = write_script(tmp_path, "secret.sh", 'token=$(cat)\nprintf \'{"got": "%s"}\\n\' "$token"\n')
    result = RemoteScriptProvider().create(props(create, stdin="SWMTKN-1-secret"))
    assert outs_of(result)["result"] == {"got": "SWMTKN-1-secret"}, "secrets go on stdin, never in argv"


def test_stdin_archive_reaches_the_create_script_as_a_tar(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("from a file\n")
    received = tmp_path / "received.tar"
    create = {**write_script(tmp_path, "save.sh", 'cat > "$1"\n'), "args": [str(received)]}
    archive = {"a/from-file.txt": {"path": str(tmp_path / "file.txt")}, "run.sh": {"content": "echo\n", "mode": 0o755}}
    RemoteScriptProvider().create(props(create, stdin_archive=archive))
    with tarfile.open(received) as tar:
        assert sorted(tar.getnames()) == ["a/from-file.txt", "run.sh"]
        file = tar.extractfile("a/from-file.txt")
        assert file is not None and file.read() == b"from a file\n"
        assert tar.getmember("run.sh").mode == 0o755, "a content entry keeps its mode"


def test_the_archive_goes_to_create_only_and_the_stdin_text_to_the_other_scripts(tmp_path: Path) -> None:
    received = tmp_path / "received"
    delete = {**write_script(tmp_path, "delete.sh", 'cat > "$1"\n'), "args": [str(received)]}
    archived = props(write_script(tmp_path, "create.sh", ""), stdin="text", stdin_archive={"x": {"content": ""}})
    RemoteScriptProvider().delete("id", {**archived, "delete": delete})
    assert received.read_text() == "text", "delete has no use for a build context"


def test_a_piped_create_reads_the_source_scripts_stdout(tmp_path: Path) -> None:
    source = write_script(tmp_path, "save.sh", "printf 'image bytes'\n")
    load = write_script(tmp_path, "load.sh", 'data=$(cat)\nprintf \'{"loaded": "%s"}\\n\' "$data"\n')
    result = RemoteScriptProvider().create(props(load, pipe_from={"connection": None, "create": source}))
    assert outs_of(result)["result"] == {"loaded": "image bytes"}, "docker save | docker load, through this machine"


def test_a_failing_pipe_source_is_named_in_the_error(tmp_path: Path) -> None:
    source = write_script(tmp_path, "save.sh", "echo 'no such image' >&2\nexit 1\n")
    load = write_script(tmp_path, "load.sh", "cat >/dev/null\n")
    with pytest.raises(RemoteScriptError, match="save.sh"):
        RemoteScriptProvider().create(props(load, pipe_from={"connection": None, "create": source}))


def test_a_failing_pipe_receiver_reports_its_own_exit_code(tmp_path: Path) -> None:
    source = write_script(tmp_path, "save.sh", "exec cat /dev/zero\n")
    load = write_script(tmp_path, "load.sh", "echo 'disk full' >&2\nexit 5\n")
    with pytest.raises(RemoteScriptError, match=r"\(exit 5\)"):
        RemoteScriptProvider().create(props(load, pipe_from={"connection": None, "create": source}))


def test_update_keeps_the_result_and_takes_the_new_inputs() -> None:
    news = news_of(OLD, label="renamed")
    outs = outs_of(RemoteScriptProvider().update("id", OLD, news))
    assert outs["label"] == "renamed" and outs["result"] == OLD["result"], "nothing ran, so the result stands"
    assert outs["drifted"] is False


def test_a_drifted_resource_that_repairs_in_place_is_updated_not_replaced() -> None:
    olds = {**OLD, "drifted": True, "repair_in_place": True}
    diff = RemoteScriptProvider().diff("id", olds, news_of(olds))
    assert diff.changes and not diff.replaces, "what depends on its id is left alone"


def test_repairing_in_place_runs_create_again_with_its_archive(tmp_path: Path) -> None:
    create = write_script(tmp_path, "create.sh", 'tar -t; echo \'{"placed": true}\'\n')
    olds = props(create, stdin_archive={"hostfile": {"content": "a\n"}}, repair_in_place=True, drifted=True, result={})
    outs = outs_of(RemoteScriptProvider().update("id", olds, news_of(olds)))
    assert outs["result"] == {"placed": True} and outs["drifted"] is False


def read_props(tmp_path: Path, body: str, **inputs: Any) -> dict[str, Any]:
    read = write_script(tmp_path, "read.sh", body)
    return {**props(write_script(tmp_path, "create.sh", ""), read=read, **inputs), "result": {"id": "c1"}}


def test_a_read_that_exits_3_reports_the_thing_gone(tmp_path: Path) -> None:
    result = RemoteScriptProvider().read("id", read_props(tmp_path, "exit 3\n"))
    assert result.id == "", "an empty id drops it from state, so the next `up` makes it again"


def test_a_read_that_exits_4_marks_the_thing_drifted(tmp_path: Path) -> None:
    result = RemoteScriptProvider().read("id", read_props(tmp_path, "exit 4\n"))
    assert result.id == "id" and outs_of(result)["drifted"] is True, "it exists, and the next `up` replaces it"


@pytest.mark.parametrize("code", [3, 4])
def test_a_read_that_finds_the_thing_gone_or_changed_says_what_it_found_however_quick(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: int
) -> None:
    body = f'echo "changed or removed in llm since placed: /opt/dslab/run/hostfile" >&2\nexit {code}\n'
    RemoteScriptProvider().read("id", read_props(tmp_path, body))
    assert capsys.readouterr().err == "[test] changed or removed in llm since placed: /opt/dslab/run/hostfile\n"


def test_a_read_that_finds_the_thing_as_placed_says_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    RemoteScriptProvider().read("id", read_props(tmp_path, 'echo "checked" >&2\n'))
    assert capsys.readouterr().err == "", "a no-op preview prints no line per read"


def test_a_read_that_succeeds_updates_the_result_with_what_it_saw(tmp_path: Path) -> None:
    result = RemoteScriptProvider().read("id", read_props(tmp_path, 'echo \'{"ip": "10.0.3.2"}\'\n'))
    assert result.id == "id" and outs_of(result)["result"] == {"id": "c1", "ip": "10.0.3.2"}, "merged, not replaced"


def test_a_read_that_finds_the_thing_healthy_again_clears_drifted(tmp_path: Path) -> None:
    result = RemoteScriptProvider().read("id", read_props(tmp_path, "exit 0\n", drifted=True))
    assert outs_of(result)["drifted"] is False, "a repaired thing must not be replaced by the next `up`"


def test_a_read_that_fails_otherwise_raises(tmp_path: Path) -> None:
    with pytest.raises(RemoteScriptError, match=r"read\.sh failed on this machine \(exit 1\)"):
        RemoteScriptProvider().read("id", read_props(tmp_path, "echo 'docker: not found' >&2\nexit 1\n"))


def test_a_resource_without_a_read_script_reads_as_it_is() -> None:
    current = props({"script": "host/x.sh", "args": []}, result={"a": 1})
    assert RemoteScriptProvider().read("id", current).outs == current


def test_delete_runs_the_delete_script(tmp_path: Path) -> None:
    marker = tmp_path / "deleted"
    delete = {**write_script(tmp_path, "delete.sh", 'touch "$1"\n'), "args": [str(marker)]}
    RemoteScriptProvider().delete("id", {**props(write_script(tmp_path, "create.sh", "")), "delete": delete})
    assert marker.exists()


def test_a_failing_delete_raises_so_the_resource_stays_in_state(tmp_path: Path) -> None:
    delete = write_script(tmp_path, "delete.sh", "exit 2\n")
    with pytest.raises(RemoteScriptError, match="delete.sh"):
        RemoteScriptProvider().delete("id", {**props(write_script(tmp_path, "create.sh", "")), "delete": delete})


# --- private_key_file ------------------------------------------------------------------------


def test_a_secret_key_lives_in_a_0600_file_only_while_the_script_runs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    connection = {
        **CONNECTION,
        "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
    }
    del connection["private_key_path"]
    with private_key_file(connection) as usable:
        assert usable is not None
        key = Path(usable["private_key_path"])
        assert key.parent == tmp_path, "in the runtime dir, not the project"
        assert stat.S_IMODE(key.stat().st_mode) == 0o600, "ssh refuses a key others can read"
        assert key.read_text() == connection["private_key"] + "\n", "ssh needs the final newline"
        assert ssh_argv(usable)[ssh_argv(usable).index("-i") + 1] == str(key)
    assert not key.exists(), "the key is removed when the script is done"


def test_a_key_file_is_removed_even_when_the_script_fails(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    with pytest.raises(RuntimeError), private_key_file({**CONNECTION, "private_key": "k"}):
        raise RuntimeError("script failed")
    assert os.listdir(tmp_path) == []


def test_a_connection_without_a_secret_key_is_used_as_it_is() -> None:
    with private_key_file(CONNECTION) as usable:
        assert usable is CONNECTION
    with private_key_file(None) as local:
        assert local is None


def test_an_include_line_is_replaced_by_the_shared_file_before_the_script_travels(tmp_path: Path) -> None:
    shared = tmp_path / "shared.sh"
    shared.write_text('greet() { echo "hello $1"; }\n')
    script = write_script(tmp_path, "uses.sh", f"# dslab:include {shared}\ngreet included\n")
    code, stdout, _ = run_script("test", None, script)
    assert (code, stdout) == (0, "hello included\n"), "the function came along in the one text bash runs"


def test_the_swarm_scripts_carry_the_gossip_port_check() -> None:
    for script in ("host/swarm-manager.sh", "host/swarm-worker.sh"):
        assert "wait_for_gossip_port_free() {" in script_text(script), script


# --- errors as the user reads them -----------------------------------------------------------


def test_a_bug_in_the_provider_keeps_its_traceback_in_the_message() -> None:
    broken = {key: value for key, value in OLD.items() if key != "create"}
    with pytest.raises(RemoteScriptBug, match=r"(?s)RemoteScriptProvider.create failed:.*KeyError: 'create'"):
        RemoteScriptProvider().create(broken)


def test_a_failing_script_raises_its_own_error_unchanged(tmp_path: Path) -> None:
    create = write_script(tmp_path, "create.sh", "echo 'disk full' >&2\nexit 5\n")
    with pytest.raises(RemoteScriptError, match=r"create.sh failed on this machine \(exit 5\):\ndisk full"):
        RemoteScriptProvider().create(props(create))


def test_a_step_that_became_a_command_is_forgotten_not_read_or_deleted(monkeypatch: pytest.MonkeyPatch) -> None:
    # A stack made before the SSH mesh and the run were Commands keeps their RemoteScripts
    # until the first `up` with this code deletes them: their scripts are gone from assets/.
    ran: list[Any] = []
    monkeypatch.setattr(remote_script, "run_script", lambda *args, **kwargs: ran.append(args) or (0, "", ""))
    old_run = {
        "label": "server1: deepspeed",
        "connection": None,
        "create": {"script": "host/deepspeed-launch.sh", "args": []},
        "delete": {"script": "host/deepspeed-stop.sh", "args": ["llm"]},
        "read": None,
    }
    old_keys = {**old_run, "create": {"script": "host/mesh-collect.sh", "args": ["make", "llm"]}, "delete": None}
    old_keys["read"] = {"script": "host/mesh-collect.sh", "args": ["read", "llm"]}
    provider = remote_script.RemoteScriptProvider()
    provider.delete("id", old_run)
    assert provider.read("id", old_keys).outs == old_keys, "read back as it was"
    assert not ran, "neither script ran"
