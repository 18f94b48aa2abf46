"""The SDK adapter: awf-mcp's tools served over MCP by the official Python SDK.

Purpose
-------
This is the only module that imports the SDK (``mcp``, ``mcp_types``). It maps
the domain ports to MCP wire types and lets the SDK do the protocol: the
handshake and version negotiation (every version the SDK serves, 2024-11-05
through 2025-11-25 and the 2026 era), request dispatch, ``ping``,
cancellation, progress. Swapping SDK versions touches this module only.

Public surface
--------------
``McpServer(invoker, name=..., version=...)``
    ``sdk_server``       the SDK's low-level :class:`mcp.server.Server` (for
                         in-memory tests and other transports);
    ``serve_stdio(wire)``  serve one client over the claimed stdio descriptors
                         (see :mod:`awf_mcp.wire.framing`) until EOF or cancellation;
    ``serve_http(host, port, token=...)``  serve the SDK's Streamable HTTP
                         transport at ``/mcp`` until cancelled.

HTTP
----
Loopback by default, with the SDK's Host/Origin checks against DNS
rebinding. A ``token`` makes every request carry ``Authorization: Bearer
<token>`` (compared in constant time) or get ``401``; the caller refuses to
bind a non-loopback address without one.

Mapping
-------
* :class:`~awf_mcp.ports.ToolDefinition` -> ``Tool`` (an empty schema becomes
  ``{"type": "object"}``; annotations become ``*Hint`` fields).
* :class:`~awf_mcp.ports.ToolResult` -> ``CallToolResult`` (text, image, audio,
  embedded resource and resource link items, ``isError``, ``structuredContent``).
* :class:`~awf_mcp.errors.UnknownToolError` -> JSON-RPC error ``-32602`` with
  the message; every other failure of a call was already turned into an
  ``isError`` result by :class:`~awf_mcp.core.calls.ToolInvoker`, and anything that
  still escapes becomes an ``isError`` result ``<ExceptionType>: <message>``.
  No traceback is ever sent.

Framing and limits (threat model: the peer may send anything)
--------------------------------------------------------------
A line that is not JSON gets ``-32700 Parse error``; JSON that is not a
JSON-RPC message gets ``-32600 Invalid Request`` (with the request's id when it
has one); a line over 10 MiB gets ``-32600`` saying so, and is never buffered
whole. The server keeps serving after each of these.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import TypeAdapter

from awf_mcp.core.calls import ToolInvoker, describe_exception
from awf_mcp.errors import UnknownToolError
from awf_mcp.ports import ToolContent, ToolDefinition, ToolResult
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES, Frame, FrameReader, FrameWriter, Oversized, StdioWire

log = logging.getLogger("awf_mcp.wire.server")

EOF_GRACE_SECONDS = 0.7
"""After stdin EOF, how long requests already received may take to answer before they are cancelled."""

SERVER_NAME = "awf-mcp-server"
"""The ``serverInfo.name`` of the Go server, kept for parity."""


def tool_to_mcp(definition: ToolDefinition) -> types.Tool:
    """The MCP ``Tool`` for a domain definition."""
    schema = dict(definition.input_schema) or {"type": "object"}
    schema.setdefault("type", "object")
    annotations = None
    if definition.annotations is not None:
        a = definition.annotations
        annotations = types.ToolAnnotations(
            title=a.title,
            read_only_hint=a.read_only,
            destructive_hint=a.destructive,
            idempotent_hint=a.idempotent,
            open_world_hint=a.open_world,
        )
    return types.Tool(
        name=definition.name,
        description=definition.description,
        input_schema=schema,
        output_schema=dict(definition.output_schema) if definition.output_schema else None,
        annotations=annotations,
    )


def content_to_wire(item: ToolContent) -> dict[str, Any]:
    """The MCP wire form (a JSON object) of a domain content item; ``extra`` fields kept."""
    wire: dict[str, Any] = dict(item.extra or {})
    wire["type"] = item.type
    if item.type == "text":
        wire["text"] = item.text
    elif item.type in ("image", "audio"):
        wire.update(data=item.data, mimeType=item.mime_type)
    elif item.type == "resource":
        resource: dict[str, Any] = {"uri": item.uri}
        if item.mime_type:
            resource["mimeType"] = item.mime_type
        if item.data:
            resource["blob"] = item.data
        else:
            resource["text"] = item.text
        wire["resource"] = {**wire.get("resource", {}), **resource}
    else:
        wire.update(uri=item.uri, name=item.name)
        if item.mime_type:
            wire["mimeType"] = item.mime_type
    return wire


_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


def content_to_mcp(item: ToolContent) -> types.ContentBlock:
    """The MCP content block for a domain content item."""
    if item.type == "text" and not item.extra:
        return types.TextContent(text=item.text)
    if item.type == "image" and not item.extra:
        return types.ImageContent(data=item.data, mime_type=item.mime_type)
    return _CONTENT_BLOCK.validate_python(content_to_wire(item), by_name=False)


def result_to_mcp(result: ToolResult) -> types.CallToolResult:
    """The MCP ``CallToolResult`` for a domain result."""
    return types.CallToolResult(
        content=[content_to_mcp(item) for item in result.content],
        is_error=result.is_error,
        structured_content=result.structured_content,
    )


def _error_frame(request_id: Any, code: int, message: str) -> bytes:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def frame_error(data: bytes) -> bytes:
    """The JSON-RPC error answering an input line the SDK could not accept."""
    try:
        parsed = json.loads(data)
    except (ValueError, RecursionError):
        return _error_frame(None, types.PARSE_ERROR, "Parse error: the line is not valid JSON")
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return _error_frame(
        request_id,
        types.INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


class McpServer:
    """awf-mcp's tools behind the SDK's low-level server; see the module docstring."""

    def __init__(self, invoker: ToolInvoker, *, name: str = SERVER_NAME, version: str = "") -> None:
        self.invoker = invoker
        self._tools = types.ListToolsResult(tools=[tool_to_mcp(d) for d in invoker.registry.definitions()])
        self.sdk_server: Server[Any] = Server(
            name,
            version=version,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return self._tools

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        progress = None
        if ctx.meta is not None and ctx.meta.get("progress_token") is not None:
            session = ctx.session

            async def progress(value: float, total: float | None, message: str | None) -> None:
                await session.report_progress(value, total, message)

        try:
            result = await self.invoker.call(params.name, params.arguments, progress=progress)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=exc.message) from None
        except Exception as exc:
            log.debug("call of %s failed outside the invoker", params.name, exc_info=True)
            result = ToolResult.error(describe_exception(exc))
        return result_to_mcp(result)

    async def serve_stdio(self, wire: StdioWire) -> None:
        """Serve one client over ``wire`` until its EOF (or until cancelled)."""
        reader = FrameReader(wire.read_fd, MAX_MESSAGE_BYTES)
        writer = FrameWriter(wire.write_fd)
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](16)

        in_flight: set[Any] = set()

        async def pump_input() -> None:
            async with to_session:
                async for item in reader.frames():
                    if isinstance(item, Oversized):
                        log.warning(
                            "refused a %d-byte message (limit %d bytes)", item.size, MAX_MESSAGE_BYTES
                        )
                        writer.write(
                            _error_frame(
                                None,
                                types.INVALID_REQUEST,
                                f"Invalid Request: message of {item.size} bytes exceeds the "
                                f"{MAX_MESSAGE_BYTES}-byte limit",
                            )
                        )
                        continue
                    assert isinstance(item, Frame)
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(item.data, by_name=False)
                    except Exception:
                        writer.write(frame_error(item.data))
                        continue
                    if isinstance(message, types.JSONRPCRequest):
                        in_flight.add(message.id)
                    await to_session.send(SessionMessage(message))
                with anyio.move_on_after(EOF_GRACE_SECONDS):
                    while in_flight:
                        await anyio.sleep(0.005)

        async def pump_output() -> None:
            async with from_session:
                async for session_message in from_session:
                    reply = session_message.message
                    if isinstance(reply, types.JSONRPCResponse | types.JSONRPCError):
                        in_flight.discard(reply.id)
                    data = reply.model_dump_json(by_alias=True, exclude_unset=True)
                    writer.write(data.encode() + b"\n")

        async def run_session() -> None:
            await self.sdk_server.run(
                session_reads, session_writes, self.sdk_server.create_initialization_options()
            )
            input_scope.cancel()

        input_scope = anyio.CancelScope()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(pump_output)
                group.start_soon(run_session)
                with input_scope:
                    await pump_input()
        finally:
            with anyio.CancelScope(shield=True):
                await writer.drain(timeout=1.0)
            writer.close()


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class BearerTokenGuard:
    """ASGI middleware: HTTP requests without ``Authorization: Bearer <token>`` get 401."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(supplied, self.expected):
                body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="awf-mcp"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def _security_for(host: str) -> Any:
    from mcp.server.transport_security import TransportSecuritySettings

    if host in LOOPBACK_HOSTS:
        return None  # the SDK's own loopback Host/Origin allow-list
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{host}:*", "127.0.0.1:*", "localhost:*", "[::1]:*"],
        allowed_origins=[f"http://{host}:*", "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
    )


async def serve_http(
    server: McpServer,
    host: str,
    port: int,
    *,
    stop: anyio.Event,
    token: str | None = None,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve ``server`` over Streamable HTTP at ``http://host:port/mcp`` until ``stop`` is set."""
    import uvicorn

    app: ASGIApp = server.sdk_server.streamable_http_app(
        host=host, transport_security=_security_for(host), max_request_body_size=MAX_MESSAGE_BYTES
    )
    if token:
        app = BearerTokenGuard(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on", access_log=False)
    http = uvicorn.Server(config)
    http.capture_signals = contextlib.nullcontext  # type: ignore[method-assign,assignment]  # ours

    async def announce() -> None:
        while not http.started:
            await anyio.sleep(0.01)
        bound = http.servers[0].sockets[0].getsockname()
        shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
        url = f"http://{shown}:{bound[1]}/mcp"
        if on_listening is not None:
            on_listening(url)

    async def shut_down_on_stop() -> None:
        await stop.wait()
        http.should_exit = True

    async with anyio.create_task_group() as group:
        group.start_soon(announce)
        group.start_soon(shut_down_on_stop)
        try:
            await http.serve()
        finally:
            group.cancel_scope.cancel()
