"""What crosses the wire between lab hosts: a packet capture on a lab host's link, on this
machine (every lab host is a container whose eth0 is one end of a veth pair here)."""

from __future__ import annotations

import socket
import struct
import subprocess
import threading
from collections import Counter
from dataclasses import dataclass, field
from types import TracebackType

ETH_P_ALL = 0x0003
ETH_P_IP = 0x0800
IPPROTO_UDP = 17


def host_link(container: str) -> str:
    """This machine's end of the veth pair that is the lab host container's eth0."""
    peer_index = subprocess.run(
        ["docker", "exec", container, "cat", "/sys/class/net/eth0/iflink"],
        capture_output=True, text=True, check=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    return socket.if_indextoname(int(peer_index))


@dataclass
class Capture:
    """Frames seen on one link while it ran: UDP ports counted, and how many carried `marker`."""

    link: str
    marker: bytes
    udp_ports: Counter[int] = field(default_factory=Counter)
    """Port -> UDP frames with that port at either end."""
    frames: int = 0
    with_marker: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Capture:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        sock.bind((self.link, 0))
        sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._read, args=(sock,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _read(self, sock: socket.socket) -> None:
        with sock:
            while not self._stop.is_set():
                try:
                    frame = sock.recv(65535)
                except TimeoutError:
                    continue
                self._count(frame)

    def _count(self, frame: bytes) -> None:
        self.frames += 1
        if self.marker in frame:
            self.with_marker += 1
        if len(frame) < 14 + 20 or struct.unpack("!H", frame[12:14])[0] != ETH_P_IP:
            return
        header_length = (frame[14] & 0x0F) * 4
        if frame[14 + 9] != IPPROTO_UDP or len(frame) < 14 + header_length + 4:
            return
        source, destination = struct.unpack("!HH", frame[14 + header_length : 14 + header_length + 4])
        self.udp_ports.update({source, destination})
