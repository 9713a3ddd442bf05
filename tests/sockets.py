"""Which TCP sockets a process tree listens on (from /proc), to check that nothing listens off loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path


def listening_sockets(root: int) -> dict[str, str]:
    """``address:port`` -> owning command, for every LISTEN TCP socket held by ``root`` or its descendants."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            ppid = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(stat.parent.name))
    owners: dict[str, str] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace")
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    owners[target[8:-1]] = command
        except OSError:  # the process ended while we looked
            continue
    found = {}
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in owners:  # 0A: TCP_LISTEN
                found[_decode_address(fields[1], family)] = owners[fields[9]]
    return found


def _decode_address(field: str, family: int) -> str:
    """/proc/net/tcp's ``HEX_IP:HEX_PORT`` (the IP as 32-bit words in host byte order) as ``ip:port``."""
    hex_ip, hex_port = field.split(":")
    raw = bytes.fromhex(hex_ip)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return f"{socket.inet_ntop(family, words)}:{int(hex_port, 16)}"


def is_loopback(address: str) -> bool:
    ip = ipaddress.ip_address(address.rsplit(":", 1)[0])
    mapped = getattr(ip, "ipv4_mapped", None)
    return (mapped or ip).is_loopback
