"""The shell functions host scripts include (`assets/host/lib/`), run with the local bash."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from components.paths import ASSETS_DIR


def run_with_lib(lib: str, body: str, *args: str, path: str | None = None) -> subprocess.CompletedProcess[str]:
    script = f"set -euo pipefail\nsource {ASSETS_DIR / 'host/lib' / lib}\n{body}"
    env = {"PATH": f"{path}:/usr/bin:/bin"} if path else None
    return subprocess.run(["bash", "-c", script, "test", *args], capture_output=True, text=True, env=env)


def test_json_string_makes_any_line_of_a_run_a_json_string() -> None:
    tricky = 'dslab: finished steps=20 "loss" \\ 0.12\r\x1b[0m\ttab'
    ran = run_with_lib("json-string.sh", 'printf \'{"summary": %s}\\n\' "$(json_string "$1")"', tricky)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"summary": 'dslab: finished steps=20 "loss" \\ 0.12[0mtab'}, ran.stdout


def fake_docker(tmp_path: Path, answers: list[str]) -> Path:
    """A `docker` that prints the next of ANSWERS on each call (a lost output is "")."""
    (tmp_path / "answers").write_text("\n".join(answers) + "\n")
    (tmp_path / "calls").write_text("")
    docker = tmp_path / "docker"
    docker.write_text(
        "#!/bin/bash\n"
        f'echo "$*" >> {tmp_path}/calls\n'
        f"n=$(wc -l < {tmp_path}/calls)\n"
        f"sed -n \"${{n}}p\" {tmp_path}/answers\n"
    )
    docker.chmod(0o755)
    return tmp_path


def test_container_output_asks_again_when_docker_exec_lost_the_output(tmp_path: Path) -> None:
    bin_dir = fake_docker(tmp_path, ["", "ssh-ed25519 AAAA key"])
    ran = run_with_lib("container-output.sh", 'key=$(container_output llm cat key.pub); echo "[$key]"', path=str(bin_dir))
    assert ran.stdout == "[ssh-ed25519 AAAA key]\n", ran.stderr
    assert (tmp_path / "calls").read_text().splitlines() == ["exec llm cat key.pub"] * 2


def test_container_output_gives_up_after_three_empty_answers(tmp_path: Path) -> None:
    bin_dir = fake_docker(tmp_path, ["", "", "", "too late"])
    ran = run_with_lib("container-output.sh", 'out=$(container_output llm true); echo "[$out]"', path=str(bin_dir))
    assert ran.stdout == "[]\n", ran.stderr
    assert len((tmp_path / "calls").read_text().splitlines()) == 3


def test_container_output_fails_with_the_command(tmp_path: Path) -> None:
    docker = tmp_path / "docker"
    docker.write_text("#!/bin/bash\necho 'Error: No such container: llm' >&2\nexit 7\n")
    docker.chmod(0o755)
    ran = run_with_lib("container-output.sh", "container_output llm cat x || echo \"exit $?\"", path=str(tmp_path))
    assert ran.stdout == "exit 7\n" and "No such container" in ran.stderr
