"""Slow HTTP clients (slowloris) against ``awf-mcp serve --transport http``.

An unauthenticated client opens more connections than the server may hold files and
sends each a request whose headers never end. The server runs with an open-file limit of
:data:`OPEN_FILES` (set in the child before exec), so the attack needs :data:`SLOW`
connections rather than the 1,100 it took at the usual limit of 1,024. What must hold:
the token holder's SDK client still lists the tools; stderr stays a few lines, with no
traceback and no "Too many open files"; and every slow connection is closed once its
headers are late (its deadline counts from its accept).
"""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import pytest

from tests.e2e.test_http import TOKEN, list_tool_names, start_http, stop
from tests.helpers.harness import open_fds

pytestmark = pytest.mark.e2e

OPEN_FILES = 512
SLOW = 600
HEAD_SECONDS = 10  # awf_mcp.wire.httpguard.HEAD_SECONDS


def limit_open_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (OPEN_FILES, OPEN_FILES))


def open_slow_connections(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` connections, each sent the first line of a request and one header, never the end."""
    selector = selectors.DefaultSelector()
    connecting = []
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.connect_ex((host, port))
        selector.register(sock, selectors.EVENT_WRITE)
        connecting.append(sock)
    deadline = time.monotonic() + 60
    pending = len(connecting)
    while pending and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            selector.unregister(sock)
            pending -= 1
            with contextlib.suppress(OSError):
                sock.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
    selector.close()
    return connecting


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


@pytest.mark.anyio
async def test_the_token_holder_is_served_while_slow_connections_outnumber_the_open_files(
    root: Path,
) -> None:
    url, process = start_http("--token", TOKEN, "--root", str(root), preexec_fn=limit_open_files)
    slow: list[socket.socket] = []
    try:
        parts = urlsplit(url)
        assert parts.hostname and parts.port
        slow = open_slow_connections(parts.hostname, parts.port, SLOW)
        with anyio.fail_after(60):  # a hang guard, not a measure of speed
            names = await list_tool_names(url, {"Authorization": f"Bearer {TOKEN}"})
        assert {"Read", "Bash"} <= names
        assert open_fds(process.pid) < OPEN_FILES
        # A connection waits in the listen backlog while the server holds as many as it may; its
        # deadline counts from its accept, so the last ones accepted close up to a deadline later.
        time.sleep(HEAD_SECONDS)
        still_open = slow
        give_up = time.monotonic() + 2 * HEAD_SECONDS
        while still_open and time.monotonic() < give_up:
            still_open = [sock for sock in still_open if not closed_by_server(sock)]
            time.sleep(0.5)
        assert not still_open, f"{len(still_open)} of {SLOW} slow connections still open"
    finally:
        for sock in slow:
            sock.close()
        logged = stop(process)
    assert "Traceback" not in logged
    assert "Too many open files" not in logged and "out of system resource" not in logged
    assert "closed the one that waited longest for its request" in logged
    assert len(logged.splitlines()) < 10, logged[:3000]
