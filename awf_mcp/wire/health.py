"""``GET /healthz`` and ``GET /readyz``: what a load balancer or an orchestrator probes.

Contract
--------
:class:`HealthEndpoints` is the outermost ASGI layer of ``serve --transport http``: it answers
these two paths before any authentication, so a probe needs no token, and hands every other
request to the application unchanged.

* ``/healthz``: ``200 {"status": "alive"}`` while the process serves HTTP at all;
* ``/readyz``: ``200 {"status": "ready"}`` while ``ready()`` says so, else
  ``503 {"status": "not ready"}``. The server answers only once start-up has finished (plugins
  loaded, upstream servers started and their tools listed), and stops being ready the moment
  it begins to shut down (it takes no new connection then either), so a balancer sends it no
  new calls while it drains.

Only ``GET`` and ``HEAD`` (headers only); any other method gets ``405`` with ``Allow``. The
bodies are fixed and small: no version, no tool, plugin or server name, nothing from the
request. The paths match exactly (``/healthz/`` is the application's). Responses are not cached.
"""

from __future__ import annotations

from collections.abc import Callable

from awf_mcp.wire.asgi import ASGIApp, Receive, Scope, Send

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"

_ALIVE = b'{"status": "alive"}'
_READY = b'{"status": "ready"}'
_NOT_READY = b'{"status": "not ready"}'
_ONLY_GET = b'{"error": "only GET and HEAD"}'


class HealthEndpoints:
    """ASGI middleware answering ``/healthz`` and ``/readyz``; see the module docstring."""

    def __init__(self, app: ASGIApp, ready: Callable[[], bool]) -> None:
        self.app = app
        self.ready = ready

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path")
        if scope["type"] != "http" or path not in (HEALTH_PATH, READY_PATH):
            await self.app(scope, receive, send)
            return
        method = scope.get("method")
        headers = [(b"allow", b"GET, HEAD")]
        if method not in ("GET", "HEAD"):
            status, body = 405, _ONLY_GET
        elif path == HEALTH_PATH:
            status, body = 200, _ALIVE
        elif self.ready():
            status, body = 200, _READY
        else:
            status, body = 503, _NOT_READY
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"cache-control", b"no-store"),
                    *headers,
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": b"" if method == "HEAD" else body})
