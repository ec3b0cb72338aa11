"""A recording mock engine for components (no hosts touched): every resource registered,
with its inputs; a Command's ``stdout`` is what its script would print."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import pulumi

from components.hosts.host_script import script_text
from components.paths import ASSETS_DIR

DOCKER_CONTAINER = "docker:index/container:Container"
DOCKER_NETWORK = "docker:index/network:Network"
DOCKER_PROVIDER = "pulumi:providers:docker"
DOCKER_REMOTE_IMAGE = "docker:index/remoteImage:RemoteImage"
DOCKER_VOLUME = "docker:index/volume:Volume"
REMOTE_COMMAND = "command:remote:Command"
LOCAL_COMMAND = "command:local:Command"


@dataclass
class Recorded:
    name: str
    type: str
    inputs: dict[str, Any]


@dataclass
class RecordingMocks(pulumi.runtime.Mocks):
    """Records every resource; a Command's `stdout` is what its script would print, an image's
    `imageId` one built, a container's `networkDatas` the static addresses it asked for."""

    resources: dict[str, Recorded] = field(default_factory=dict)
    answers: str | None = None
    """What the hosts answer components.hosts.probe (`command:local:run`); None: as a new
    stack's hosts would, server1's interface MTU 1500 and every other's 9000, no container."""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        self.resources[args.name] = Recorded(name=args.name, type=args.typ, inputs=dict(args.inputs))
        outputs = dict(args.inputs)
        if args.typ == DOCKER_REMOTE_IMAGE:
            outputs["imageId"] = "sha256:built"
        if args.typ in (REMOTE_COMMAND, LOCAL_COMMAND):
            outputs["stdout"] = fake_stdout(args.inputs, args.name)
        if args.typ == DOCKER_CONTAINER:
            outputs["networkDatas"] = [
                {"networkName": network["name"], "ipAddress": network.get("ipv4Address", "")}
                for network in args.inputs.get("networksAdvanced") or []
            ]
        return f"{args.name}-id", outputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        self.calls.append((args.token, dict(args.args)))
        if args.token == "command:local:run":
            stdout = self.answers if self.answers is not None else new_hosts_answers(args.args["command"])
            return {"command": args.args["command"], "stdout": stdout, "stderr": ""}
        return {}


def fake_results(name: str) -> dict[str, dict[str, Any]]:
    """Host script -> the JSON result it prints for the resource NAME."""
    return {
        "host/swarm-manager.sh": {"join_token": "SWMTKN-1-secret", "node_id": "manager-node"},
        "host/swarm-worker.sh": {"node_id": f"{name}-node"},
        "host/mesh-keys.sh": {
            "user_key": f"ssh-ed25519 AAAA{name}",
            "host_key": f"ssh-ed25519 BBBB{name}",
            "socket_ifname": "eth0",
        },
        "host/deepspeed-launch.sh": {
            "status": "succeeded",
            "log": "/opt/dslab/run/train.log",
            "run": "20261206T093000.123Z-0a1b2c3d-0123456789ab",
            "preflight": {"nodes": 2, "busbw_gbps": 3.5, "allreduce": {"backend": "gloo"}},
        },
    }


def fake_stdout(inputs: dict[str, Any], name: str) -> str:
    """What a Command prints: a host script of `assets/` fed to `bash -s` (recognised by its text)."""
    stdin = script_body(unsecret(inputs.get("stdin")))
    if stdin == (ASSETS_DIR / "operator" / "new-secret.sh").read_text(encoding="utf-8"):
        return "5" * 64
    for script, result in fake_results(name).items():
        if stdin.startswith(script_text(script)):
            return json.dumps(result)
    return ""


def script_body(stdin: str) -> str:
    """A Command's stdin without the line naming its host (components.hosts.host_script)."""
    first, _, rest = stdin.partition("\n")
    return rest if first.startswith("DSLAB_HOST=") else stdin


def host_line(recorded: Recorded) -> str:
    """The line naming a host script's host and its engine's bound, or ""."""
    first = unsecret(recorded.inputs.get("stdin")).partition("\n")[0]
    return first if first.startswith("DSLAB_HOST=") else ""


def unsecret(value: Any) -> str:
    """A string input as the mocks see it: a secret comes as its wire format, a dict."""
    if isinstance(value, dict):
        value = value.get("value")
    return str(value or "")


def new_hosts_answers(command: str) -> str:
    """assets/operator/ask-hosts.sh's answer from hosts with no container yet: each one's MTU."""
    hosts = [arg.split("=", 1)[0] for arg in shlex.split(command) if "=" in arg and "@" in arg]
    return "".join(f"{host} mtu {1500 if host == 'server1' else 9000}\n" for host in hosts)


def host_script_of(recorded: Recorded) -> str | None:
    """The assets script a step runs: the host script a Command sends on stdin."""
    stdin = script_body(unsecret(recorded.inputs.get("stdin")))
    for path in sorted((ASSETS_DIR / "host").glob("*.sh")):
        script = f"host/{path.name}"
        if stdin.startswith(script_text(script)):
            return script
    return None


def script_args(recorded: Recorded, field_name: str = "create") -> list[str]:
    """The arguments a step's script gets (after `bash -s --`, or `--` for an operator script)."""
    words = shlex.split(str(recorded.inputs[field_name]))
    return words[words.index("--") + 1 :]


@dataclass(frozen=True)
class LaunchCall:
    """deepspeed-launch.sh's call, in its parts (assets/host/deepspeed-launch.sh)."""

    action: str
    settings: dict[str, str]
    """container, workdir, run_dir, mode, stall_timeout, results, record, run_suffix, resume, preflight_s."""
    identity: str
    preflight: list[str]
    """preflight.sh's arguments (none without a preflight)."""
    argv: list[str]
    """The deepspeed command."""


LAUNCH_SETTINGS = (
    "container", "workdir", "run_dir", "mode", "stall_timeout", "results", "record", "run_suffix", "resume",
    "preflight_s",
)  # fmt: skip


def launch_call(recorded: Recorded, field_name: str = "create") -> LaunchCall:
    """The training step's call: its command line's settings, and the spec after the script on stdin."""
    words = script_args(recorded, field_name)
    lines = script_body(unsecret(recorded.inputs["stdin"])).split("launch \"$@\"; exit\n", 1)[1].splitlines()
    count = int(lines[1])
    preflight, rest = lines[2 : 2 + count], lines[2 + count :]
    return LaunchCall(
        words[0], dict(zip(LAUNCH_SETTINGS, words[1:], strict=True)), lines[0], preflight, rest[1 : 1 + int(rest[0])]
    )


def step_generation(recorded: Recorded) -> int | None:
    """The DSLAB_GEN a kept step's Command runs with (components.hosts.host_script), if any."""
    for word in shlex.split(str(recorded.inputs["create"])):
        if word.startswith("DSLAB_GEN="):
            return int(word.split("=", 1)[1])
    return None


def placed_files(recorded: Recorded) -> dict[str, str]:
    """Path -> content of the files a container-place-files.sh step places (components.render.file_bundle)."""
    stdin = script_body(str(recorded.inputs["stdin"]))
    data = stdin[len(script_text("host/container-place-files.sh")) :].encode()
    files: dict[str, str] = {}
    while data:
        header, _, data = data.partition(b"\n")
        tag, _mode, size, path = header.decode().split(" ", 3)
        assert tag == "dslab-file", header
        files[path] = data[: int(size)].decode()
        data = data[int(size) :]
    return files
