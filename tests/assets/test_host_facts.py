"""assets/host/host-facts.sh's step marks (host/lib/step-mark.sh), here with a stand-in `docker`
whose one running container of the stack is a folder: the host's marks and the container's are
read by the same check, and a step whose work changed reports its next generation and why.
The real engines run it on every preview and up of tests/e2e and tests/faults."""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path

from components.paths import ASSETS_DIR

STAND_IN_DOCKER = r"""#!/bin/bash
# One running container of the stack, c1, whose root is $ROOT, and a stopped one of another
# stack; no swarm, no claim, no network.
case $1 in
  ps) printf '%s\n' 'c1 running org/dslab/dev' 'c9 exited org/other/prod' ;;
  inspect) echo 'server1 10.0.3.128' ;;
  info) echo 'inactive  false' ;;
  exec) shift 2; [[ $1 == sh && $2 == -c ]] && exec sh -c "$3" "$4" "$ROOT$5" ;;
  *) exit 1 ;;
esac
"""


def host_facts(tmp_path: Path, docker: str, engine_timeout_s: int = 5) -> subprocess.CompletedProcess[str]:
    """host-facts.sh with DOCKER (a bash script) as the host's `docker`."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(docker)
    (bin_dir / "docker").chmod(0o755)
    return subprocess.run(
        ["bash", str(ASSETS_DIR / "host" / "host-facts.sh"), "org/dslab/dev", "test-net", "10.0.0.1", "no",
         str(engine_timeout_s)],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "ROOT": str(tmp_path / "root")},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def probe(tmp_path: Path) -> list[str]:
    ran = host_facts(tmp_path, STAND_IN_DOCKER)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


def mark(folder: Path, step: str, generation: int, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{step}.gen").write_text(f"{generation}\n")
    for suffix, text in files.items():
        (folder / f"{step}.{suffix}").write_text(text)


def test_intact_steps_report_their_generation_and_changed_ones_the_next_with_the_reason(tmp_path: Path) -> None:
    host_steps = tmp_path / "home" / ".dslab" / "steps"
    mark(host_steps, "swarm", 2, check="true\n")
    mark(host_steps, "image", 0, check="echo 'image dslab/train:abc is gone' >&2; exit 1\n")
    hostfile = tmp_path / "root" / "opt" / "dslab" / "run" / "hostfile"
    hostfile.parent.mkdir(parents=True)
    hostfile.write_text("server1 slots=1\n")
    digest = hashlib.sha256(hostfile.read_bytes()).hexdigest()
    container_steps = tmp_path / "root" / "opt" / "dslab" / "steps"
    # sha256sum runs in the steps folder of the container: the path as the container sees it.
    mark(container_steps, "run-files", 5, sha256=f"{digest}  {hostfile}\n")
    mark(container_steps, "reach", 1, check="exit 0\n")
    assert probe(tmp_path) == [
        "held server1 10.0.3.128",
        "used-by org/other/prod",
        "step image 1 image dslab/train:abc is gone",
        "step swarm 2",
        "step reach 1",
        "step run-files 5",
    ]

    hostfile.write_text("server1 slots=8\n")
    (container_steps / "reach.check").unlink()
    assert sorted(line for line in probe(tmp_path) if line.startswith(("step run-files", "step reach"))) == [
        "step reach 2 its check is gone",
        f"step run-files 6 changed or removed: {hostfile} ",
    ]


def test_an_engine_call_that_fails_fails_the_whole_answer_with_its_message(tmp_path: Path) -> None:
    # Every call but the container list fails, as an engine that stops mid-way.
    ran = host_facts(tmp_path, "#!/bin/bash\n[[ $1 == ps ]] && exit 0\necho 'Cannot connect to the Docker daemon' >&2; exit 1\n")
    assert ran.returncode != 0
    assert ran.stderr.strip().splitlines()[-1] == "Cannot connect to the Docker daemon"


def test_a_host_with_no_container_of_any_stack_says_nothing_of_owners(tmp_path: Path) -> None:
    ran = host_facts(tmp_path, "#!/bin/bash\n[[ $1 == info ]] && echo 'inactive  false'\n[[ $1 != volume ]]\n")
    assert (ran.returncode, ran.stdout) == (0, "")


def test_an_engine_that_never_answers_is_named_within_the_bound(tmp_path: Path) -> None:
    # Lists the containers, then hangs on every other call, as a stopped dockerd does.
    ran = host_facts(tmp_path, "#!/bin/bash\n[[ $1 == ps ]] && exit 0\nexec sleep 30\n", engine_timeout_s=1)
    assert (ran.returncode, ran.stdout.splitlines()) == (0, ["engine-silent 1"])
