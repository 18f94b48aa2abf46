"""The proxy through which a contained process reaches the hosts its policy names.

Contract
--------
:func:`proxy_for` returns the :class:`HostProxy` of a list of host patterns, started on first
use on ``127.0.0.1`` (an ephemeral port), in a daemon thread with an event loop of its own, so it
serves while awf-mcp's own loop is busy. It speaks what ``HTTP_PROXY`` and ``HTTPS_PROXY`` users
send:

* ``CONNECT host:port`` (HTTPS and any TLS): an allowed host gets ``200`` and a byte tunnel;
* ``GET http://host/...`` (any method, an absolute URI): forwarded once to an allowed host with
  ``Connection: close`` and the ``Proxy-*`` headers removed;
* anything else, and every host that is not allowed: ``403`` with a sentence naming the host
  and the setting that allows it. A request head is bounded (:data:`MAX_HEAD_BYTES`), and so is
  the wait for it.

A connection may name the call it comes from: the proxy URL a contained process gets holds a
token (``http://call:TOKEN@127.0.0.1:PORT``, sent as ``Proxy-Authorization: Basic``), given by
:meth:`HostProxy.admit` with an *asker*. A host outside the patterns is then put to that asker
(run in the event loop that admitted it; :mod:`.asking` asks the user) before it is refused;
:meth:`HostProxy.dismiss` ends that when the call ends. Without a known token, nothing is asked.

A pattern is ``host``, ``*.domain`` (the domain's subdomains, not the domain), either with
``:port`` (else any port), or ``*``. Host names compare case-insensitively. Each refusal is
recorded (:meth:`HostProxy.refused_since`), so a failed command can say which host was refused.
The contained process cannot reach anything else: its sandbox lets TCP reach only this port.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import contextlib
import re
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

MAX_HEAD_BYTES = 16 * 1024
HEAD_SECONDS = 30.0
CONNECT_SECONDS = 15.0
_REFUSALS_KEPT = 64
ASK_SECONDS = 600.0
"""How long a connection waits for the user's answer about its host."""

Asker = Callable[[str, int], Coroutine[Any, Any, bool]]
"""Whether a call may reach ``host``, ``port`` (asking the user); see :meth:`HostProxy.admit`."""


_PATTERN = re.compile(r"(\[[^\]]+\]|[^:]+)(?::(\d{1,5}))?")


def host_allowed(patterns: Sequence[str], host: str, port: int) -> bool:
    """Whether ``host:port`` matches one of ``patterns`` (see the module docstring)."""
    host = host.lower().strip("[]").rstrip(".")
    for pattern in patterns:
        if pattern == "*":
            return True
        parsed = _PATTERN.fullmatch(pattern.lower())
        if parsed is None or (parsed[2] and int(parsed[2]) != port):
            continue
        name = parsed[1].strip("[]")
        if (name.startswith("*.") and host.endswith(name[1:])) or host == name:
            return True
    return False


def _token(head: bytes) -> str:
    """The token of a ``Proxy-Authorization: Basic`` header (its password), or ``""``."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"proxy-authorization":
            scheme, _, encoded = value.strip().partition(b" ")
            if scheme.lower() != b"basic":
                return ""
            try:
                decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                return ""
            return decoded.partition(":")[2]
    return ""


def _target(head: bytes) -> tuple[str, str, int, bytes] | None:
    """Method, host, port and the request head to send upstream (CONNECT: empty), or ``None``."""
    lines = head.split(b"\r\n")
    parts = lines[0].split(b" ")
    if len(parts) != 3:
        return None
    method, target = parts[0].decode("ascii", "replace"), parts[1].decode("ascii", "replace")
    if method == "CONNECT":
        host, _, port = target.rpartition(":")
        return (method, host, int(port), b"") if host and port.isdigit() else None
    if not target.startswith("http://"):
        return None
    rest = target[len("http://") :]
    authority, slash, path = rest.partition("/")
    host, _, port = (
        authority.rpartition(":") if ":" in authority.strip("[]").rpartition("]")[2] else (authority, "", "")
    )
    if not host or (port and not port.isdigit()):
        return None
    headers = [
        line
        for line in lines[1:]
        if line and not line.lower().startswith((b"proxy-", b"connection:", b"keep-alive:"))
    ]
    request = b"\r\n".join(
        [f"{method} {slash}{path} HTTP/1.1".encode(), *headers, b"Connection: close", b"", b""]
    )
    return method, host, int(port or 80), request


class HostProxy:
    """One proxy for one list of host patterns; see the module docstring."""

    def __init__(self, patterns: Sequence[str]) -> None:
        self.patterns = tuple(patterns)
        self._refused: deque[tuple[float, str]] = deque(maxlen=_REFUSALS_KEPT)
        self._askers: dict[str, tuple[Asker, asyncio.AbstractEventLoop]] = {}
        self._ready = threading.Event()
        self.port = 0
        self._thread = threading.Thread(target=self._run, name="awf-mcp sandbox proxy", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        if not self.port:
            raise OSError("the sandbox's proxy did not start")

    def refused_since(self, moment: float) -> list[str]:
        """The hosts refused since ``moment`` (``time.monotonic()``), each once."""
        return list(dict.fromkeys(host for when, host in list(self._refused) if when >= moment))

    def admit(self, asker: Asker) -> str:
        """A token for one call's connections, whose hosts outside the patterns go to ``asker``
        (run in the calling event loop) before being refused."""
        token = secrets.token_hex(16)
        self._askers[token] = (asker, asyncio.get_running_loop())
        return token

    def dismiss(self, token: str) -> None:
        """Stop asking for ``token``'s connections (its call ended)."""
        self._askers.pop(token, None)

    async def _allowed_by_asking(self, token: str, host: str, port: int) -> bool:
        entry = self._askers.get(token) if token else None
        if entry is None:
            return False
        asker, loop = entry
        answer: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(asker(host, port), loop)
        try:
            return bool(await asyncio.wait_for(asyncio.wrap_future(answer), ASK_SECONDS))
        except Exception:  # no answer in time, the call gone, the asker failing: refused
            answer.cancel()
            return False

    def _run(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0, limit=MAX_HEAD_BYTES)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await server.serve_forever()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ConnectionError):
            writer.close()
            return
        target = _target(head)
        if target is None:
            await self._answer(
                writer, 400, "awf-mcp's sandbox proxy takes CONNECT host:port or an http:// URL"
            )
            return
        method, host, port, request = target
        allowed = host_allowed(self.patterns, host, port)
        if not allowed and await self._allowed_by_asking(_token(head), host, port):
            allowed = True
        if not allowed:
            self._refused.append((time.monotonic(), f"{host}:{port}"))
            await self._answer(
                writer,
                403,
                f"awf-mcp's sandbox refused {host}:{port}: it is not in the network list of [sandbox] "
                f'(add "{host}" to it to allow it)',
            )
            return
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(
                asyncio.open_connection(host, port), CONNECT_SECONDS
            )
        except (OSError, TimeoutError) as exc:
            await self._answer(writer, 502, f"awf-mcp's sandbox proxy could not reach {host}:{port}: {exc}")
            return
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            upstream_writer.write(request)
        await asyncio.gather(_pipe(reader, upstream_writer), _pipe(upstream_reader, writer))

    @staticmethod
    async def _answer(writer: asyncio.StreamWriter, status: int, text: str) -> None:
        body = (text + "\n").encode()
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
        writer.write(
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n\r\n".encode()
            + body
        )
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(64 * 1024):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(ConnectionError, OSError):
            writer.close()


_proxies: dict[tuple[str, ...], HostProxy] = {}
_lock = threading.Lock()


def proxy_for(patterns: Sequence[str]) -> HostProxy:
    """The running proxy of ``patterns`` (started now if it is the first use)."""
    key = tuple(sorted(set(patterns)))
    with _lock:
        proxy = _proxies.get(key)
        if proxy is None:
            proxy = _proxies[key] = HostProxy(key)
        return proxy


def refused_since(moment: float) -> list[str]:
    """The hosts any proxy of this process refused since ``moment``."""
    with _lock:
        proxies = list(_proxies.values())
    return [host for proxy in proxies for host in proxy.refused_since(moment)]
