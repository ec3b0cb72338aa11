"""Bringing the simulator up, down, and reporting on it."""

from __future__ import annotations

import fcntl
import ipaddress
import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from simhosts import faults, hosts, images, links, network, operator_files, paths
from simhosts.links import LinkRates
from simhosts.plan import HOST_LABEL, MAX_HOSTS, HostSpec, SimLab
from simhosts.proc import Log, docker, ok, run


def up(lab: SimLab, count: int, log: Log, bastion: bool = False, rates: LinkRates | None = None) -> list[HostSpec]:
    """Bring up ``lab`` with ``count`` hosts, behind a bastion (sshd only) when asked, with this
    machine's direct routes to the hosts dropped, each link at RATES (default: unlimited);
    harmless when it is already up. Returns the hosts."""
    wanted = lab.hosts(count)
    jump = lab.bastion if bastion else None
    base_hash, base_tarball = machine_parts(log)
    network.ensure_network(lab)
    state = operator_files.ensure_state_dir(lab)
    public_key = operator_files.ensure_operator_key(state)

    _remove_extra_hosts(lab, [*wanted, *([jump] if jump is not None else [])], log)
    if jump is None:
        network.direct_routes_back(lab, lab.bastion.address)
    nameservers = machine_nameservers()
    for host in wanted:
        hosts.ensure_host(lab, host, nameservers)
    if jump is not None:
        hosts.ensure_host(lab, jump, nameservers)
        hosts.make_bastion(jump)
        hosts.authorize(jump, public_key)

    def prepare(host: HostSpec) -> None:
        # `up` also repairs: a host left with a stopped or frozen engine or a cut network works again.
        hosts.heal(host)
        hosts.wait_ready(host)
        hosts.authorize(host, public_key)
        if hosts.ensure_base_image_inside(host, base_hash, base_tarball):
            log(f"{host.name}: loaded {images.BASE_IMAGE}")

    with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
        list(pool.map(prepare, wanted))

    keys = {host.address: hosts.host_keys(host) for host in [*wanted, *([jump] if jump is not None else [])]}
    operator_files.write_operator_files(state, wanted, keys, jump)
    if jump is not None:
        network.only_through_bastion(lab, jump.address)
        log(f"{jump.name}={jump.address}: the only way in; direct routes to the hosts dropped")
    rates = rates or LinkRates()
    links.apply_link_rates(lab, wanted, rates)
    if rates != LinkRates():
        log(f"links limited: {rates.describe()}")
    for host in wanted:
        if not ssh_ok(lab, host):
            raise RuntimeError(f"ssh to {host.name} ({host.address}) failed with the simulator's key and known_hosts")
    where = state.relative_to(paths.REPO_ROOT) / operator_files.STACK_CONFIG
    log(f"simhosts up (lab {lab.id}): {', '.join(f'{h.name}={h.address}' for h in wanted)}; stack config in {where}")
    return wanted


def machine_parts(log: Log) -> tuple[str, Path]:
    """The machine's engine and the simulator's images, started or built when missing; returns
    the base image's input hash and its tarball, for loading into host engines."""
    with machine_lock(log):
        # Labs coming up side by side share the machine's engine and the simulator's images:
        # one of them starts or builds those, the others wait and find them there.
        log("machine engine")
        run(["bash", str(paths.ENGINE_SCRIPT)], timeout=600)
        base_hash = images.ensure_base_image(log)
        images.ensure_host_image(base_hash, log)
        return base_hash, images.base_image_tarball(base_hash)


def reinstall_host(lab: SimLab, name: str, log: Log) -> None:
    """Host ``name``'s machine reinstalled (a fault without an inverse), as a new OS on an empty
    disk under the same name, address and SSH host keys: its engine's containers, images,
    volumes and swarm membership and everything the program left on it are gone; its engine
    comes back with the base image the lab's provisioning loads (what a reinstalled server
    pulls from a mirror)."""
    host = lab.host(name)
    docker("exec", host.container, "dslab-engine", "stop")
    hosts.run_fault_script(host, "wipe-disk.sh")
    docker("exec", host.container, "dslab-engine", "start")
    base_hash, base_tarball = machine_parts(log)
    hosts.ensure_base_image_inside(host, base_hash, base_tarball)


CLEAN_SCRIPT = paths.ASSETS / "clean-host.sh"


def clean(lab: SimLab, log: Log) -> list[str]:
    """What stacks left on ``lab``'s servers removed (containers, volumes, networks, swarm
    membership, IPsec state, results directories, step marks, the program's image names), their
    images and build cache kept: each server as if no stack had ever run there. A server left
    stopped, frozen, cut off or without its engine by an interrupted test is brought back first.
    Returns the servers cleaned (those that exist)."""
    servers = [host for host in lab.hosts(MAX_HOSTS) if hosts.state(host) is not None]

    def clean_one(host: HostSpec) -> None:
        if hosts.state(host) != "running":
            docker("start", host.container)
        hosts.heal(host)
        hosts.wait_ready(host)
        hosts.run_script(host, CLEAN_SCRIPT)
        log(f"{host.name}: cleaned (images and build cache kept)")

    with ThreadPoolExecutor(max_workers=max(1, len(servers))) as pool:
        list(pool.map(clean_one, servers))
    return [host.name for host in servers]


@contextmanager
def machine_lock(log: Log) -> Iterator[None]:
    """Held while the machine-wide parts (engine, images, their cache) are checked or made."""
    lock = paths.cache_dir() / ".machine.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log("another lab is setting up the machine's engine and images; waiting for it")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def down(lab: SimLab, log: Log) -> None:
    """Remove everything ``lab`` made: host containers, their cgroups, volumes, bridge, operator files."""
    if ok(["docker", "info"], timeout=30):
        containers = hosts.lab_containers(lab)
        with ThreadPoolExecutor(max_workers=max(1, len(containers))) as pool:
            list(pool.map(hosts.remove_container, containers))
        for volume in hosts.lab_volumes(lab):
            docker("volume", "rm", "--force", volume)
        network.remove_network(lab)
        network.direct_routes_back(lab, lab.bastion.address)
    else:
        log("machine engine not running: nothing to remove there")
    operator_files.remove_state_dir(lab)
    log(f"simhosts down (lab {lab.id})")


@dataclass(frozen=True)
class HostStatus:
    """What ``simhosts status`` reports about one host."""

    name: str
    address: str
    container: str
    engine: bool
    sshd: bool
    network: str
    swarm: str
    link: str = "-"
    """The rate its link is limited to, and the operator's (``100mbit/50mbit``), or ``unlimited``."""


def status(lab: SimLab) -> list[HostStatus]:
    """Report every host container of ``lab``, whatever state it is in."""
    if not ok(["docker", "info"], timeout=30):
        return []
    report = []
    for container in hosts.lab_containers(lab):
        name = docker("container", "inspect", "--format", f'{{{{ index .Config.Labels "{HOST_LABEL}" }}}}', container)
        host = lab.host(name)
        running = hosts.state(host) == "running"
        engine = running and host.role != "bastion" and faults.engine_running(lab, name)
        report.append(
            HostStatus(
                name=name,
                address=host.address,
                container=hosts.state(host) or "absent",
                engine=engine,
                sshd=running and ssh_ok(lab, host),
                network=("cut" if faults.network_cut(lab, name) else "connected") if running else "-",
                swarm=_swarm_state(host) if engine else "-",
                link=_link_words(links.link_rates(lab, host)) if running and host.role != "bastion" else "-",
            )
        )
    return report


def _link_words(rates: LinkRates) -> str:
    if rates == LinkRates():
        return "unlimited"
    return f"{rates.host or 'unlimited'}/{rates.operator or 'unlimited'}"


def ssh_ok(lab: SimLab, host: HostSpec) -> bool:
    """Return whether the operator reaches ``host`` over ssh with strict host key checking."""
    config = paths.state_dir(lab) / operator_files.SSH_CONFIG
    if not config.exists():
        return False
    return ok(["ssh", "-F", str(config), "-o", "ConnectTimeout=5", host.name, "true"], timeout=20)


def machine_nameservers(resolv_conf: Path = Path("/etc/resolv.conf")) -> list[str]:
    """The machine's resolvers that a host can reach through NAT (loopback ones cannot be)."""
    servers = []
    for line in resolv_conf.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and fields[0] == "nameserver":
            try:
                address = ipaddress.ip_address(fields[1])
            except ValueError:
                continue
            if not address.is_loopback and address.version == 4:
                servers.append(str(address))
    return servers


def _swarm_state(host: HostSpec) -> str:
    out = docker(
        "exec", host.container, "docker", "info", "--format",
        "{{json .Swarm.LocalNodeState}} {{json .Swarm.ControlAvailable}}", check=False,
    )
    try:
        node_state, manager = (json.loads(part) for part in out.split())
    except ValueError:
        return "?"
    if node_state == "active":
        return "manager" if manager else "worker"
    return str(node_state)


def _remove_extra_hosts(lab: SimLab, wanted: list[HostSpec], log: Log) -> None:
    """A smaller ``--hosts`` than last time removes the hosts beyond it (and the bastion, when
    not wanted)."""
    keep = {host.container for host in wanted}
    for container in hosts.lab_containers(lab):
        if container not in keep:
            log(f"remove {container} (beyond --hosts {len(wanted)})")
            hosts.remove_container(container)
            docker("volume", "rm", "--force", f"{container}-docker", check=False)
