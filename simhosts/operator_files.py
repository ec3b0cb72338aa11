"""The operator's side of a simulated lab, in ``.simhosts/`` (lab N: ``.simhosts-N/``): key pair, known_hosts, ssh config, stack config.

Rendering is pure (tested directly); writing is separate.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from simhosts import paths
from simhosts.plan import HostSpec, SimLab
from simhosts.proc import run

KEY_NAME = "operator_ed25519"
KNOWN_HOSTS = "known_hosts"
SSH_CONFIG = "ssh_config"
STACK_CONFIG = "stack-config.yaml"
SSH_WRAPPER = "bin/ssh"


def render_known_hosts(keys_by_address: Mapping[str, Sequence[str]]) -> str:
    """known_hosts lines keyed by IP: the Pulumi program connects by address."""
    return "".join(f"{address} {key}\n" for address, keys in keys_by_address.items() for key in keys)


def render_ssh_config(hosts: Sequence[HostSpec], state: Path, bastion: HostSpec | None = None) -> str:
    """An ssh config that reaches each host by name or address, with strict host key checking;
    through BASTION when the lab has one."""
    blocks = []
    for host in [*hosts, *([bastion] if bastion is not None else [])]:
        through = f"    ProxyJump {bastion.name}\n" if bastion is not None and host is not bastion else ""
        blocks.append(
            f"Host {host.name} {host.address}\n"
            f"    HostName {host.address}\n"
            f"{through}"
            "    User root\n"
            "    Port 22\n"
            f"    IdentityFile {state / KEY_NAME}\n"
            "    IdentitiesOnly yes\n"
            f"    UserKnownHostsFile {state / KNOWN_HOSTS}\n"
            "    StrictHostKeyChecking yes\n"
            "    CheckHostIP no\n"
            "    BatchMode yes\n"
            "    ConnectTimeout 10\n"
            "    LogLevel ERROR\n"
        )
    return "\n".join(blocks)


def render_stack_config(hosts: Sequence[HostSpec], state_folder: str = ".simhosts", bastion: HostSpec | None = None) -> str:
    """The Pulumi stack config of the simulator (namespace ``dslab``), to paste under ``config:``;
    with the lab's jump host when it has one."""
    operator: dict[str, object] = {
        # Relative to the repo root, which is the Pulumi project directory.
        "private_key_path": f"{state_folder}/{KEY_NAME}",
        "known_hosts_path": f"{state_folder}/{KNOWN_HOSTS}",
    }
    if bastion is not None:
        operator["jump_host"] = {"address": bastion.address, "port": 22, "user": "root"}
    document = {
        "dslab:hosts": [
            {
                "name": host.name,
                "address": host.address,
                "role": host.role,
                "ssh_user": "root",
                "ssh_port": 22,
                "gpus": "none",
            }
            for host in hosts
        ],
        "dslab:operator": operator,
    }
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False)


def ensure_state_dir(lab: SimLab) -> Path:
    """Create the lab's operator folder (``.simhosts/``, 0700) and return it."""
    state = paths.state_dir(lab)
    state.mkdir(mode=0o700, exist_ok=True)
    state.chmod(0o700)
    return state


def ensure_operator_key(state: Path) -> str:
    """Generate the operator's ed25519 key once (kept on later runs); return the public key."""
    key = state / KEY_NAME
    if not key.exists():
        run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "dslab-operator", "-f", str(key)])
    key.chmod(0o600)
    key.with_suffix(".pub").chmod(0o600)
    return key.with_suffix(".pub").read_text().strip()


def write_operator_files(
    state: Path, hosts: Sequence[HostSpec], keys_by_address: Mapping[str, Sequence[str]], bastion: HostSpec | None = None
) -> None:
    """Write known_hosts, ssh_config, the docker CLI's ssh wrapper and stack-config.yaml."""
    _write(state / KNOWN_HOSTS, render_known_hosts(keys_by_address))
    _write(state / SSH_CONFIG, render_ssh_config(hosts, state, bastion))
    _write(state / STACK_CONFIG, render_stack_config(hosts, state.name, bastion))
    wrapper = state / SSH_WRAPPER
    wrapper.parent.mkdir(mode=0o700, exist_ok=True)
    shutil.copyfile(paths.ASSETS / "operator-ssh.sh", wrapper)
    wrapper.chmod(0o700)


def remove_state_dir(lab: SimLab) -> None:
    """Remove the lab's operator folder and everything in it."""
    shutil.rmtree(paths.state_dir(lab), ignore_errors=True)


def _write(path: Path, text: str) -> None:
    """Write atomically with mode 0600: a reader never sees half a known_hosts."""
    partial = path.with_name(path.name + ".partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as stream:
        stream.write(text)
    partial.replace(path)
