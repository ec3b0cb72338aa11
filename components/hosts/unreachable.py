"""How the hosts' probe names a host that ssh cannot reach (one wording wherever it is said)."""

from __future__ import annotations


def cannot_reach(destination: str, known_hosts_path: str) -> str:
    """`cannot reach server2 (10.0.18.2:22) over SSH (is the host up and its key in ...?)`."""
    return f"cannot reach {destination} over SSH (is the host up and its key in {known_hosts_path}?)"
