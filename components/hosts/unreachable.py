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
