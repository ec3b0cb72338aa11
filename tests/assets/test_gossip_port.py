"""assets/host/lib/gossip-port.sh, run here: it reads this network namespace's /proc/net/tcp*
while a real socket listens (or not) on swarm's gossip port."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from components.paths import ASSETS_DIR

GOSSIP_PORT_LIB = ASSETS_DIR / "host" / "lib" / "gossip-port.sh"


def gossip_port_held() -> bool:
    command = f". {GOSSIP_PORT_LIB}; gossip_port_held"
    return subprocess.run(["bash", "-c", command], check=False).returncode == 0


@contextmanager
def listening(family: socket.AddressFamily, address: str) -> Iterator[None]:
    with socket.socket(family, socket.SOCK_STREAM) as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind((address, 7946))
        except OSError as error:
            pytest.skip(f"TCP 7946 is taken on this machine: {error}")
        listener.listen()
        yield


def test_a_free_gossip_port_is_seen_free() -> None:
    assert not gossip_port_held(), "nothing listens on TCP 7946 here"


@pytest.mark.parametrize(("family", "address"), [(socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")])
def test_a_listener_on_the_gossip_port_is_seen_in_either_family(family: socket.AddressFamily, address: str) -> None:
    with listening(family, address):
        assert gossip_port_held(), f"a listener on {address} port 7946"
    assert not gossip_port_held(), "closed again"

