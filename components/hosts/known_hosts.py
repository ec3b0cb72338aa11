"""The operator's known_hosts file, read the way OpenSSH reads it: which key a host holds.

`command.remote.Command` checks one fixed host key (its connection's `host_key`) and reads no
known_hosts file itself; the key it gets is the one the operator's ssh trusts for that host.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

PREFERRED_KEY_TYPES = (
    "ssh-ed25519",
    "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521",
    "ssh-rsa",
)
"""The order a host key is picked in when known_hosts holds several for one host."""


def host_pattern(address: str, port: int) -> str:
    """How known_hosts names a host: `address`, or `[address]:port` off port 22."""
    return address if port == 22 else f"[{address}]:{port}"


def names_match(field: str, name: str) -> bool:
    """Whether a known_hosts host field (`a,b`, or hashed `|1|salt|hash`) names `name`."""
    if field.startswith("|1|"):
        try:
            _, _, salt, digest = field.split("|")
            expected = base64.b64decode(digest)
            actual = hmac.new(base64.b64decode(salt), name.encode(), hashlib.sha1).digest()
        except ValueError:
            return False
        return hmac.compare_digest(expected, actual)
    return name in field.split(",")


def host_keys(text: str, address: str, port: int) -> dict[str, str]:
    """Key type -> `type base64` for every key the file trusts for the host (markers such
    as @revoked and @cert-authority are not plain trust: skipped)."""
    name = host_pattern(address, port)
    keys: dict[str, str] = {}
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3 or fields[0].startswith(("#", "@")):
            continue
        if names_match(fields[0], name):
            keys.setdefault(fields[1], f"{fields[1]} {fields[2]}")
    return keys


def host_key(known_hosts: Path, address: str, port: int) -> str | None:
    """The key to check the host by (`ssh-ed25519 AAAA...`), or None when the file has none."""
    keys = host_keys(known_hosts.read_text(encoding="utf-8"), address, port)
    for key_type in PREFERRED_KEY_TYPES:
        if key_type in keys:
            return keys[key_type]
    return next(iter(keys.values()), None)
