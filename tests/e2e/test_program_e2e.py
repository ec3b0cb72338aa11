"""The product end to end on the simulated 2-host lab, with the built toolchain and the dev
stack's configuration: up from nothing (swarm, overlay, image, containers, SSH mesh, a
DeepSpeed ZeRO-2 run across both containers), a no-change preview, a training change
that re-runs training only, a third host inserted at the front of the list and the list
reordered (no other container moves), and a destroy that leaves nothing.

The tests share one stack and run in file order; each reads the real world, not the
program's own claims.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from components.render.results import default_results_dir
from tests.support.pulumi_output import change_counts, command_lines, diagnostics_of, diff_change_lines, planned_steps
from tests.support.faults import set_hosts
from tests.support.sim_hosts import STATE_DIR, host_fault, hosts_up, inspect, keep_build_cache, on_host, wait_for_sshd
from harness.pulumi_cli import PulumiCli, ensure_toolchain
from harness.stack_project import Stack, project_copy

pytestmark = [pytest.mark.e2e, pytest.mark.program]

HOSTS = ("server1", "server2")
STACK = "dev"
RESULTS = default_results_dir("dslab", STACK)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    ensure_toolchain()
    hosts_up(len(HOSTS))
    for host in HOSTS:  # an earlier session's unfinished runs of this stack would be resumed
        on_host(host, "rm", "-rf", RESULTS)
    work = tmp_path_factory.mktemp("program-e2e")
    cli = PulumiCli(project_dir=project_copy(work, (STACK,)), state_dir=work / "state")
    cli.run("stack", "init", STACK)
    yield Stack(cli, STACK)
    cli.run("destroy", "--yes", "--stack", STACK, check=False)


def training_log() -> str:
    return on_host("server1", "docker", "exec", "llm", "cat", "/opt/dslab/run/train.log")


def losses(log: str) -> list[float]:
    return [float(value) for value in re.findall(r"dslab: step=\d+ loss=([0-9.eE+-]+)", log)]


@pytest.fixture(scope="module")
def first_up(stack: Stack) -> str:
    """What the module's first `up` (from nothing) printed; a test run alone (-k) makes it."""
    output = stack.pulumi("up", "--yes")
    keep_build_cache()
    return output


RUNS: list[str] = []
"""The runs' directories on the hosts, in the order they ran: each later test's run must leave
every earlier one's in place."""


def run_directory(stack: Stack) -> str:
    """This run's directory (the same path on every host), after checking that the earlier
    runs' are all still there, each with the result.json its run wrote."""
    results = stack.outputs()["training_results"]
    assert isinstance(results, dict) and set(results) == set(HOSTS), results
    directory = str(results["server1"])
    assert all(path == directory for path in results.values()), "the same path on every host"
    assert directory.startswith(f"{RESULTS}/"), "under the default results_dir"
    assert directory not in RUNS, "a run never writes into an earlier run's directory"
    RUNS.append(directory)
    for earlier in RUNS:
        result = json.loads(on_host("server1", "cat", f"{earlier}/result.json"))
        assert result["world_size"] >= 2 and result["final_loss"] > 0, result
        on_host("server1", "test", "-f", f"{earlier}/finished")
        assert on_host("server1", "cat", f"{earlier}/status").strip() == "succeeded", "written by the run itself"
    return directory


def test_up_from_nothing_builds_the_cluster_and_trains_across_both_containers(stack: Stack, first_up: str) -> None:
    outputs = stack.outputs()

    nodes = on_host("server1", "docker", "node", "ls", "--format", "{{.Hostname}} {{.Status}}").split("\n")
    assert sorted(line for line in nodes if line) == ["server1 Ready", "server2 Ready"], "both hosts are in the swarm"

    container_ips = outputs["container_ips"]
    assert isinstance(container_ips, dict)
    for host in HOSTS:
        container = inspect(host, "container", "llm")
        assert container is not None and container["State"]["Running"], f"{host} runs its container"
        address = container["NetworkSettings"]["Networks"]["test-net"]["IPAddress"]
        assert address == container_ips[host], f"{host}'s container has the address the stack reports"

    hostname = on_host(
        "server1", "docker", "exec", "llm",
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "server2", "hostname",
    )  # fmt: skip
    assert hostname.strip() == "server2", "the manager's container logs in to the worker's with strict host keys"

    log = training_log()
    assert "dslab: world_size=2" in log, "DeepSpeed ran one rank in each container"
    curve = losses(log)
    assert len(curve) >= 10 and curve[-1] < curve[0], f"the loss went down: {curve}"
    assert "dslab: finished" in log, "the run finished"
    assert outputs["training_status"] == "succeeded"
    run = run_directory(stack)
    assert json.loads(on_host("server1", "cat", f"{run}/result.json"))["steps"] == 20, "train_tiny's --output_dir"
    assert on_host("server1", "cat", f"{run}/train.log") == log, "the log is kept beside the results"
    name = run.rsplit("/", 1)[-1]
    assert re.fullmatch(r"\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{8}-[0-9a-f]{12}", name), "time, stack, identity: " + name
    identity = json.loads(on_host("server1", "cat", f"{run}/identity.json"))
    image_id = on_host("server1", "docker", "image", "inspect", "--format", "{{.Id}}", identity["image"]).strip()
    assert image_id == outputs["image_ids"]["server1"], "the image the run ran, by its content tag"  # type: ignore[index]
    assert "--master_port" not in identity["argv"] and identity["argv"][-2:] == [
        "--output_dir",
        "/opt/dslab/results/@RUN@",
    ]
    assert str(outputs["training_summary"]).startswith(f"run {name}: server1: dslab: finished steps=20")


def test_a_successful_up_reads_as_the_steps_that_took_time_and_the_training_run(first_up: str) -> None:
    diagnostics = diagnostics_of(first_up)
    said = command_lines(first_up)
    run = said.get("lab-training-run", [])
    assert run and run[0].startswith("preflight: every node answers"), f"the preflight first: {run}"
    where = next((n for n, line in enumerate(run) if line.startswith("this run's results: ")), -1)
    assert where > 0 and run[where].startswith(f"this run's results: {RESULTS}/"), f"where: {run}"
    assert re.match(r"run \S+: \{\"argv\":", run[where + 1]), f"what the run is: {run}"
    assert run[where + 2].startswith("launching in llm: deepspeed"), f"the run says what it starts: {run}"
    assert re.fullmatch(
        rf"training succeeded; the log is llm:/opt/dslab/run/train\.log, kept in {RESULTS}/\S+/train\.log when the run ends",
        run[-1],
    ), f"and where its log is: {run[-1]}"
    # Shipping the image takes tens of seconds: it says how far it is, and when it is done.
    ship = said.get("lab-image-server2-ship", [])
    assert ship and ship[-1].startswith(("sent dslab/train:", "dslab/train:")), f"the copy says it is done: {ship}"
    # The preflight reports what it measured. Every other step is done within seconds and says nothing.
    slow = ("lab-training-run", "lab-image-server2-ship")
    others = {name: lines for name, lines in said.items() if name not in slow}
    assert sum(map(len, others.values())) <= 4, f"quick steps say nothing when they succeed:\n{others}"
    # Ours say "warning:"; DeepSpeed's own "[WARNING]" about running on CPU is the training log's.
    warnings = [line for lines in said.values() for line in lines if "warning:" in line.lower()]
    warnings += [line for line in diagnostics.splitlines() if line.strip().lower().startswith("warning:")]
    assert not warnings, f"no warning over a run that succeeded:\n{diagnostics}"


def test_the_overlay_mtu_leaves_room_for_vxlan_on_the_hosts_interface(stack: Stack) -> None:
    host_mtu = int(on_host("server1", "cat", "/sys/class/net/eth0/mtu"))
    assert stack.outputs()["network_mtu"] == host_mtu - 50
    addresses = stack.outputs()["container_ips"]
    assert isinstance(addresses, dict)
    for host in HOSTS:
        interfaces = on_host(host, "docker", "exec", "llm", "ip", "-o", "-4", "addr", "show")
        overlay = next(line.split()[1] for line in interfaces.splitlines() if f" {addresses[host]}/" in line)
        container_mtu = on_host(host, "docker", "exec", "llm", "cat", f"/sys/class/net/{overlay.split('@')[0]}/mtu")
        assert int(container_mtu) == host_mtu - 50, f"{host}'s container interface on the overlay"


def test_the_preflight_measured_the_overlay_before_training(stack: Stack) -> None:
    outputs = stack.outputs()
    assert float(str(outputs["preflight_busbw_gbps"])) > 0
    report = on_host("server1", "docker", "exec", "llm", "cat", "/opt/dslab/run/preflight.log")
    assert report.count("dslab: allreduce size_mb=") == 3, "1, 16 and 64 MiB"


def test_a_second_up_changes_nothing_and_then_a_previews_diff_lists_no_resource(stack: Stack) -> None:
    output = stack.pulumi("up", "--yes")
    assert set(change_counts(output)) == {"unchanged"}, output[-3000:]
    output = stack.pulumi("preview", "--diff", "--expect-no-changes")
    # What refresh reads back from the engines is what the state holds (components/steps/refresh_defaults.py).
    assert diff_change_lines(output) == [], output
    assert len(output.strip().splitlines()) <= 10, output


def test_a_new_host_timeout_is_one_update_per_host_and_nothing_else(stack: Stack) -> None:
    stack.pulumi("config", "set", "--path", "dslab:operator.host_timeout", "75")
    preview = stack.pulumi("preview", "--diff")
    assert planned_steps(preview) == {"lab-host-timeout-server1": "update", "lab-host-timeout-server2": "update"}, (
        preview
    )
    stack.pulumi("up", "--yes")
    for host in ("server1", "server2"):
        assert on_host(host, "cat", ".dslab/host-timeout").strip() == "75", "the bound every step's script reads"
    stack.pulumi("preview", "--expect-no-changes")


def test_a_refresh_finds_the_hosts_as_the_stack_says(stack: Stack) -> None:
    stack.pulumi("refresh", "--yes", "--expect-no-changes")


def test_the_join_token_and_private_keys_appear_nowhere_in_plaintext(stack: Stack, first_up: str) -> None:
    token = on_host("server1", "docker", "swarm", "join-token", "--quiet", "worker").strip()
    operator_key = (STATE_DIR / "operator_ed25519").read_text().strip().splitlines()[1]
    state = stack.cli.run("stack", "export", "--stack", STACK).stdout
    outputs = json.dumps(stack.outputs())
    for where, text in {"the state": state, "the outputs": outputs, "the up log": first_up}.items():
        assert token not in text, f"the join token is not in {where}"
        assert operator_key not in text, f"the operator's private key is not in {where}"
        assert "PRIVATE KEY" not in text, f"no private key of any container is in {where}"


def test_a_container_deleted_behind_our_back_is_made_again_by_a_plain_up_with_new_keys_trusted(
    stack: Stack,
) -> None:
    on_host("server2", "docker", "rm", "--force", "llm")

    # The project refreshes before every operation: no `pulumi refresh` or `--refresh` needed.
    up = stack.pulumi("up", "--yes")
    assert re.search(r"server2-llm\s+(create|created)", up), f"up noticed the container is gone: {up[-3000:]}"

    container = inspect("server2", "container", "llm")
    assert container is not None and container["State"]["Running"], "up made the container again"
    assert (
        container["NetworkSettings"]["Networks"]["test-net"]["IPAddress"] == stack.outputs()["container_ips"]["server2"]
    )  # type: ignore[index]
    hostname = on_host(
        "server1", "docker", "exec", "llm",
        "ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes", "server2", "hostname",
    )  # fmt: skip
    assert hostname.strip() == "server2", "the mesh ran again: the new container's keys are trusted"
    stack.pulumi("preview", "--expect-no-changes")
    # The run of these inputs finished: a new container does not train it again, it reports it.
    assert f"run {RUNS[-1].rsplit('/', 1)[-1]} has these inputs and finished: nothing to train" in up
    assert stack.outputs()["training_results"]["server1"] == RUNS[-1]  # type: ignore[index]
    assert stack.outputs()["training_status"] == "succeeded"


def test_a_restarted_engine_brings_the_container_back_as_it_was(stack: Stack) -> None:
    before = inspect("server2", "container", "llm")
    assert before is not None
    host_fault("engine-stop", "server2")
    host_fault("engine-start", "server2")

    after = inspect("server2", "container", "llm")
    assert after is not None and after["Id"] == before["Id"], "the restart policy brought the same container back"
    assert after["NetworkSettings"]["Networks"]["test-net"]["IPAddress"] == "10.0.3.129", "with the same address"
    wait_for_sshd("server2")
    stack.pulumi("refresh", "--yes", "--expect-no-changes")


def test_changing_a_training_argument_reruns_only_training(stack: Stack) -> None:
    before = stack.outputs()
    containers_before = {host: inspect(host, "container", "llm")["Id"] for host in HOSTS}  # type: ignore[index]

    stack.pulumi("config", "set", "--path", "training.workload.args[1]", "25")
    changed = set(stack.preview_changes())
    assert changed == {"lab-training-run"}, f"only the run changes: {changed}"

    stack.pulumi("up", "--yes")
    after = stack.outputs()
    containers_after = {host: inspect(host, "container", "llm")["Id"] for host in HOSTS}  # type: ignore[index]
    assert containers_after == containers_before, "no container was recreated"
    assert after["image_ids"] == before["image_ids"], "no image was rebuilt"
    assert "steps=25" in training_log(), "the new run used the new argument"
    run = run_directory(stack)
    assert run.rsplit("-", 1)[-1] != RUNS[-2].rsplit("-", 1)[-1], "other inputs, another key in the name"


def container_ids(hosts: tuple[str, ...]) -> dict[str, str]:
    ids = {}
    for host in hosts:
        container = inspect(host, "container", "llm")
        assert container is not None, f"{host} runs its container"
        ids[host] = str(container["Id"])
    return ids


def summary_line(preview: str) -> str:
    """The preview's `Resources:` summary, e.g. `+ 9 to create ... 30 unchanged`, on one line."""
    block = preview[preview.rindex("Resources:") :].split("\n\n")[0]
    return " ".join(line.strip() for line in block.splitlines()[1:] if line.strip())


def test_a_host_inserted_at_the_front_of_the_list_moves_no_container_and_joins_the_run(stack: Stack) -> None:
    hosts_up(3)
    before = stack.outputs()["container_ips"]
    ids = container_ids(HOSTS)

    set_hosts(stack, ["server3", "server1", "server2"])
    steps = stack.preview_changes("--diff")
    assert steps["server3-llm"]["op"] == "create", "the new host gets its container"
    # Their containers, claims, swarm joins, keys and images stay; the mesh's files and the
    # run's files (the hostfile) now name server3.
    touched = {
        name for name in steps if any(host in name for host in HOSTS) and not name.endswith(("-trust", "-files"))
    }
    assert not touched, f"nothing of the other hosts changes but the mesh's and the run's files: {touched}"
    print("insert at the front:", summary_line(stack.pulumi("preview")))

    stack.pulumi("up", "--yes")
    after = stack.outputs()["container_ips"]
    assert isinstance(before, dict) and isinstance(after, dict)
    assert {host: after[host] for host in HOSTS} == before, "server1 and server2 keep their addresses"
    assert after["server3"] not in before.values()
    assert container_ids(HOSTS) == ids, "and their containers"
    log = training_log()
    assert "dslab: world_size=3" in log and "dslab: finished" in log, "the run took in the new host"
    stack.pulumi("preview", "--expect-no-changes")


def test_reordering_the_list_moves_no_container_and_the_run_follows_the_new_order(stack: Stack) -> None:
    everyone = (*HOSTS, "server3")
    before = stack.outputs()["container_ips"]
    ids = container_ids(everyone)

    set_hosts(stack, ["server2", "server3", "server1"])
    steps = stack.preview_changes("--diff")
    changed = {name for name in steps if "server" in name and not name.endswith("-files")}
    assert not changed, f"nothing of any host changes but the run's files: {changed}"
    assert "lab-training-run" in steps, "the hostfile's order changed: the run follows it"
    print("reorder:", summary_line(stack.pulumi("preview")))

    stack.pulumi("up", "--yes")
    assert stack.outputs()["container_ips"] == before
    assert container_ids(everyone) == ids
    assert on_host("server1", "docker", "exec", "llm", "cat", "/opt/dslab/run/hostfile").split() == [
        "server1", "slots=1", "server2", "slots=1", "server3", "slots=1",
    ], "ranks follow the list, the manager first"  # fmt: skip
    assert "dslab: finished" in training_log()
    stack.pulumi("preview", "--expect-no-changes")


def test_a_new_shm_size_previews_as_the_containers_shm_size_and_nothing_else(stack: Stack) -> None:
    stack.pulumi("config", "set", "--path", "container.shm_size", "2G")
    try:
        steps = stack.preview_changes("--diff")
    finally:
        stack.pulumi("config", "set", "--path", "container.shm_size", "1G")
    for container in ("server1-llm", "server2-llm", "server3-llm"):
        assert container in steps, f"{container} changes: {sorted(steps)}"
        assert steps[container]["diffReasons"] == ["shmSize"], "the diff names the container's field"
        detailed = steps[container]["detailedDiff"]
        assert set(detailed) == {"shmSize"}, f"and only that field: {detailed}"
    # A new container has new keys: the mesh and the run follow it, through values that
    # come from the containers (their triggers, and the keys they install).
    followers = {name: set(step.get("diffReasons") or []) for name, step in steps.items() if not name.endswith("-llm")}
    assert all(reasons <= {"triggers", "stdin"} for reasons in followers.values()), (
        f"anything else changes only because it follows a new container: {followers}"
    )
    stack.pulumi("preview", "--expect-no-changes")


def test_destroy_after_a_container_removed_by_hand_leaves_nothing_on_any_host(stack: Stack) -> None:
    on_host("server2", "docker", "rm", "--force", "llm")
    destroyed = stack.pulumi("destroy", "--yes")
    for host in ("server1", "server2", "server3"):
        kept = f"{host}: the results of every run stay in {RESULTS} (training.results_on_destroy: keep)"
        assert kept in destroyed, destroyed[-3000:]
    for run in RUNS:
        on_host("server1", "test", "-f", f"{run}/result.json")  # the user's results are not ours to delete

    for host in (*HOSTS, "server3"):
        assert on_host(host, "docker", "ps", "--all", "--quiet").strip() == "", f"no containers left on {host}"
        assert inspect(host, "network", "test-net") is None, f"no overlay network left on {host}"
        state = on_host(host, "docker", "info", "--format", "{{.Swarm.LocalNodeState}}").strip()
        assert state == "inactive", f"{host} left the swarm"
    assert stack.cli.resource_count(STACK) == 0, "the stack is empty"
