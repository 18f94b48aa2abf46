"""An upstream server over HTTP: the SDK's Streamable HTTP and HTTP+SSE clients, saying why a request failed.

Contract
--------
:func:`http_streams` is the transport :func:`awf_mcp.wire.client.connect` opens for a server
with a ``url``: the SDK's Streamable HTTP client, or its HTTP+SSE client for a ``type = "sse"``
server, with the spec's ``headers`` on every request and, for an ``auth = "oauth"`` server, the
SDK's OAuth provider over the stored tokens (:func:`awf_mcp.wire.oauth.serving_auth`).

The SDK ends the connection on a request that fails without saying why; awf-mcp's HTTP client
records the cause as the connection's reason (:func:`describe_http_failure`, also the
sign-in's, :mod:`awf_mcp.wire.oauthsignin`): ``connection refused``, ``name not resolved``,
``TLS: <what failed>``, ``no answer within N s``, and for an answer of status 400 or more to a
POST (or, on SSE, to the GET that opens the stream), ``HTTP <status> at <url>``; a server that
needs sign-in, ``server 'NAME' needs sign-in: run awf-mcp servers login NAME``. An answer to a
request beside the MCP endpoint (OAuth metadata, registration, tokens) over
:data:`SIDE_RESPONSE_BYTES` fails that request: ``the answer from <url> passed N bytes``.

:func:`probe_oauth` asks a server, before any sign-in, whether it wants one
(:func:`asks_for_oauth`: a ``401`` naming protected-resource metadata).

Every message this module logs or raises passes through :meth:`ServerSpec.redact`; the HTTP
client and the SDK's transports are imported only when an HTTP server is connected.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio

from awf_mcp.core.servers import ServerSpec, may_sign_in, record_oauth
from awf_mcp.wire.clientsession import Transcript

log = logging.getLogger("awf_mcp.upstream")

SIDE_RESPONSE_BYTES = 1 << 20
"""An HTTP upstream's answer to a request beside its MCP endpoint (OAuth metadata, client
registration, tokens; SSE message posts) is read at most this far, then the request fails."""


def _causes(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        yield cause
        cause = cause.__cause__ or cause.__context__


def asks_for_oauth(response: Any) -> bool:
    """Whether a ``401`` names OAuth protected-resource metadata (RFC 9728: ``WWW-Authenticate:
    Bearer resource_metadata=...``), as the servers that Claude Code and Codex sign in to do."""
    challenge = response.headers.get("www-authenticate", "")
    return challenge.lower().startswith("bearer") and "resource_metadata=" in challenge


async def probe_oauth(spec: ServerSpec) -> str | None:
    """``None`` when the url server SPEC answers a first request with a ``401`` asking for OAuth
    (:func:`asks_for_oauth`); else what it answered, one sentence."""
    import httpx2

    hello = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "awf-mcp"}},
    }
    headers = {**spec.headers, "Accept": "application/json, text/event-stream"}
    try:
        async with httpx2.AsyncClient(timeout=15) as http:
            response = await http.post(spec.url, json=hello, headers=headers)
    except httpx2.HTTPError as exc:
        return spec.redact(describe_http_failure(exc, spec.url))
    if response.status_code == 401 and asks_for_oauth(response):
        return None
    if response.status_code == 401:
        return "HTTP 401 without OAuth protected-resource metadata (it wants a token awf-mcp cannot get)"
    return f"it answered a first request with HTTP {response.status_code}, asking for no sign-in"


def describe_http_failure(exc: BaseException, url: str) -> str:
    """One sentence saying why a request to ``url`` got no answer (its chain of causes read)."""
    import socket
    import ssl

    import httpx2

    where = httpx2.URL(url)
    host = where.host or url
    for cause in _causes(exc):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS: the certificate of {host} is not trusted ({cause.verify_message})"
        if isinstance(cause, ssl.SSLError):
            what = (cause.reason or "").replace("_", " ").lower() or cause.strerror or str(cause)
            return f"TLS: {what} (at {host})"
        if isinstance(cause, socket.gaierror):
            return f"name not resolved: {host} ({cause.strerror})"
        if isinstance(cause, ConnectionRefusedError):
            port = where.port or {"https": 443, "http": 80}.get(where.scheme)
            place = f"{host}:{port}" if port else host
            return f"connection refused at {place} (nothing listens there)"
        if isinstance(cause, httpx2.TimeoutException):
            return f"no answer from {host} in time ({type(cause).__name__})"
        if getattr(cause, "too_large", False):
            return str(cause)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _reporting_http_client(spec: ServerSpec, transcript: Transcript, auth: Any = None) -> Any:
    """The SDK's HTTP client, as :func:`mcp.shared._httpx_utils.create_mcp_http_client` makes it, that
    also records why a request failed as ``transcript.fault`` (see "HTTP" in the module docstring).

    AUTH: the SDK's OAuth provider of an ``auth = "oauth"`` server, or ``None``."""
    import httpx2
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    from awf_mcp.wire import oauth

    # The SSE transport's GET is the connection itself; Streamable HTTP's optional GET stream
    # may be refused by a server that has none.
    reported = {"POST", "GET"} if spec.sse else {"POST"}

    class ReportingClient(httpx2.AsyncClient):
        async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
            try:
                response = await super().send(request, **options)
            except httpx2.HTTPError as exc:
                transcript.fault = describe_http_failure(exc, str(request.url))
                log.debug("[%s] %s", spec.name, spec.redact(transcript.fault))
                raise
            except Exception as exc:
                sentence = oauth.describe_failure(spec, exc)
                if sentence:
                    transcript.fault = sentence
                    transcript.needs_sign_in = oauth.needs_sign_in(spec.name) in sentence
                raise
            if response.status_code >= 400 and request.method in reported:
                phrase = f" {response.reason_phrase}" if response.reason_phrase else ""
                shown = f"{request.url.scheme}://{request.url.netloc.decode()}{request.url.path}"  # no query
                transcript.fault = f"HTTP {response.status_code}{phrase} at {shown}"
                if response.status_code == 401 and asks_for_oauth(response) and may_sign_in(spec):
                    record_oauth(spec.url)  # from now on it signs in, as with auth = "oauth"
                    transcript.fault = f"{oauth.needs_sign_in(spec.name)} (it answered 401 asking for OAuth)"
                    transcript.needs_sign_in = True
            return response

    endpoint = httpx2.URL(spec.url)
    endpoint_key = (endpoint.scheme, endpoint.host, endpoint.port, endpoint.path)

    class BoundedStream(httpx2.AsyncByteStream):
        def __init__(self, inner: Any, request: httpx2.Request) -> None:
            self.inner, self.request = inner, request

        async def __aiter__(self) -> AsyncIterator[bytes]:
            read = 0
            async for chunk in self.inner:
                read += len(chunk)
                if read > SIDE_RESPONSE_BYTES:
                    url = self.request.url
                    shown = f"{url.scheme}://{url.netloc.decode()}{url.path}"
                    error = httpx2.TransportError(
                        f"the answer from {shown} passed {SIDE_RESPONSE_BYTES:,} bytes", request=self.request
                    )
                    error.too_large = True  # type: ignore[attr-defined]
                    raise error
                yield chunk

        async def aclose(self) -> None:
            await self.inner.aclose()

    class BoundedTransport(httpx2.AsyncBaseTransport):
        """Answers to requests beside the MCP endpoint (OAuth metadata, registration, tokens,
        SSE message posts) are read at most :data:`SIDE_RESPONSE_BYTES`."""

        def __init__(self) -> None:
            self.inner = httpx2.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            response = await self.inner.handle_async_request(request)
            if (request.url.scheme, request.url.host, request.url.port, request.url.path) != endpoint_key:
                response.stream = BoundedStream(response.stream, request)
            return response

        async def aclose(self) -> None:
            await self.inner.aclose()

    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    return ReportingClient(
        headers=dict(spec.headers), timeout=timeout, auth=auth, transport=BoundedTransport()
    )


@contextlib.asynccontextmanager
async def http_streams(
    spec: ServerSpec, transcript: Transcript, closed: anyio.Event, auth: Any = None
) -> AsyncIterator[Any]:
    """Streamable HTTP, or HTTP+SSE for an ``sse`` server, on the SDK's clients."""
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    from awf_mcp.wire import oauth

    if auth is None and spec.auth:
        auth = oauth.serving_auth(spec)
    if spec.sse:

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
            return _reporting_http_client(spec, transcript, auth)

        async with contextlib.AsyncExitStack() as stack:
            try:
                reads, writes = await stack.enter_async_context(
                    sse_client(spec.url, httpx_client_factory=factory, auth=auth)
                )
            except Exception as exc:  # the stream was refused: say why as for any HTTP request
                reason = transcript.fault or describe_http_failure(exc, spec.url)
                raise transcript.failure(spec.redact(reason)) from None
            try:
                yield reads, writes
            finally:
                closed.set()
        return
    async with (
        _reporting_http_client(spec, transcript, auth) as http,
        streamable_http_client(spec.url, http_client=http) as (reads, writes),
    ):
        try:
            yield reads, writes
        finally:
            closed.set()
