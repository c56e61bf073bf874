"""UDP ports on 127.0.0.1 for the live tests: one that is free, and whether a listener has bound it.

A sender started before its listener has bound the port loses what it sends first: the tests wait
for the bind itself, not for a fixed time after the listener starts.
"""

from __future__ import annotations

import socket
from pathlib import Path


def free_udp_port() -> int:
    """Return a UDP port on 127.0.0.1 that nothing is bound to now."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def udp_port_bound(port: int) -> bool:
    """Whether a UDP socket on this machine is bound to ``port`` (Linux's /proc/net/udp, read only)."""
    rows = Path("/proc/net/udp").read_text().splitlines()[1:]  # each row's local address: "0100007F:PORT", hex
    return any(int(row.split()[1].rsplit(":", 1)[1], 16) == port for row in rows)
