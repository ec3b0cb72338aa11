"""The first word on a host that pulumi-docker cannot reach, said by us: the docker CLI's ssh,
which each host's `docker.Provider` opens for every call, connects through this script
(`ProxyCommand` with `ProxyUseFdpass`: it opens the TCP connection, hands it to ssh and exits)
and checks the host key through assets/operator/host-key-check.sh (`KnownHostsCommand`). When
the host does not answer, refuses the connection or offers another key, one line naming the
host, the cause and the fix comes first in ssh's stderr, which pulumi-docker quotes in every
error of that host (its refresh's included), where ssh would say only its own last word.

It runs on every connection, as a script (`python -I -S`, no `-m`) that imports only `_socket`
on its way to a connection: `socket`, `typing`, pathlib or runpy would
more than double its start-up.

Usage (in the project directory, where Pulumi runs providers):
    python -I -S components/hosts/ssh_gate.py connect NAME ADDRESS PORT TIMEOUT_S
    python -I -S components/hosts/ssh_gate.py key-changed NAME ADDRESS PORT KNOWN_HOSTS_PATH
"""

from __future__ import annotations

import os
import sys

import _socket

CANNOT_CONNECT = 255
"""ssh's own status for a connection that failed."""


def connection_cause(error: OSError, timeout_s: float) -> str:
    """The cause in words a user recognises."""
    if isinstance(error, TimeoutError):
        return f"no reply in {timeout_s:g} s"
    if isinstance(error, ConnectionRefusedError):
        return "refused"  # components.hosts.unreachable.REFUSED, not imported on this path
    return (error.strerror or str(error)).lower()


def connect(name: str, address: str, port: int, timeout_s: float) -> int:
    """Opens the TCP connection and passes it to ssh over stdout, its end of a socketpair."""
    connection = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    connection.settimeout(timeout_s)
    try:
        connection.connect((address, port))
    except OSError as error:
        say(engine_connection_failed_line(name, address, port, connection_cause(error, timeout_s)))
        return CANNOT_CONNECT
    to_ssh = _socket.socket(fileno=sys.stdout.fileno())
    descriptor = connection.fileno().to_bytes(4, sys.byteorder)
    to_ssh.sendmsg([b"\0"], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, descriptor)])
    return 0


def engine_connection_failed_line(name: str, address: str, port: int, cause: str) -> str:
    from components.hosts.unreachable import engine_connection_failed

    return engine_connection_failed(name, address, port, cause)


def host_key_changed_line(name: str, address: str, port: int, known_hosts_path: str) -> str:
    from components.hosts.unreachable import host_key_changed

    return host_key_changed(name, address, port, known_hosts_path)


def say(line: str) -> None:
    print(line, file=sys.stderr)


def main(argv: list[str]) -> int:
    # Run as a script: the project directory, which holds `components`, is not on the path.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    match argv:
        case ["connect", name, address, port, timeout_s]:
            return connect(name, address, int(port), float(timeout_s))
        case ["key-changed", name, address, port, known_hosts_path]:
            say(host_key_changed_line(name, address, int(port), known_hosts_path))
            return 0
    say("usage:\n  " + "\n  ".join((__doc__ or "").strip().splitlines()[-2:]))
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
