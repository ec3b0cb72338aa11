"""The Lab component's wiring, against a recording mock engine (no hosts touched):
which resources exist, under which parents, in which order, with which secrets."""

from __future__ import annotations

import hashlib
import json
import shlex
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from components.config import load_stack_file
from components.hosts.host_script import script_text
from tests.support.credentials import unit_credentials
from components.render.results import stack_tag
from harness.pulumi_cli import REPO
from tests.support.recording_mocks import (
    DOCKER_CONTAINER,
    DOCKER_NETWORK,
    DOCKER_PROVIDER,
    DOCKER_VOLUME,
    DOCKER_REMOTE_IMAGE,
    LOCAL_COMMAND,
    REMOTE_COMMAND,
    RecordingMocks,
    host_line,
    host_script_of,
    launch_call,
    placed_files,
    script_body,
    script_args,
    step_generation,
    unsecret,
)


STACK_TAG = stack_tag("organization/dslab/dev")


def after_dashes(args: list[str]) -> list[str]:
    return args[args.index("--") + 1 :]


@pytest.fixture
def mocks() -> RecordingMocks:
    recording = RecordingMocks()
    pulumi.runtime.set_mocks(recording, project="dslab", stack="dev", preview=False)
    return recording


def everything_registered(lab: Any) -> pulumi.Output[Any]:
    """Resolves once the last resource (the launch, which depends on all others) exists."""
    return pulumi.Output.all(lab.container_ips, lab.launch.status, lab.launch.resource.urn)


def build_dev_lab() -> Any:
    from components.lab import Lab

    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    return Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )


@pulumi.runtime.test
def test_every_manual_step_of_the_write_up_is_a_resource(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        scripts = {r.name: host_script_of(r) for r in mocks.resources.values() if r.type == REMOTE_COMMAND}
        assert scripts["lab-swarm-server1-init"] == "host/swarm-manager.sh"
        assert scripts["lab-swarm-server2-join"] == "host/swarm-worker.sh"
        assert mocks.resources["lab-image-server1-build"].type == DOCKER_REMOTE_IMAGE, (
            "build-once builds on the manager"
        )
        assert "lab-image-server2-build" not in mocks.resources
        ship = mocks.resources["lab-image-server2-ship"]
        assert ship.type == LOCAL_COMMAND and host_script_of(ship) == "host/image-mark.sh", "and ships to the worker"
        assert scripts["lab-mesh-server2-trust"] == "host/container-place-files.sh"
        assert scripts["lab-mesh-reach"] == "host/mesh-reach.sh", "up ends with the mesh proven to carry ssh"
        assert scripts["lab-training-run"] == "host/deepspeed-launch.sh"
        docker = {
            r.name: r.type for r in mocks.resources.values() if r.type.startswith(("docker:", "pulumi:providers"))
        }
        assert docker == {
            "lab-claim-server1": DOCKER_VOLUME,
            "lab-claim-server2": DOCKER_VOLUME,
            "lab-image-server1-build": DOCKER_REMOTE_IMAGE,
            "server1-docker": DOCKER_PROVIDER,
            "server2-docker": DOCKER_PROVIDER,
            "test-net": DOCKER_NETWORK,
            "server1-llm": DOCKER_CONTAINER,
            "server2-llm": DOCKER_CONTAINER,
        }, "the claims, the engines, the overlay, the image and the containers are pulumi-docker resources"
        commands = {r.name: r.inputs for r in mocks.resources.values() if r.type == REMOTE_COMMAND}
        assert set(commands) == {
            "lab-swarm-server1-init",
            "lab-swarm-server2-join",
            "lab-swarm-server2-membership",
            "lab-mesh-server1-keys",
            "lab-mesh-server2-keys",
            "lab-mesh-server1-trust",
            "lab-mesh-server2-trust",
            "lab-mesh-reach",
            "lab-training-server1-files",
            "lab-training-server2-files",
            "lab-training-run",
            "lab-results-server1",
            "lab-results-server2",
            "lab-host-timeout-server1",
            "lab-host-timeout-server2",
        }, "the swarm, the mesh, the run, the results directories and the hosts' bound are pulumi-command Commands"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_every_command_checks_its_hosts_key_and_sends_its_script_on_stdin(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        commands = [r for r in mocks.resources.values() if r.type == REMOTE_COMMAND]
        for command in commands:
            connection = command.inputs["connection"]
            connection = connection.get("value", connection)  # a secret as the mocks see it
            host = "server1" if connection["host"] == "10.0.18.1" else "server2"
            assert connection["hostKey"] == f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{host}", command.name
            assert command.inputs["addPreviousOutputInEnv"] is False, "no last output sent to the host"
            assert len(command.inputs["create"]) < 400, "the script travels on stdin, not in the command line"
            if host_script_of(command) is not None:
                # host/lib/engine-bound.sh names the host when a call gets no reply; the bound is the host's.
                assert host_line(command) == f"DSLAB_HOST={host}", command.name
        membership = next(c.inputs for c in commands if c.name == "lab-swarm-server2-membership")
        assert "10.0.18.1" in str(membership["connection"]), "the manager forgets the worker's node"
        assert script_body(membership["stdin"]) == script_text("host/swarm-node.sh")
        assert shlex.split(membership["create"]) == [
            "bash",
            "-s",
            "--",
            "prune",
            "10.0.18.2",
            "lab-swarm-server2-join-node",
        ]
        assert shlex.split(membership["delete"]) == ["bash", "-s", "--", "remove", "lab-swarm-server2-join-node"]

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_reach_check_runs_in_the_managers_container_to_every_worker(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        reach = mocks.resources["lab-mesh-reach"]
        connection = reach.inputs["connection"]
        assert connection.get("value", connection)["host"] == "10.0.18.1", "from the manager"
        assert script_args(reach) == ["llm", "60", "server2"], "by name: the mesh's ssh config knows the address"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_components_use_one_type_token_prefix_and_children_have_parents(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        components = {r.type for r in mocks.resources.values() if r.type.startswith("dslab:")}
        assert components == {
            "dslab:index:Lab",
            "dslab:index:HostClaims",
            "dslab:index:HostTimeout",
            "dslab:index:Swarm",
            "dslab:index:OverlayNetwork",
            "dslab:index:TrainingImage",
            "dslab:index:NodeContainer",
            "dslab:index:ResultsStore",
            "dslab:index:SshMesh",
            "dslab:index:DeepSpeedLaunch",
        }

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_children_sit_under_their_component_in_the_resource_tree() -> Any:
    pulumi.runtime.set_mocks(RecordingMocks(), project="dslab", stack="dev", preview=False)
    lab = build_dev_lab()

    def check(urns: list[str]) -> None:
        swarm_init, container, launch = urns
        assert "::dslab:index:Swarm$" in swarm_init
        assert "::dslab:index:NodeContainer$" in container
        assert "::dslab:index:DeepSpeedLaunch$" in launch

    return pulumi.Output.all(
        lab.swarm.manager.urn, lab.containers["server2"].resource.urn, lab.launch.resource.urn
    ).apply(check)


@pulumi.runtime.test
def test_the_join_token_reaches_workers_only_as_a_secret_on_stdin(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        join = mocks.resources["lab-swarm-server2-join"]
        assert "SWMTKN" not in str(join.inputs["create"]), "the token is never an argument (ps shows those)"
        stdin = join.inputs["stdin"]
        secret_marker = "4dabf18193072939515e22adb298388d"  # the wire format of a Pulumi secret
        assert secret_marker in stdin, "the token travels as a secret"
        assert script_body(stdin["value"]) == script_text("host/swarm-worker.sh") + "SWMTKN-1-secret", (
            "after the script"
        )

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_join_token_output_is_secret(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    async def secrets() -> None:
        assert await lab.swarm.join_token.is_secret(), "the join token output is secret"

    return pulumi.Output.from_input(secrets())


@pulumi.runtime.test
def test_containers_wait_for_the_network_their_image_and_their_swarm_join(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        container = mocks.resources["server2-llm"].inputs
        assert container["networksAdvanced"] == [
            {"name": "test-net-id", "ipv4Address": "10.0.3.129", "aliases": ["server2"]}
        ], "on the overlay (by id: a new network replaces it) at its static address from the plan"
        assert "hosts" not in container, "nothing in it depends on the other hosts"
        config = placed_files(mocks.resources["lab-mesh-server2-trust"])["/root/.ssh/config"]
        assert "Host server1\n    HostName 10.0.3.128\n" in config, "the mesh says where the other node is"
        assert container["image"] == "sha256:built", "the image by id: a rebuilt image replaces it"
        assert container["shmSize"] == 1024 and container["restart"] == "always", "shm 1G in MiB"
        assert container["wait"] is True and container["healthcheck"]["tests"] == ["CMD", "/opt/dslab/ready.sh"]

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_each_container_names_its_hosts_swarm_node_so_a_host_that_joins_again_gets_a_new_one(
    mocks: RecordingMocks,
) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        for host, node in (("server1", "manager-node"), ("server2", "lab-swarm-server2-join-node")):
            labels = {label["label"]: label["value"] for label in mocks.resources[f"{host}-llm"].inputs["labels"]}
            assert labels["dslab.swarm-node"] == node, "labels replace a container: a new node, a new container"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_preflight_runs_in_the_runs_step_right_before_each_new_run(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(values: list[Any]) -> None:
        launch = mocks.resources["lab-training-run"]
        call = launch_call(launch)
        assert call.action == "run" and launch_call(launch, "update").action == "report", (
            "an update reports: it starts and stops nothing"
        )
        assert call.settings["preflight_s"] == "360", "its checks' own bounds: reach 60 s and run 300 s"
        allreduce = after_dashes(call.preflight)
        assert allreduce[:7] == [
            "deepspeed", "--hostfile", "/opt/dslab/run/hostfile", "--master_addr", "10.0.3.128",
            "--master_port", "29500",
        ], "the same launcher, hostfile and rendezvous as training"  # fmt: skip
        assert allreduce[7] == "/opt/dslab/allreduce_bench.py"
        assert call.argv[7] == "/opt/dslab/train_tiny.py"
        assert len(launch.inputs["create"]) < 300, "the run's spec is on stdin: errors show a short command line"
        assert not any("preflight" in name for name in mocks.resources), "no step of its own, which could stop a run"
        assert values[0] == 3.5, "its bus bandwidth is an output"

    return pulumi.Output.all(lab.outputs["preflight_busbw_gbps"], everything_registered(lab)).apply(check)


@pulumi.runtime.test
def test_only_what_the_run_is_and_its_containers_trigger_a_new_run(mocks: RecordingMocks) -> Any:
    from components.render.results import stack_tag
    from components.render.run_identity import identity_key

    lab = build_dev_lab()

    def check(_: Any) -> None:
        launch = mocks.resources["lab-training-run"]
        call = launch_call(launch)
        identity = json.loads(call.identity)
        assert call.settings["run_suffix"] == f"{stack_tag('organization/dslab/dev')}-{identity_key(identity)}"
        assert identity["image"] == lab.image_sources["image"].tag and "--master_port" not in identity["argv"]
        triggers = launch.inputs["triggers"]
        assert triggers[:2] == ["server1-llm-id", "server2-llm-id"], "a new container runs the create again"
        assert len(triggers) == 3 and triggers[2] == hashlib.sha256(call.identity.encode()).hexdigest(), (
            "and what the run is; nothing else (the command line, the spec, a timeout) makes a new run"
        )
        assert not any(str(trigger) in str(launch.inputs["create"]) for trigger in triggers)

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_without_preflight_training_follows_the_run_files_directly(mocks: RecordingMocks) -> Any:
    from components.config import load_lab_config, strip_namespace
    from components.lab import Lab

    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, _ = strip_namespace(document["config"])
    values.setdefault("training", {})["preflight"] = {"enabled": False}
    config = load_lab_config(values)
    lab = Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )
    assert "preflight_busbw_gbps" not in lab.outputs

    def check(_: Any) -> None:
        call = launch_call(mocks.resources["lab-training-run"])
        assert call.preflight == [] and call.settings["preflight_s"] == "0"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_overlay_mtu_is_the_smallest_host_interface_mtu_less_the_vxlan_overhead(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(values: list[Any]) -> None:
        (token, asked), *_rest = mocks.calls
        assert token == "command:local:run" and shlex.split(asked["command"])[5] == "yes", "every host's MTU is asked"
        network = mocks.resources["test-net"].inputs
        assert network["options"]["com.docker.network.driver.mtu"] == "1500", (
            "docker's option is the underlay's MTU: server1's 1500 (not 9000)"
        )
        assert network["driver"] == "overlay" and network["attachable"] is True
        assert network["ipamConfigs"] == [{"subnet": "10.0.3.0/24", "ipRange": "10.0.3.0/25", "gateway": "10.0.3.1"}]
        assert values[0] == 1450

    return pulumi.Output.all(lab.outputs["network_mtu"], everything_registered(lab)).apply(check)


def test_overlay_mtu_arithmetic() -> None:
    from components.steps.overlay_network import driver_mtu_option, overlay_mtu

    assert overlay_mtu([1500]) == 1450
    assert overlay_mtu([9000, 1400]) == 1350, "this machine's own eth0 is 1400"
    assert overlay_mtu([1500], tunnel_overhead=80) == 1370
    assert overlay_mtu([9000], tunnel_overhead=80, tunnel_limit=1400) == 1350, "the tunnel's limit"
    assert driver_mtu_option(1450) == 1500, "docker gives containers 50 less than its option"


def release_args(recorded: Any) -> list[str]:
    """results-release.sh's arguments, as the release's delete runs it."""
    words = shlex.split(str(recorded.inputs["delete"]))
    assert words[:2] == ["bash", str(REPO / "assets/operator/results-release.sh")], words
    return words[2:]


@pulumi.runtime.test
def test_the_results_directories_are_released_at_destroy_as_the_stack_file_says_then(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(_: Any) -> None:
        results = mocks.resources["lab-results-server2"]
        assert host_script_of(results) == "host/results-dir.sh"
        assert script_args(results) == ["make", "/var/lib/dslab/dslab/dev/runs"]
        assert script_args(results, "delete") == ["forget"], "the host's step removes nothing"
        release = mocks.resources["lab-results-server2-release"]
        assert release.type == LOCAL_COMMAND and "create" not in release.inputs
        args = release_args(release)
        assert args[:7] == [
            "Pulumi.dev.yaml", "keep", "server2", "root@10.0.18.2:22", "/var/lib/dslab/dslab/dev/runs", STACK_TAG,
            "/var/lib/dslab/dslab/dev/runs",
        ], "the stack file read at destroy; keep as applied by this up, when it cannot be read"  # fmt: skip
        assert "StrictHostKeyChecking=yes" in args, "over ssh with strict host keys"
        assert script_body(unsecret(release.inputs["stdin"])) == script_text("host/results-dir.sh")

    return everything_registered(lab).apply(check)


@pytest.mark.parametrize(
    ("results_dir", "emptied"),
    [
        (None, ["/var/lib/dslab/dslab/dev/runs", "/var/lib/dslab/dslab/dev", "/var/lib/dslab/dslab", "/var/lib/dslab"]),
        ("/srv/runs", []),
    ],
)
@pulumi.runtime.test
def test_remove_takes_the_runs_and_only_the_default_directories_left_empty(
    mocks: RecordingMocks, results_dir: str | None, emptied: list[str]
) -> Any:
    training: dict[str, Any] = {"results_on_destroy": "remove"}
    if results_dir:
        training["results_dir"] = results_dir
    lab = build_lab_with(training=training)

    def check(_: Any) -> None:
        where = results_dir or "/var/lib/dslab/dslab/dev/runs"
        args = release_args(mocks.resources["lab-results-server1-release"])
        assert args[:args.index("--")] == [
            "Pulumi.dev.yaml", "remove", "server1", "root@10.0.18.1:22", where, STACK_TAG, *emptied
        ], "this stack's runs only"  # fmt: skip

    return everything_registered(lab).apply(check)


def build_lab_with(network: dict[str, Any] | None = None, training: dict[str, Any] | None = None) -> Any:
    """The dev stack's lab with `network` and `training` merged into those sections."""
    from components.config import load_lab_config, strip_namespace
    from components.lab import Lab

    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, _ = strip_namespace(document["config"])
    values["network"] = {**values.get("network", {}), **(network or {})}
    values["training"] = {**values.get("training", {}), **(training or {})}
    config = load_lab_config(values)
    return Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )


@pulumi.runtime.test
def test_strongswan_puts_a_tunnel_on_every_host_under_a_plain_overlay_with_room_for_esp(mocks: RecordingMocks) -> Any:
    lab = build_lab_with({"encrypted": True, "ipsec": "strongswan"})

    def check(values: list[Any]) -> None:
        psk = mocks.resources["lab-ipsec-psk"]
        assert psk.type == "command:local:Command", "the key is made on this machine, not on a host"
        assert psk.inputs["stdin"] == (REPO / "assets" / "operator" / "new-secret.sh").read_text()
        assert psk.inputs["logging"] == "none", "and printed nowhere"
        assert mocks.resources["lab-ipsec-image-server1-build"].type == DOCKER_REMOTE_IMAGE
        assert mocks.resources["lab-ipsec-image-server2-ship"].type == LOCAL_COMMAND
        for host, address, peer in (("server1", "10.0.18.1", "10.0.18.2"), ("server2", "10.0.18.2", "10.0.18.1")):
            container = mocks.resources[f"lab-ipsec-{host}"]
            assert container.type == DOCKER_CONTAINER
            inputs = container.inputs
            assert inputs["name"] == "llm-ipsec" and inputs["networkMode"] == "host"
            # Tunnel MTU: the interfaces' smallest (1500) less ESP in UDP (80), at most libipsec's 1400.
            assert inputs["command"] == ["up", address, "1400", "4789", peer]
            assert inputs["capabilities"] == {"adds": ["CAP_NET_ADMIN"]}
            assert inputs["devices"] == [
                {"hostPath": "/dev/net/tun", "containerPath": "/dev/net/tun", "permissions": "rwm"}
            ]
            secret_marker = "4dabf18193072939515e22adb298388d"  # the wire format of a Pulumi secret
            assert inputs["uploads"][secret_marker] == "1b47061264138c4ac30d75fd1eb44270", "the upload is a secret"
            assert inputs["uploads"]["value"] == [
                {"file": "/etc/swanctl/dslab.psk", "permissions": "0600", "content": "5" * 64}
            ], "the pre-shared key, as a 0600 file"
            tunnels = mocks.resources[f"lab-ipsec-{host}-tunnels"]
            assert host_script_of(tunnels) == "host/ipsec-tunnels.sh"
            assert script_args(tunnels) == ["wait", f"lab-ipsec-{host}-id", address, "90", peer]
            tag = mocks.resources["lab-ipsec-image-server1-build"].inputs["name"]
            assert tag.startswith("dslab/train-ipsec:")
            assert script_args(tunnels, "delete") == ["down", tag, "4789"], "the routing rules go on destroy"
        options = mocks.resources["test-net"].inputs["options"]
        assert "encrypted" not in options, "docker's own IPsec stays off"
        assert options["com.docker.network.driver.mtu"] == "1400", "the overlay fits inside the tunnel"
        assert values[0] == 1350

    return pulumi.Output.all(lab.outputs["network_mtu"], everything_registered(lab)).apply(check)


@pulumi.runtime.test
def test_docker_ipsec_has_no_tunnels_and_encrypts_the_overlay_itself(mocks: RecordingMocks) -> Any:
    lab = build_lab_with({"encrypted": True})

    def check(values: list[Any]) -> None:
        assert not [name for name in mocks.resources if name.startswith("lab-ipsec-")]
        assert mocks.resources["test-net"].inputs["options"]["encrypted"] == ""
        assert {name for name in mocks.resources if name.endswith("-ipsec")} == {
            "lab-network-server1-ipsec",
            "lab-network-server2-ipsec",
        }, "every host's kernel is checked for ESP"
        assert values[0] == 1450

    return pulumi.Output.all(lab.outputs["network_mtu"], everything_registered(lab)).apply(check)


def build_host_mode_lab() -> Any:
    return build_lab_with({"mode": "host"})


@pulumi.runtime.test
def test_host_mode_has_no_swarm_or_overlay_and_reaches_containers_at_the_hosts_addresses(
    mocks: RecordingMocks,
) -> Any:
    lab = build_host_mode_lab()
    assert lab.hostfile == "10.0.18.1 slots=1\n10.0.18.2 slots=1\n", "the hostfile names the hosts' addresses"
    assert "network_name" not in lab.outputs and lab.outputs["network_mode"] == "host"

    def check(_: Any) -> None:
        scripts = {host_script_of(r) for r in mocks.resources.values() if r.type == REMOTE_COMMAND}
        assert not scripts & {"host/swarm-manager.sh", "host/swarm-worker.sh", "host/swarm-node.sh"}, "no swarm"
        assert not [name for name in mocks.resources if "-swarm-" in name]
        assert not [r for r in mocks.resources.values() if r.type == DOCKER_NETWORK], "no overlay"
        container = mocks.resources["server2-llm"].inputs
        assert container["networkMode"] == "host" and "networksAdvanced" not in container
        assert "hosts" not in container
        config = placed_files(mocks.resources["lab-mesh-server2-trust"])["/root/.ssh/config"]
        assert "Host server1\n    HostName 10.0.18.1\n" in config, "the other node by name, at its host's address"
        assert "DSLAB_SSH_PORT=2222" in container["envs"] and "DSLAB_OVERLAY_SUBNET=10.0.18.2/32" in container["envs"]
        training = launch_call(mocks.resources["lab-training-run"]).argv
        assert training[:9] == [
            "deepspeed", "--hostfile", "/opt/dslab/run/hostfile", "--master_addr", "10.0.18.1",
            "--master_port", "29500", "--ssh_port", "2222",
        ]  # fmt: skip

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_training_log_is_one_pasted_command_away(mocks: RecordingMocks) -> Any:
    lab = build_dev_lab()

    def check(command: str) -> None:
        assert command == (
            "ssh -i .simhosts/operator_ed25519 -o UserKnownHostsFile=.simhosts/known_hosts -o StrictHostKeyChecking=yes "
            "-p 22 root@10.0.18.1 docker exec llm tail -n 100 -F /opt/dslab/run/train.log"
        ), "the manager host, the stack's key and known_hosts, the training container's log"

    return lab.outputs["training_log_command"].apply(check)


@pulumi.runtime.test
def test_the_shell_command_opens_a_terminal_in_the_manager_container(mocks: RecordingMocks) -> None:
    lab = build_dev_lab()
    assert lab.shell_command == (
        "ssh -i .simhosts/operator_ed25519 -o UserKnownHostsFile=.simhosts/known_hosts -o StrictHostKeyChecking=yes "
        "-p 22 -t root@10.0.18.1 docker exec -it llm bash"
    )


def build_lab_with_hosts(hosts: list[dict[str, Any]]) -> Any:
    """The dev stack's lab with `hosts` as its host list (and the batch that fits them)."""
    from components.config import load_lab_config, strip_namespace
    from components.lab import Lab

    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, _ = strip_namespace(document["config"])
    values["hosts"] = hosts
    values["training"]["deepspeed"]["train_batch_size"] = 4 * len(hosts)
    config = load_lab_config(values)
    return Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )


@pulumi.runtime.test
def test_a_host_inserted_at_the_front_of_a_reordered_list_moves_no_container(mocks: RecordingMocks) -> Any:
    mocks.answers = (
        "server1 mtu 1500\nserver1 held server1 10.0.3.128\nserver1 in-use 10.0.3.129\n"
        "server2 mtu 1500\nserver2 held server2 10.0.3.129\nserver3 mtu 1500\n"
    )
    lab = build_lab_with_hosts(
        [
            {"name": "server3", "address": "10.0.18.3", "role": "worker"},
            {"name": "server2", "address": "10.0.18.2", "role": "worker"},
            {"name": "server1", "address": "10.0.18.1", "role": "manager"},
        ]
    )

    def check(_: Any) -> None:
        (token, probe), *_rest = mocks.calls
        assert token == "command:local:run", "the hosts are asked first"
        command = shlex.split(probe["command"])
        assert command[1].endswith("assets/operator/ask-hosts.sh") and "organization/dslab/dev" in command
        assert {"server3=root@10.0.18.3:22", "server1=root@10.0.18.1:22"} <= set(command), "every host is asked"
        assert "StrictHostKeyChecking=yes" in command, "with strict host keys"
        planned = {
            host: mocks.resources[f"{host}-llm"].inputs["networksAdvanced"][0]["ipv4Address"]
            for host in ("server1", "server2", "server3")
        }
        assert planned == {"server1": "10.0.3.128", "server2": "10.0.3.129", "server3": "10.0.3.130"}
        launch = launch_call(mocks.resources["lab-training-run"]).argv
        assert launch[launch.index("--master_addr") + 1] == "10.0.3.128", "the manager is where it was"

    assert lab.hostfile == "server1 slots=1\nserver3 slots=1\nserver2 slots=1\n", "ranks follow the list, manager first"
    return everything_registered(lab).apply(check)


def test_a_host_that_cannot_be_asked_for_its_address_fails_up_naming_it(mocks: RecordingMocks) -> None:
    mocks.answers = "server1 mtu 1500\nserver1 held server1 10.0.3.128\nserver2 silent 30\n"
    with pytest.raises(
        pulumi.RunError, match=r"^server2: server2 \(10.0.18.2:22\) does not answer over SSH \(no reply in 30 s\)\n"
    ):
        build_dev_lab()
    assert not mocks.resources, "before anything is registered"


def test_a_host_another_stack_holds_is_refused_before_anything_is_registered(mocks: RecordingMocks) -> None:
    mocks.answers = (
        "server1 mtu 1500\nserver1 claimed-by organization/dslab/dev\n"
        "server2 mtu 1500\nserver2 claimed-by organization/dslab/other\nserver2 used-by organization/dslab/other\n"
    )
    with pytest.raises(
        pulumi.RunError, match=r"^server2: this host is already used by stack 'organization/dslab/other' "
    ):
        build_dev_lab()
    assert not mocks.resources, "nothing of this stack touches it"


@pulumi.runtime.test
def test_a_step_the_probe_found_changed_runs_again_in_place_with_the_next_generation(mocks: RecordingMocks) -> Any:
    mocks.answers = (
        "server1 mtu 1500\nserver1 swarm-node m1 manager\nserver1 swarm-manager m1 10.0.18.1:2377\n"
        "server1 host-step swarm 2\nserver1 step reach 4 the manager container gets no ssh answer from: server2\n"
        "server1 host-step run-report 7\nserver1 run 20261206T093000.123Z-0a1b2c3d-0123456789ab succeeded\n"
        "server1 run-reported 20261206T093000.123Z-0a1b2c3d-0123456789ab running\n"
        "server2 mtu 1500\nserver2 step trust 3 changed or removed: /root/.ssh/authorized_keys\nserver2 step run-files 1\n"
    )
    lab = build_dev_lab()

    def check(_: Any) -> None:
        generations = {r.name: step_generation(r) for r in mocks.resources.values() if r.type == REMOTE_COMMAND}
        assert generations["lab-mesh-server2-trust"] == 3, "the changed files are placed again"
        assert generations["lab-mesh-reach"] == 4, "the silent node is checked again"
        assert generations["lab-swarm-server1-init"] == 2 and generations["lab-training-server2-files"] == 1, "as left"
        assert generations["lab-mesh-server1-trust"] == generations["lab-mesh-server2-keys"] == 0, "nothing found: 0"
        assert generations["lab-training-run"] == 8, "a run found ended since it was last reported is reported again"
        trust = mocks.resources["lab-mesh-server2-trust"].inputs
        assert trust["triggers"] == ["server2-llm-id"], "the generation is no trigger: the step runs in place"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_a_reinstalled_worker_runs_every_step_done_on_it_again_and_keeps_the_others_as_they_are(
    mocks: RecordingMocks,
) -> Any:
    # server2 answers with nothing: no swarm, no image, no results directory, no generations.
    mocks.answers = (
        "server1 mtu 1500\nserver1 swarm-node m1 manager\nserver1 swarm-manager m1 10.0.18.1:2377\n"
        "server1 swarm-member m1 10.0.18.1\nserver1 swarm-member w2 10.0.18.2\nserver1 results writable\n"
        "server1 host-step swarm 3\nserver1 host-step results 2\n"
        "server2 mtu 1500\nserver2 results absent\n"
    )
    lab = build_dev_lab()

    def check(_: Any) -> None:
        generations = {r.name: step_generation(r) for r in mocks.resources.values() if r.type == REMOTE_COMMAND}
        assert generations["lab-swarm-server1-init"] == 3 and generations["lab-results-server1"] == 2, "as left"
        fresh = {generations["lab-swarm-server2-join"], generations["lab-results-server2"]}
        ship = step_generation(mocks.resources["lab-image-server2-ship"])
        assert len(fresh | {ship}) == 1 and ship is not None and ship > 10**12, "one generation no run has used"
        join = str(mocks.resources["lab-swarm-server2-join"].inputs["create"])
        assert join.endswith("join 10.0.18.1:2377 10.0.18.2 m1"), "it joins the manager's node, m1"

    return everything_registered(lab).apply(check)


def swarm_node_label(mocks: RecordingMocks, host: str) -> str:
    labels = {label["label"]: label["value"] for label in mocks.resources[f"{host}-llm"].inputs["labels"]}
    return str(labels["dslab.swarm-node"])


@pulumi.runtime.test
def test_a_host_already_in_the_swarm_labels_its_container_with_the_node_the_probe_found(mocks: RecordingMocks) -> Any:
    # Known before anything runs, so the preview of an unchanged swarm changes no container.
    mocks.answers = (
        "server1 mtu 1500\nserver1 swarm-node m1 manager\nserver1 swarm-member m1 10.0.18.1\nserver1 swarm-member w2 10.0.18.2\n"
        "server2 mtu 1500\nserver2 swarm-node w2 worker\nserver2 swarm-manager m1 10.0.18.1:2377\nserver2 host-step swarm 0\n"
    )
    lab = build_dev_lab()

    def check(_: Any) -> None:
        assert swarm_node_label(mocks, "server1") == "m1" and swarm_node_label(mocks, "server2") == "w2"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_a_worker_the_probe_found_outside_its_swarm_takes_the_node_its_join_makes(mocks: RecordingMocks) -> Any:
    mocks.answers = (
        "server1 mtu 1500\nserver1 swarm-node m1 manager\n"
        "server2 mtu 1500\nserver2 swarm-node w9 worker\nserver2 swarm-manager m9 10.0.99.1:2377\n"
    )
    lab = build_dev_lab()

    def check(_: Any) -> None:
        assert swarm_node_label(mocks, "server2") == "lab-swarm-server2-join-node", "in another swarm: the join's node"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_with_relay_the_manager_builds_and_one_command_passes_the_image_on_through_every_other_host(
    mocks: RecordingMocks,
) -> Any:
    from components.config import load_lab_config, strip_namespace
    from components.hosts.engines import operator_ssh_opts
    from components.lab import Lab

    document = yaml.safe_load((REPO / "Pulumi.dev.yaml").read_text(encoding="utf-8"))
    values, _ = strip_namespace(document["config"])
    values["image"]["distribution"] = "relay"
    config = load_lab_config(values)
    lab = Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )

    def check(_: Any) -> None:
        relay = mocks.resources["lab-image-relay"]
        assert relay.type == LOCAL_COMMAND
        words = shlex.split(relay.inputs["create"])
        ship = mocks.resources["lab-image-server2-ship"]
        shipped_generation = shlex.split(ship.inputs["create"])[1].removeprefix("DSLAB_GEN=")
        assert words[:3] == ["env", f"DSLAB_GEN=server2:{shipped_generation}", "bash"], "run again with the copy"
        assert words[3].endswith("assets/operator/image-relay.sh")
        tag = mocks.resources["lab-image-server1-build"].inputs["name"]
        assert words[4:7] == [tag, "sha256:built", config.operator.known_hosts_path]
        manager, worker = config.hosts
        assert words[7:] == [
            "--", "root@10.0.18.1:22", *operator_ssh_opts(config.operator, manager),
            "--", "root@10.0.18.2:22", *operator_ssh_opts(config.operator, worker),
        ]  # fmt: skip
        assert relay.inputs["stdin"] == script_text("host/image-relay-hop.sh")
        assert relay.inputs["triggers"] == [tag], "a new tag relays anew"
        assert "lab-image-server2-build" not in mocks.resources, "built once, on the manager"
        assert host_script_of(ship) == "host/image-mark.sh", "and marked"

    return everything_registered(lab).apply(check)


@pulumi.runtime.test
def test_the_hosts_timeout_is_an_input_of_one_step_per_host_only(mocks: RecordingMocks) -> Any:
    """A new operator.host_timeout changes nothing on the hosts but the bound they keep: one
    update per host, no provider, no other step (their scripts read the bound on the host)."""
    from components.lab import Lab

    config = load_stack_file(REPO / "Pulumi.dev.yaml")
    config = config.model_copy(update={"operator": config.operator.model_copy(update={"host_timeout": 4321})})
    lab = Lab(
        "lab", config, project_dir=Path(REPO), owner="organization/dslab/dev", credentials=unit_credentials(config)
    )

    def check(_: Any) -> None:
        holding = sorted(name for name, r in mocks.resources.items() if "4321" in json.dumps(r.inputs, default=str))
        assert holding == ["lab-host-timeout-server1", "lab-host-timeout-server2"]
        assert script_args(mocks.resources["lab-host-timeout-server2"]) == ["set", "4321"]
        steps = [r for r in mocks.resources.values() if r.type == REMOTE_COMMAND and "host-timeout" not in r.name]
        assert steps and all("DSLAB_ENGINE_TIMEOUT" not in unsecret(r.inputs["stdin"]).split("\n", 1)[0] for r in steps)

    return everything_registered(lab).apply(check)
