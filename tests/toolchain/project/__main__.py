"""A local command, and a Docker network plus a container on this machine's engine,
through the same RemoteScript provider the product uses (connection None = this machine)."""

from pathlib import Path

import pulumi

from components.remote_script import RemoteScript, script_call

SCRIPTS = Path(__file__).resolve().parent / "scripts"
config = pulumi.Config()
prefix = config.require("prefix")

greeting = RemoteScript(
    "greeting",
    label="local command",
    connection=None,
    create=script_call(str(SCRIPTS / "greet.sh"), config.get("greeting") or "hello"),
)
network = RemoteScript(
    "network",
    label="docker network",
    connection=None,
    create=script_call(str(SCRIPTS / "network-create.sh"), f"{prefix}-net"),
    read=script_call(str(SCRIPTS / "network-read.sh"), f"{prefix}-net"),
    delete=script_call(str(SCRIPTS / "network-remove.sh"), f"{prefix}-net"),
)
container = RemoteScript(
    "container",
    label="docker container",
    connection=None,
    create=script_call(str(SCRIPTS / "container-run.sh"), f"{prefix}-box", f"{prefix}-net"),
    read=script_call(str(SCRIPTS / "container-read.sh"), f"{prefix}-box"),
    delete=script_call(str(SCRIPTS / "container-remove.sh"), f"{prefix}-box"),
    triggers=[network.result.apply(lambda result: result["id"])],
)
pulumi.export("greeting", greeting.result.apply(lambda result: result["text"]))
pulumi.export("network_id", network.result.apply(lambda result: result["id"]))
pulumi.export("container_id", container.result.apply(lambda result: result["id"]))
