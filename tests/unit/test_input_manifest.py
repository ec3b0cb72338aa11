"""The workload's inputs are the same on every host (components.hosts.input_manifest), from the
manifest host-facts.sh prints (run here with stand-in ssh and docker), and the last run's status
as the run wrote it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from components.config import Host
from components.hosts.host_steps import run_report_verdict
from components.hosts.input_manifest import InputsDiffer, check_same_inputs, inputs_digest, manifest_digest
from components.hosts.probe import ASK_SCRIPT, HOST_SCRIPT, HostFacts, InputFile, parse_answers
from tests.support.probe_stand_ins import stand_ins

SERVER1 = [Host(name="server1", address="10.0.18.1")]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return stand_ins(tmp_path)


def ask(env: dict[str, str], results: Path, inputs: list[Path]) -> HostFacts:
    ran = subprocess.run(
        ["bash", str(ASK_SCRIPT), str(HOST_SCRIPT), "o/p/s", "test-net", "no", "5", "10", "", str(results),
         "\n".join(map(str, inputs)), "server1=root@10.0.18.1:22", "--", "-o", "BatchMode=yes"],
        capture_output=True, text=True, env=env, timeout=30,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return parse_answers(ran.stdout, SERVER1, "known_hosts", want_mtu=False)


def model_and_data(root: Path) -> list[Path]:
    model, data = root / "model", root / "data"
    (model / "sub").mkdir(parents=True)
    data.mkdir()
    (model / "config.json").write_text('{"hidden_size": 64}')
    (model / "sub" / "tokenizer.json").write_text("{}")
    # Beyond 1 MiB: read by its size and three blocks.
    (model / "weights.bin").write_bytes(bytes(range(256)) * 8192)
    (data / "alpaca.json").write_text("[]")
    return [model, data]


def test_the_manifest_names_every_file_of_every_input_with_its_size_and_digest(tmp_path: Path, env: dict[str, str]) -> None:
    inputs = model_and_data(tmp_path)
    facts = ask(env, tmp_path / "runs", [*inputs, tmp_path / "not-copied-here"])
    files = facts.inputs["server1"]
    assert facts.inputs_absent == {"server1": {2}}, "the input check names it"
    assert [(file.input, file.path, file.size) for file in files] == [
        (0, "config.json", 19), (0, "sub/tokenizer.json", 2), (0, "weights.bin", 2 * 1024 * 1024), (1, "alpaca.json", 2),
    ]  # fmt: skip
    assert all(len(file.sha256) == 64 for file in files)


def test_a_changed_file_changes_the_manifest_even_in_a_large_files_sampled_blocks(tmp_path: Path, env: dict[str, str]) -> None:
    inputs = model_and_data(tmp_path)
    before = ask(env, tmp_path / "runs", inputs).inputs["server1"]
    weights = inputs[0] / "weights.bin"
    with weights.open("r+b") as file:  # the middle block, same size
        file.seek(1024 * 1024)
        file.write(b"changed")
    after = ask(env, tmp_path / "runs", inputs).inputs["server1"]
    assert manifest_digest(before) != manifest_digest(after)
    with pytest.raises(InputsDiffer) as differs:
        check_same_inputs({"server1": before, "server2": after}, "server1", [str(path) for path in inputs])
    assert str(differs.value).startswith(
        f"server2's copy of the training inputs differs from server1's: {inputs[0]}/weights.bin is 2097152 bytes"
    )


def test_the_first_file_that_differs_is_named_and_the_same_copies_pass() -> None:
    roots = ["/data/model", "/data/sets"]
    reference = (InputFile(0, "config.json", 10, "a" * 64), InputFile(1, "alpaca.json", 5, "b" * 64))
    check_same_inputs({"server1": reference, "server2": reference, "server3": reference}, "server1", roots)
    missing = reference[:1]
    with pytest.raises(InputsDiffer) as differs:
        check_same_inputs({"server1": reference, "server3": missing, "server2": reference}, "server1", roots)
    assert str(differs.value) == (
        "server3's copy of the training inputs differs from server1's: /data/sets/alpaca.json is missing on server3, "
        f"5 bytes, sha256 {'b' * 12} on server1; copy the same files to every host"
    )
    # A host that did not answer is left out; the digest is the manager's, or another's.
    assert inputs_digest({"server2": reference}, "server1") == manifest_digest(reference)


def last_run_in(results: Path, status: str) -> Path:
    """RESULTS with one run, the last started, whose status file says STATUS."""
    run = results / "20261206T093000.123Z-0a1b2c3d-0123456789ab"
    run.mkdir(parents=True)
    (results / "last-run").write_text(run.name + "\n")
    (run / "status").write_text(f"{status}\n")
    return run


def test_the_last_runs_status_is_the_runs_and_one_that_says_running_but_is_gone_is_stopped(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "runs"
    run = last_run_in(results, "running")
    facts = ask(env, results, [])
    assert facts.last_runs["server1"].state == "stopped", "no run-deepspeed.sh in the container"
    (tmp_path / "bin" / "docker.run-alive").touch()
    assert ask(env, results, []).last_runs["server1"].state == "running"
    (run / "status").write_text("")
    assert ask(env, results, []).last_runs["server1"].state == "running", "starting: no status written yet"
    (run / "status").write_text("failed rc=1\n")
    assert ask(env, results, []).last_runs["server1"].state == "failed"
    os.remove(run / "status")
    (run / "finished").write_text("2026-12-06T09:31:00Z\n")
    assert ask(env, results, []).last_runs["server1"].state == "succeeded", "an earlier release's mark"


def test_the_run_is_reported_again_when_its_status_changed_since_it_was_last_reported(tmp_path: Path, env: dict[str, str]) -> None:
    results = tmp_path / "runs"
    run = last_run_in(results, "succeeded")
    steps = Path(env["HOME"]) / ".dslab" / "steps"
    steps.mkdir(parents=True)
    (steps / "run-report.seen").write_text(f"{run.name} running\n")
    verdict = run_report_verdict(ask(env, results, []), "server1")
    assert not verdict.done and verdict.missing == f"the training run {run.name} is succeeded since it was last reported running"
    (steps / "run-report.seen").write_text(f"{run.name} succeeded\n")
    assert run_report_verdict(ask(env, results, []), "server1").done
