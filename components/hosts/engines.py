"""Each host's Docker engine as a `docker.Provider`: reached over `ssh://` with the operator's
key and known_hosts, strict host key checking always on. Created in one place (the Lab) and
handed to components through `ResourceOptions(provider=...)`."""

from __future__ import annotations

import hashlib
import os
import shlex
import tempfile
from pathlib import Path

import pulumi
import pulumi_docker as docker

from components.config import Host, OperatorConfig
from components.config.jump_host import JumpHost, JumpRoute


def ssh_destination(host: Host) -> str:
    """`user@address:port`, as our operator scripts take a host."""
    return f"{host.ssh_user}@{host.address}:{host.ssh_port}"


def docker_host_url(host: Host) -> str:
    """The engine's address for the docker CLI: `ssh://user@address:port`."""
    return f"ssh://{ssh_destination(host)}"


def docker_ssh_opts(private_key_path: str, known_hosts_path: str, route: JumpRoute | None = None) -> list[str]:
    """ssh options of the docker CLI's connection: our key only, the operator's known_hosts,
    strict host keys, never a prompt; keep-alives bound how long a cut network can hang us.
    Through ROUTE's jump host when given (jump_proxy_command)."""
    options = [
        "-i", private_key_path,
        "-o", "IdentitiesOnly=yes",
        "-o", f"UserKnownHostsFile={known_hosts_path}",
        "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes",
        "-o", "ConnectTimeout=10",
        "-o", "ServerAliveInterval=5",
        "-o", "ServerAliveCountMax=4",
    ]  # fmt: skip
    if route is None:
        return options
    return [*options, "-o", jump_option(options, route)]


JUMP_SCRIPT = "assets/operator/jump-host.sh"
"""Relative to the project directory, where Pulumi runs providers and commands (ENGINE_WATCH)."""


def jump_option(options: list[str], route: JumpRoute) -> str:
    """The `-o` value that sends an ssh with OPTIONS through ROUTE's jump host."""
    return f"ProxyCommand={jump_proxy_command(options, route)}"


def jump_proxy_command(options: list[str], route: JumpRoute) -> str:
    """How ssh reaches a host through ROUTE: assets/operator/jump-host.sh, an ssh to the jump host
    with the same OPTIONS (the key, strict host keys against the same known_hosts: `-J` would
    apply neither to the jump) that forwards the connection (`-W %h:%p`) and, when it fails,
    names the hop (and the setting that names the jump host). ssh runs it with a shell; `%` is its token."""
    jump = route.jump
    through = shlex.join([f"{jump.user}@{jump.address}", str(jump.port), route.setting, *options]).replace("%", "%%")
    return f"bash {JUMP_SCRIPT} %h %p {through}"


def pasted_proxy_command(options: list[str], jump: JumpHost) -> str:
    """jump_proxy_command for a line the user pastes anywhere: plain ssh, no script of ours."""
    line = shlex.join(["ssh", *options, "-p", str(jump.port), f"{jump.user}@{jump.address}"])
    return line.replace("%", "%%") + " -W %h:%p"


def operator_ssh_opts(operator: OperatorConfig, host: Host) -> list[str]:
    """docker_ssh_opts for the stack's operator to reach HOST: its key, its known_hosts, the
    host's jump host."""
    return docker_ssh_opts(private_key_file(operator), operator.known_hosts_path, host.jump_route(operator.jump_host))


ENGINE_WATCH = "assets/operator/engine-watch.sh"
"""Relative to the project directory, where Pulumi runs providers: the provider's ssh options are
kept in the stack's state, so a moved checkout keeps working."""


def engine_watch_opts(host: Host, operator: OperatorConfig) -> list[str]:
    """ssh options that start assets/operator/engine-watch.sh beside every connection the docker
    CLI opens: an engine that gives no reply in `operator.host_timeout` seconds (as the host
    keeps it: components.steps.host_timeout) ends the connection with `<host>: the Docker engine
    does not answer`, instead of pulumi-docker's call waiting 20 minutes."""
    watch = shlex.join(
        [host.name, f"{host.ssh_user}@{host.address}", str(host.ssh_port), "--", *operator_ssh_opts(operator, host)]
    )
    # $PPID, for the shell ssh runs it with, is that ssh; ssh expands %-tokens in the line.
    local_command = f"bash {ENGINE_WATCH} $PPID {watch}".replace("%", "%%")
    return ["-o", "PermitLocalCommand=yes", "-o", f"LocalCommand={local_command}"]


SSH_GATE = "components/hosts/ssh_gate.py"
HOST_KEY_CHECK = "assets/operator/host-key-check.sh"
GATE_PYTHON = ".venv/bin/python"
"""The project's own interpreter (Pulumi.yaml's virtualenv); these paths are relative to the
project directory, as ENGINE_WATCH is."""
CONNECT_TIMEOUT_S = 10
"""ssh's ConnectTimeout (docker_ssh_opts), which a ProxyCommand's connection does not get."""


def first_word_opts(host: Host, operator: OperatorConfig) -> list[str]:
    """ssh options that make our line the first word on a host the provider cannot reach
    (components/hosts/ssh_gate.py): a host key other than known_hosts holds (KnownHostsCommand,
    any route) and, when no jump host is in between (jump-host.sh names the hops itself), a
    host that does not answer or refuses the connection (ProxyCommand handing ssh the socket)."""
    check = shlex.join(
        ["/bin/sh", HOST_KEY_CHECK, "%I", "%t", "%K", operator.known_hosts_path.replace("%", "%%"),
         host.name, host.address, str(host.ssh_port)]
    )  # fmt: skip
    options = ["-o", f"KnownHostsCommand={check}"]
    if host.jump_route(operator.jump_host) is not None:
        return options
    gate = shlex.join([GATE_PYTHON, "-I", "-S", SSH_GATE, "connect", host.name, "%h", "%p", str(CONNECT_TIMEOUT_S)])
    return [*options, "-o", "ProxyUseFdpass=yes", "-o", f"ProxyCommand={gate}"]


def private_key_file(operator: OperatorConfig) -> str:
    """The operator's key as a file for ssh: the configured path as written (relative to the
    project directory, where Pulumi runs providers, so moving the checkout changes nothing),
    or a key given as a secret written once to a 0600 file readable by this user only, whose
    name does not change while the key does not."""
    if operator.private_key_path is not None:
        return operator.private_key_path
    text = operator.secret_key_text()
    folder = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()) / f"dslab-keys-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / f"{hashlib.sha256(text.encode()).hexdigest()[:16]}.key"
    if not path.exists() or path.read_text() != text:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as key:
            key.write(text)
    return str(path)


def operator_ssh_line(operator: OperatorConfig, host: Host, command: str, *, tty: bool = False) -> str:
    """An ssh command line for the operator's shell that runs `command` on `host` with the
    stack's key and known_hosts (strict host keys, as the program does), through its jump host."""
    options = ["-i", operator.private_key_path or "<your key>", "-o", f"UserKnownHostsFile={operator.known_hosts_path}",
               "-o", "StrictHostKeyChecking=yes"]  # fmt: skip
    route = host.jump_route(operator.jump_host)
    through = (
        f"-o {shlex.quote('ProxyCommand=' + pasted_proxy_command(options, route.jump))} " if route is not None else ""
    )
    return (
        f"ssh {' '.join(options)} {through}-p {host.ssh_port} {'-t ' if tty else ''}"
        f"{host.ssh_user}@{host.address} {command}"
    )


def host_engine(host: Host, operator: OperatorConfig, parent: pulumi.Resource) -> docker.Provider:
    """`<host>-docker`: the provider every Docker resource of that host is created with."""
    return docker.Provider(
        f"{host.name}-docker",
        host=docker_host_url(host),
        ssh_opts=[
            *operator_ssh_opts(operator, host),
            *first_word_opts(host, operator),
            *engine_watch_opts(host, operator),
        ],
        opts=pulumi.ResourceOptions(parent=parent),
    )
