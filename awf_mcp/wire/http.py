"""Streamable HTTP: awf-mcp's server at ``http://host:port/mcp``.

An ``access`` (:class:`~awf_mcp.wire.httpauth.Access`, what ``serve`` passes) decides who may
call: static tokens, named ones, and the access tokens of an authorization server, whose
protected resource metadata it serves; each request then carries its caller.

Loopback by default, with the SDK's Host/Origin checks against DNS
rebinding; without an ``access`` every request is served (``--no-token``, which the caller
allows on loopback only). Connections are guarded
by :mod:`awf_mcp.wire.httpguard`: request deadlines, a cap below the open-file limit,
log records one line each. ``GET /healthz`` and ``GET /readyz`` are answered before the token
check (:mod:`awf_mcp.wire.health`). When ``stop`` is set, the listen streams
and the sessions' standalone GET streams end (:class:`StandaloneStreams`), so no
client holding one open holds up the exit.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any

import anyio

from awf_mcp.errors import UserError
from awf_mcp.wire.asgi import ASGIApp, Receive, Scope, Send
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES
from awf_mcp.wire.served import ServedServer

if TYPE_CHECKING:
    from awf_mcp.wire.httpauth import Access

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")


async def _send_json(send: Send, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    """Answer an HTTP request with ``status`` and the JSON ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                *headers,
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class StandaloneStreams:
    """ASGI middleware: the standalone GET streams (handshake-era SSE) it let through end on :meth:`close`.

    An open stream is a response in progress, which the HTTP server waits for before it
    stops; :meth:`close` cancels each one and completes its response, so a client holding one
    open cannot hold up shutdown, and a GET after it is answered ``503``. Only the streams
    open at the moment are kept (a set).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._open: set[anyio.CancelScope] = set()
        self._closed = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        if self._closed:
            await _send_json(send, 503, b'{"error": "the server is shutting down"}')
            return
        state = {"started": False, "complete": False}

        async def tracked(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                state["started"] = True
            elif message["type"] == "http.response.body" and not message.get("more_body", False):
                state["complete"] = True
            await send(message)

        with anyio.CancelScope() as stream:
            self._open.add(stream)
            try:
                await self.app(scope, receive, tracked)
            finally:
                self._open.discard(stream)
        if stream.cancelled_caught and state["started"] and not state["complete"]:
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "http.response.body", "body": b"", "more_body": False})

    def close(self) -> None:
        """End every standalone stream open now, and refuse new ones."""
        self._closed = True
        for stream in list(self._open):
            stream.cancel()


def _security_for(host: str) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    if host in LOOPBACK_HOSTS:
        return None  # the SDK's own loopback Host/Origin allow-list
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[f"http://{host}:*", "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket listening on ``host:port`` for :func:`serve_http`; :class:`UserError` saying why not."""
    from awf_mcp.wire.httpguard import ACCEPT_BATCH

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # Protocol IPPROTO_TCP, not create_server's 0: asyncio sets TCP_NODELAY only on connections
    # of a socket that says TCP, and without it each answer's body waits for the client's
    # delayed ACK of its headers (about 40 ms per request on a kept-alive connection).
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((host, port))
        listener.listen(ACCEPT_BATCH)
        return listener
    except OSError as exc:
        listener.close()
        reason = (exc.strerror or str(exc)).split(" (while attempting", 1)[0]  # the address follows
        raise UserError(f"cannot listen on {host} port {port}: {reason}") from None


async def serve_http(
    server: ServedServer,
    host: str,
    port: int,
    *,
    stop: anyio.Event,
    access: Access | None = None,
    on_listening: Callable[[str], None] | None = None,
    listener: socket.socket | None = None,
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/mcp`` until ``stop`` is set.

    Connections are guarded (:mod:`awf_mcp.wire.httpguard`): a request must arrive within
    its deadlines, the open connections are capped below the open-file limit, and
    uvicorn's and asyncio's log records come one line each. ``listener`` is the socket
    from :func:`listen` when the caller bound it first (to report a port in use before
    starting anything); by default it is bound here.
    """
    if listener is None:
        listener = listen(host, port)
    import uvicorn

    from awf_mcp.wire.httpguard import (
        ACCEPT_BATCH,
        ConnectionGuard,
        connection_limit,
        guarded_protocol,
        quiet_logs,
    )

    streams = StandaloneStreams(
        server.sdk_server.streamable_http_app(
            host=host, transport_security=_security_for(host), max_request_body_size=MAX_MESSAGE_BYTES
        )
    )
    app: ASGIApp = streams
    if access is not None:
        app = access.guard(app)
    from awf_mcp.wire.health import HealthEndpoints

    serving = anyio.Event()  # set once uvicorn has started, so /readyz says ready from then until stop
    app = HealthEndpoints(app, ready=lambda: serving.is_set() and not stop.is_set())  # outermost: no token
    config = uvicorn.Config(
        app,
        http=guarded_protocol(ConnectionGuard(connection_limit())),
        backlog=ACCEPT_BATCH,
        ws="none",  # no WebSocket: MCP has none, and an upgraded connection would leave the guard
        log_config=None,
        log_level=None,
        lifespan="on",
        access_log=False,
        server_header=False,  # no "server: uvicorn" on any answer, the health probes' included
    )
    http = uvicorn.Server(config)
    http.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # ours

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        serving.set()
        bound = http.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{shown}:{bound[1]}/mcp"
        if on_listening is not None:
            on_listening(url)

    async def shut_down_on_stop() -> None:
        await stop.wait()
        server.end_listen_streams()
        streams.close()
        http.should_exit = True

    with quiet_logs():
        async with anyio.create_task_group() as group:
            group.start_soon(announce)
            group.start_soon(shut_down_on_stop)
            try:
                await http.serve(sockets=[listener])
            finally:
                group.cancel_scope.cancel()
