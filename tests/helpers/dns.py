"""A DNS server for tests: answers ``A`` queries for the names it is given, over UDP, in a thread.

Enough of RFC 1035 for a C library's resolver: one question per query, an ``A`` record for a
known name, no answer (NOERROR) for its other types (the ``AAAA`` asked alongside), NXDOMAIN
for an unknown name. Queries it cannot parse are dropped.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator, Mapping

TYPE_A = 1
CLASS_IN = 1


def _question(query: bytes) -> tuple[str, int, int, int] | None:
    """The queried name, its type and class, and where the question ends; None if malformed."""
    labels, offset = [], 12
    while offset < len(query):
        length = query[offset]
        offset += 1
        if length == 0:
            break
        if length > 63 or offset + length > len(query):
            return None
        labels.append(query[offset : offset + length].decode("ascii", "replace").lower())
        offset += length
    if offset + 4 > len(query):
        return None
    qtype, qclass = struct.unpack("!HH", query[offset : offset + 4])
    return ".".join(labels), qtype, qclass, offset + 4


def answer(query: bytes, names: Mapping[str, str]) -> bytes | None:
    """The response to ``query`` (a DNS message), or None to drop it."""
    if len(query) < 12:
        return None
    question = _question(query)
    if question is None:
        return None
    name, qtype, qclass, end = question
    known = name in names
    records = b""
    if known and qtype == TYPE_A and qclass == CLASS_IN:
        address = socket.inet_aton(names[name])
        records = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, 60, len(address)) + address
    flags = 0x8180 | (0 if known else 3)  # a response, recursion desired and available; NXDOMAIN
    header = struct.pack("!HHHHHH", struct.unpack("!H", query[:2])[0], flags, 1, 1 if records else 0, 0, 0)
    return header + query[12:end] + records


@contextlib.contextmanager
def dns_server(address: str, names: Mapping[str, str]) -> Iterator[list[str]]:
    """Answer for ``names`` (name -> IPv4 address) on ``address``, port 53; yield the names asked."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind((address, 53))
    sock.settimeout(0.2)
    asked: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                query, peer = sock.recvfrom(512)
            except TimeoutError:
                continue
            except OSError:
                return
            question = _question(query) if len(query) >= 12 else None
            if question is not None:
                asked.append(question[0])
            response = answer(query, {name.lower(): ip for name, ip in names.items()})
            if response is not None:
                sock.sendto(response, peer)

    thread = threading.Thread(target=serve, name="test-dns", daemon=True)
    thread.start()
    try:
        yield asked
    finally:
        stop.set()
        thread.join(2)
        sock.close()
