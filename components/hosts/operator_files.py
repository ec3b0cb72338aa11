"""The operator's files a stack names (key, known_hosts, CA bundle, wheelhouse) must exist,
and known_hosts must hold every host's key, before `pulumi up` touches any host; `validate`
can run before they do (e.g. before `make hosts-up`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from components.config import LabConfig, LabConfigError, format_path
from components.hosts.known_hosts import host_key, host_pattern
from components.paths import project_path


def missing_local_files(config: LabConfig, project_dir: Path) -> list[str]:
    """One message per named file that is missing or unusable, naming its key."""

    def resolve(path: str) -> Path:
        return project_path(path, project_dir)

    problems: list[str] = []
    files = {
        ("operator", "private_key_path"): config.operator.private_key_path,
        ("operator", "known_hosts_path"): config.operator.known_hosts_path,
        ("image", "ca_bundle_path"): config.image.ca_bundle_path,
    }
    for loc, path in files.items():
        if path is not None and not resolve(path).is_file():
            problems.append(f"{format_path(loc)}: {path!r} is not a file; create it or fix the path")
    wheelhouse = config.image.wheelhouse_path
    if wheelhouse is not None and not resolve(wheelhouse).is_dir():
        problems.append(f"{format_path(('image', 'wheelhouse_path'))}: {wheelhouse!r} is not a directory")
    known_hosts = resolve(config.operator.known_hosts_path)
    if known_hosts.is_file():
        for host in config.hosts:
            if host_key(known_hosts, host.address, host.ssh_port) is None:
                problems.append(
                    f"{format_path(('operator', 'known_hosts_path'))}: {config.operator.known_hosts_path!r} holds no "
                    f"key for {host.name} ({host_pattern(host.address, host.ssh_port)}); add the host's key after "
                    f"checking its fingerprint, e.g. ssh-keyscan -p {host.ssh_port} {host.address}"
                )
        for jump_loc, jump in config.jump_hosts:
            if host_key(known_hosts, jump.address, jump.port) is None:
                problems.append(
                    f"{format_path(jump_loc)}: {config.operator.known_hosts_path!r} holds no key for "
                    f"the jump host ({host_pattern(jump.address, jump.port)}); add its key after checking its "
                    f"fingerprint, e.g. ssh-keyscan -p {jump.port} {jump.address}"
                )
    key = config.operator.private_key_path
    if key is not None and resolve(key).is_file() and stat.S_IMODE(os.stat(resolve(key)).st_mode) & 0o077:
        problems.append(
            f"{format_path(('operator', 'private_key_path'))}: {key!r} is readable by others; "
            f"ssh refuses such keys: chmod 600 {key}"
        )
    return problems


def require_local_files(config: LabConfig, project_dir: Path) -> None:
    """Raises LabConfigError listing every missing file."""
    problems = missing_local_files(config, project_dir)
    if problems:
        raise LabConfigError(problems)
