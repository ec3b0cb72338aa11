"""How the hosts' probe names a host that ssh cannot reach or refuses (one wording wherever it is said)."""

from __future__ import annotations


def cannot_reach(destination: str, known_hosts_path: str) -> str:
    """`cannot reach server2 (10.0.18.2:22) over SSH (is the host up and its key in ...?)`."""
    return f"cannot reach {destination} over SSH (is the host up and its key in {known_hosts_path}?)"


def host_key_changed(name: str, address: str, port: int, known_hosts_path: str) -> str:
    """A host whose SSH host key is not the one KNOWN_HOSTS_PATH holds: what it may mean, and the
    one command that accepts the new key once it is checked."""
    entry = address if port == 22 else f"[{address}]:{port}"
    return (
        f"the SSH host key of {name} ({address}:{port}) is not the one {known_hosts_path} holds "
        "(REMOTE HOST IDENTIFICATION HAS CHANGED): a reinstalled machine, or someone in between. "
        "Compare the key's fingerprint with the machine's own (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub "
        f"on its console), then accept it: ssh-keygen -R '{entry}' -f {known_hosts_path} && "
        f"ssh-keyscan -p {port} {address} >> {known_hosts_path}"
    )


REFUSED = "refused"
"""connection_cause's word for a port nothing listens on. Never "connection refused": the docker
client replaces any error holding those words with its own "Cannot connect to the Docker daemon"."""


def engine_connection_failed(name: str, address: str, port: int, cause: str) -> str:
    """A host whose sshd the providers' connection could not reach (components.hosts.ssh_gate):
    its name and address, the cause as the operating system gave it, and what to check."""
    if cause == REFUSED:
        return (
            f"{name} ({address}:{port}) refuses SSH connections: is sshd running on {name}, "
            f"and is {port} its port (ssh_port in the stack file)?"
        )
    if cause.startswith("no reply"):
        return f"{name} ({address}:{port}) does not answer SSH ({cause}): is {name} up, and is {address} its address?"
    return f"{name} ({address}:{port}) cannot be reached over SSH ({cause}): is {address} the address of {name}?"
