"""``/healthz`` and ``/readyz``: answered before the application, fixed bodies, GET and HEAD only."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from awf_mcp.state.httptoken import NamedTokens
from awf_mcp.wire.health import HealthEndpoints
from awf_mcp.wire.httpauth import Access


class App:
    """The application behind: records that it was reached."""

    def __init__(self) -> None:
        self.reached: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.reached.append(scope["path"])
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def request(app: Any, method: str, path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    sent: list[MutableMapping[str, Any]] = []

    async def receive() -> MutableMapping[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": path, "headers": [], "query_string": b""}
    await app(scope, receive, send)
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


@pytest.mark.anyio
async def test_probes_need_no_token_and_everything_else_still_does() -> None:
    inner = App()
    ready = [False]
    app = HealthEndpoints(Access(NamedTokens("secret-token-0123456789")).guard(inner), ready=lambda: ready[0])
    status, headers, body = await request(app, "GET", "/healthz")
    assert (status, body) == (200, b'{"status": "alive"}')
    assert headers[b"cache-control"] == b"no-store" and headers[b"content-length"] == b"19"
    assert (await request(app, "GET", "/readyz"))[::2] == (503, b'{"status": "not ready"}')
    ready[0] = True
    assert (await request(app, "GET", "/readyz"))[::2] == (200, b'{"status": "ready"}')
    # HEAD: the headers only.
    status, headers, body = await request(app, "HEAD", "/readyz")
    assert (status, body, headers[b"content-length"]) == (200, b"", b"19")
    # Anything else on those paths is refused; other paths (near misses included) reach the guard.
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        status, headers, _ = await request(app, method, "/readyz")
        assert status == 405 and headers[b"allow"] == b"GET, HEAD"
    for path in ("/mcp", "/healthz/", "/readyz.json", "/HEALTHZ"):
        assert (await request(app, "GET", path))[0] == 401
    assert inner.reached == []
