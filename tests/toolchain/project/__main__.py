"""The official providers on the simulated hosts: per host a Docker engine reached over
`ssh://` with strict host keys, a network and a container on it, and a remote command whose
connection checks the host key. The smallest program that proves the toolchain."""

from pathlib import Path

import pulumi
import pulumi_command as command
import pulumi_docker as docker

config = pulumi.Config()
prefix = config.require("prefix")
hosts: list[dict[str, str]] = config.require_object("hosts")
private_key_path = Path(config.require("private_key_path")).resolve()
known_hosts_path = Path(config.require("known_hosts_path")).resolve()
private_key = pulumi.Output.secret(private_key_path.read_text())


def ed25519_host_key(address: str) -> str:
    """The host's ed25519 key as the operator's known_hosts holds it ("ssh-ed25519 AAAA...")."""
    for line in known_hosts_path.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 3 and address in fields[0].split(",") and fields[1] == "ssh-ed25519":
            return f"{fields[1]} {fields[2]}"
    raise ValueError(f"{known_hosts_path} has no ssh-ed25519 key for {address}")


for host in hosts:
    name, address = host["name"], host["address"]
    engine = docker.Provider(
        f"{name}-docker",
        host=f"ssh://root@{address}:22",
        ssh_opts=["-i", str(private_key_path), "-o", "IdentitiesOnly=yes",
                  "-o", f"UserKnownHostsFile={known_hosts_path}", "-o", "StrictHostKeyChecking=yes",
                  "-o", "BatchMode=yes"],  # fmt: skip
    )
    on_host = pulumi.ResourceOptions(provider=engine)
    network = docker.Network(f"{name}-net", name=f"{prefix}-net", opts=on_host)
    container = docker.Container(
        f"{name}-box",
        name=f"{prefix}-box",
        image="local/debian:trixie",
        command=["sleep", "infinity"],
        networks_advanced=[docker.ContainerNetworksAdvancedArgs(name=network.name)],
        shm_size=256,
        ulimits=[docker.ContainerUlimitArgs(name="stack", soft=67108864, hard=67108864)],
        opts=on_host,
    )
    hello = command.remote.Command(
        f"{name}-hello",
        connection=command.remote.ConnectionArgs(
            host=address, user="root", private_key=private_key, host_key=ed25519_host_key(address),
            dial_error_limit=2,
        ),
        create="hostname",
    )
    pulumi.export(f"{name}_hostname", hello.stdout)
    pulumi.export(f"{name}_container_id", container.id)
    pulumi.export(f"{name}_network_id", network.id)
