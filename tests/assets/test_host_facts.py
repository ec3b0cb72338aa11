"""assets/host/host-facts.sh, here with a stand-in `docker` whose one running container of the
stack is a folder: the facts of the steps done on the host itself (its swarm, the images it
holds, its results directory) read from the host, with only the generation each step last ran
with from its mark; the container's marks checked where they are, a step whose work changed
reporting its next generation and why. The real engines run it on every preview and up of
tests/e2e and tests/faults."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from components.paths import ASSETS_DIR

STAND_IN_DOCKER = r"""#!/bin/bash
# One running container of the stack, c1, whose root is $ROOT, mounting $ROOT/../runs-before for
# the results, and a stopped one of another stack; the image dslab/train:abc; no swarm, no
# claim, no network.
case $1 in
  ps) printf '%s\n' 'c1 running org/dslab/dev' 'c9 exited org/other/prod' ;;
  inspect) [[ $3 == *Mounts* ]] && echo "${ROOT%/root}/runs-before" || echo 'server1 10.0.3.128' ;;
  image) [[ $5 == dslab/train:abc ]] && echo sha256:0abc ;;
  info) echo 'inactive  false' ;;
  exec) shift 2; [[ $1 == sh && $2 == -c ]] && exec sh -c "$3" "$4" "$ROOT$5" ;;
  *) exit 1 ;;
esac
"""
STAND_IN_MANAGER = r"""#!/bin/bash
# A swarm manager (node m1 at 10.0.0.1) with one worker (w1 at 10.0.0.2); nothing else.
case "$1 $2" in
  "ps --all") ;;
  "info --format") [[ $3 == *RemoteManagers* ]] && printf 'swarm-manager m1 10.0.0.1:2377\n' || echo 'active m1 true' ;;
  "node ls") printf 'm1\nw1\n' ;;
  "node inspect") printf 'swarm-member m1 10.0.0.1\nswarm-member w1 10.0.0.2\n' ;;
  *) exit 1 ;;
esac
"""


def host_facts(tmp_path: Path, docker: str, engine_timeout_s: int = 5) -> subprocess.CompletedProcess[str]:
    """host-facts.sh with DOCKER (a bash script) as the host's `docker`, asked about two images
    and the results directory $tmp_path/runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "docker").write_text(docker)
    (bin_dir / "docker").chmod(0o755)
    return subprocess.run(
        ["bash", str(ASSETS_DIR / "host" / "host-facts.sh"), "org/dslab/dev", "test-net", "10.0.0.1", "no",
         str(engine_timeout_s), "dslab/train:abc,dslab/train-ipsec:def", str(tmp_path / "runs")],
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path / "home"), "ROOT": str(tmp_path / "root")},
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def probe(tmp_path: Path, docker: str = STAND_IN_DOCKER) -> list[str]:
    ran = host_facts(tmp_path, docker)
    assert ran.returncode == 0, ran.stderr
    return ran.stdout.splitlines()


def mark(folder: Path, step: str, generation: int, **files: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{step}.gen").write_text(f"{generation}\n")
    for suffix, text in files.items():
        (folder / f"{step}.{suffix}").write_text(text)


def test_the_engines_bound_the_host_keeps_is_reported_as_written(tmp_path: Path) -> None:
    assert not [line for line in probe(tmp_path) if line.startswith("host-timeout")], "none kept: none said"
    (tmp_path / "home" / ".dslab").mkdir(parents=True)
    (tmp_path / "home" / ".dslab" / "host-timeout").write_text("90\n")
    assert "host-timeout 90" in probe(tmp_path)
    (tmp_path / "home" / ".dslab" / "host-timeout").write_text("ninety\n")
    assert not [line for line in probe(tmp_path) if line.startswith("host-timeout")], "no number: none"


def test_host_steps_report_only_their_generation_beside_the_facts_and_container_steps_their_checks(
    tmp_path: Path,
) -> None:
    host_steps = tmp_path / "home" / ".dslab" / "steps"
    mark(host_steps, "swarm", 2, check="true\n")  # an earlier release's check: not run, not trusted
    mark(host_steps, "image-abc", 1765000000000000)
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
        "image dslab/train:abc sha256:0abc",
        "results absent",
        "used-by org/other/prod",
        "host-step image-abc 1765000000000000",
        "host-step swarm 2",
        f"results-mount {tmp_path}/runs-before",
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
    ran = host_facts(
        tmp_path, "#!/bin/bash\n[[ $1 == ps ]] && exit 0\necho 'Cannot connect to the Docker daemon' >&2; exit 1\n"
    )
    assert ran.returncode != 0
    assert ran.stderr.strip().splitlines()[-1] == "Cannot connect to the Docker daemon"


def test_a_wiped_host_says_nothing_but_that_its_results_directory_is_absent(tmp_path: Path) -> None:
    # No container of any stack, no swarm, no image, no claim, no marks.
    ran = host_facts(tmp_path, "#!/bin/bash\n[[ $1 == info ]] && echo 'inactive  false'\n[[ $1 != volume ]]\n")
    assert (ran.returncode, ran.stdout) == (0, "results absent\n")


def test_an_engine_that_never_answers_is_named_within_the_bound(tmp_path: Path) -> None:
    # Lists the containers, then hangs on every other call, as a stopped dockerd does.
    ran = host_facts(tmp_path, "#!/bin/bash\n[[ $1 == ps ]] && exit 0\nexec sleep 30\n", engine_timeout_s=1)
    assert (ran.returncode, ran.stdout.splitlines()) == (0, ["engine-silent 1"])


def test_a_results_directory_is_writable_once_made_and_read_only_when_not(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    assert "results writable" in probe(tmp_path)
    runs.chmod(0o500)
    try:
        # root writes anywhere: only a user without the right sees read-only.
        expected = "results writable" if os.geteuid() == 0 else "results read-only"
        assert expected in probe(tmp_path)
    finally:
        runs.chmod(0o700)


def test_the_last_run_is_read_where_the_container_writes_its_runs(tmp_path: Path) -> None:
    # training.results_dir changed to runs/ while the container still mounts runs-before/.
    for folder, name in (("runs", "20261206T000000.000Z-aaaa-new"), ("runs-before", "20261205T000000.000Z-aaaa-old")):
        (tmp_path / folder / name).mkdir(parents=True)
        (tmp_path / folder / "last-run").write_text(f"{name}\n")
        (tmp_path / folder / name / "status").write_text("succeeded\n")
    assert [line for line in probe(tmp_path) if line.startswith(("run", "results-mount"))] == [
        f"results-mount {tmp_path}/runs-before",
        "run 20261205T000000.000Z-aaaa-old succeeded",
    ]


def test_a_manager_tells_its_node_the_managers_it_knows_and_every_node_of_its_swarm(tmp_path: Path) -> None:
    assert probe(tmp_path, STAND_IN_MANAGER) == [
        "swarm-node m1 manager",
        "swarm-manager m1 10.0.0.1:2377",
        "swarm-member m1 10.0.0.1",
        "swarm-member w1 10.0.0.2",
        "results absent",
    ]


def test_every_reader_of_the_hosts_timeout_reads_the_file_its_step_writes() -> None:
    # host-facts.sh is sent as it is (no includes) and the engine watch runs on the operator's
    # side: both name the file host/lib/host-timeout-file.sh names, which host-timeout.sh writes.
    written = (ASSETS_DIR / "host" / "lib" / "host-timeout-file.sh").read_text()
    path = written.split("HOST_TIMEOUT_FILE=~/", 1)[1].split()[0]
    assert path == ".dslab/host-timeout"
    assert f"HOST_TIMEOUT_FILE=$HOME/{path}" in (ASSETS_DIR / "host" / "host-facts.sh").read_text()
    assert f"~/{path}" in (ASSETS_DIR / "operator" / "engine-watch.sh").read_text()
    assert "host-timeout-file.sh" in (ASSETS_DIR / "host" / "host-timeout.sh").read_text()
