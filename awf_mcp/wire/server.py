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
``McpServer(invoker, name=..., version=..., instructions=...)``
    ``sdk_server``       the SDK's low-level :class:`mcp.server.Server` (a
                         :class:`ToolsServer`; for in-memory tests and other transports);
    ``serve_stdio(wire)``  serve one client over the claimed stdio descriptors
                         (see :mod:`awf_mcp.wire.framing`) until EOF or cancellation;
    ``serve_http(host, port, token=...)``  serve the SDK's Streamable HTTP
                         transport at ``/mcp`` until cancelled;
    ``notify_tools_changed()``  serve the registry's current tools and tell the
                         clients (awaited by the registry after a re-merge): handshake-era
                         connections that listed them, and ``subscriptions/listen``
                         streams; see :class:`ToolsServer` for what is advertised;
    ``end_listen_streams()``  end the open listen streams with their result (at
                         stdin EOF and at HTTP shutdown).

HTTP
----
Loopback by default, with the SDK's Host/Origin checks against DNS
rebinding. A ``token`` makes every request carry ``Authorization: Bearer
<token>`` or the URL's ``?token=<token>`` (compared in constant time) or get ``401``;
the caller refuses to bind a non-loopback address without one. Connections are guarded
by :mod:`awf_mcp.wire.httpguard`: request deadlines, a cap below the open-file limit,
log records one line each. When ``stop`` is set, the listen streams
and the sessions' standalone GET streams end (:class:`StandaloneStreams`), so no
client holding one open holds up the exit.

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

The client channel
------------------
Each call gets a :class:`ClientChannel` (the :class:`~awf_mcp.ports.ClientChannel`
port) through which the core asks the client for its roots, a user's confirmation or a
sample, on whichever protocol family the call arrived:

* up to 2025-11-25, as a server-to-client request on the session's back-channel,
  tied to the call (``related_request_id``, so over HTTP it rides the call's stream);
* on the stateless revision (2026-07-28: ``server/discover``, capabilities in each
  request's ``_meta``), a question raises :class:`~awf_mcp.ports.InputRequired`; the
  call is answered with an ``InputRequiredResult`` holding the request under a key
  derived from the question (method and parameters), and a ``request_state`` listing
  the keys asked and the answers received so far. The client retries the call with
  ``inputResponses``; the re-run call asks the same question, and its answer counts
  only if its key was asked (an answer to a question the server never put is
  ignored). ``request_state`` is sealed by the SDK's :class:`RequestStateBoundary`
  (AES-GCM under a key made at start-up, bound to the tool name and arguments, ten
  minutes to live), so a client can neither read nor forge it, nor move it to another
  call.

Client capabilities are read from the handshake or from the request's ``_meta``; a
question the client has no capability for is :class:`~awf_mcp.ports.ClientCannotAnswer`.
The client's roots are kept per session (stdio: the one client; HTTP: the
``mcp-session-id``), and ``notifications/roots/list_changed`` drops them.

Framing and limits (threat model: the peer may send anything)
--------------------------------------------------------------
A line that is not JSON gets ``-32700 Parse error`` naming the problem (JSON
nested more than about 200 levels deep, a number too long to parse, or the
parser's own reason, with its position); JSON that is not a JSON-RPC message
gets ``-32600 Invalid Request`` (with the request's id when it has one); a
line over 10 MiB gets ``-32600`` saying so, and is never buffered whole. The
server keeps serving after each of these.

On stdio, at most :data:`REQUESTS_IN_FLIGHT_LIMIT` requests (``subscriptions/listen``
streams apart) are handled at once: a request past that gets ``-32603`` saying so at once
(stdin keeps being read, so cancellations and the client's answers still arrive). A
request counts from its arrival until its answer leaves, or until the client cancels it
(the SDK never answers a cancelled request). A client that sends requests but never
reads the answers therefore holds at most that many answers in awf-mcp's memory, plus
the writer's bounded backlog; once that backlog is full, stdin is no longer read.

Output (threat model: a tool or plugin may return anything)
-----------------------------------------------------------
* Every string mapped to the wire (text, structured content keys and values,
  error messages, progress messages, tool names, descriptions and schemas) has
  its lone surrogates (undecodable bytes of a file name, ``"\\udce9"``)
  replaced by a visible escape (``\\xe9`` for an undecodable byte,
  ``\\ud800`` otherwise), so no such string can fail the encoding.
* A tool result whose encoding would exceed :data:`RESULT_BYTE_LIMIT` becomes an
  ``isError`` result saying how big it was and what the limit is. Its size is
  measured before anything is encoded, string by string, stopping at the limit,
  so the memory used to measure is bounded whatever the result.
* The output pump encodes each reply on its own: a reply that still cannot be
  encoded, or whose frame exceeds :data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`,
  is answered with a JSON-RPC error ``-32603`` for that request id (a
  notification is dropped and logged), and the server keeps serving. No frame
  over the limit ever leaves the server.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import logging
import socket
import urllib.parse
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Mapping, MutableMapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity, compact_json
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.server.validation import wants_sampling_tools
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS, is_version_at_least
from pydantic import BaseModel, TypeAdapter, ValidationError

from awf_mcp.core.calls import ToolInvoker
from awf_mcp.errors import UnknownToolError, UserError, describe_exception
from awf_mcp.ports import (
    CLIENT_METHODS,
    ClientCannotAnswer,
    ClientFeature,
    InputRequired,
    ToolContent,
    ToolDefinition,
    ToolResult,
    visible_text,
)
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES, Frame, FrameReader, FrameWriter, Oversized, StdioWire

log = logging.getLogger("awf_mcp.wire.server")

EOF_GRACE_SECONDS = 0.7
"""After stdin EOF, how long requests already received may take to answer before they are cancelled."""

SERVER_NAME = "awf-mcp-server"
"""The ``serverInfo.name`` of the Go server, kept for parity."""


LISTED_BY_LIMIT = 64
"""How many handshake-era connections (HTTP sessions) are told of a tools change: the latest to list them."""

LISTEN_LIMIT = 64
"""How many ``subscriptions/listen`` streams may be open at once, all clients together."""

REQUESTS_IN_FLIGHT_LIMIT = 64
"""On stdio, how many requests (listen streams apart) are handled at once; more are refused (:data:`BUSY`)."""

BUSY = (
    f"awf-mcp is already handling {REQUESTS_IN_FLIGHT_LIMIT} requests from this client, the most it "
    "handles at once: wait for some of their answers (or cancel them), then send this request again"
)

CANCELLED = "notifications/cancelled"
"""The client's cancellation of a request, which the SDK never answers."""

TOOLS_CHANGED = ToolsListChanged()
"""The event published to ``subscriptions/listen`` streams when the served tools changed."""

RESULT_BYTE_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024
"""The largest encoded tool result sent; the rest of the frame limit is kept for the envelope."""


def wire_value(value: Any) -> Any:
    """A JSON-like value with :func:`~awf_mcp.ports.visible_text` applied to every string, keys included."""
    if isinstance(value, str):
        return visible_text(value)
    if isinstance(value, dict):
        return {visible_text(k) if isinstance(k, str) else k: wire_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [wire_value(item) for item in value]
    return value


class ResultTooLarge(Exception):
    """A value's encoding exceeds the byte limit; ``size`` is how much was counted before stopping."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _add_json_size(value: Any, total: int, limit: int) -> int:
    """``total`` plus the JSON size of ``value``; raises :class:`ResultTooLarge` once over ``limit``."""
    if isinstance(value, str):
        if total + len(value) > limit:  # every character takes at least one byte
            raise ResultTooLarge(total + len(value))
        total += len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    elif isinstance(value, dict):
        total += 2
        for key, item in value.items():
            total = _add_json_size(item, _add_json_size(str(key), total + 2, limit), limit)
    elif isinstance(value, list | tuple):
        total += 2
        for item in value:
            total = _add_json_size(item, total + 1, limit)
    else:
        total += len(json.dumps(value, default=str))
    if total > limit:
        raise ResultTooLarge(total)
    return total


def result_size(result: ToolResult, limit: int = RESULT_BYTE_LIMIT) -> int:
    """About how many bytes ``result`` takes as JSON; raises :class:`ResultTooLarge` past ``limit``.

    Strings are measured one at a time and a string longer than the room left
    is never encoded, so measuring needs memory for one string of at most
    ``limit`` characters, whatever the result holds.
    """
    total = 64
    for item in result.content:
        total = _add_json_size(item.text or item.data, total + 48, limit)
        total = _add_json_size(item.mime_type, total, limit)
    if result.structured_content is not None:
        total = _add_json_size(result.structured_content, total + 24, limit)
    return total


def surely_within(result: ToolResult, limit: int = RESULT_BYTE_LIMIT) -> bool:
    """True when ``result`` cannot encode past ``limit``, told without encoding anything.

    A JSON string takes at most 6 bytes a character (``\\uXXXX``), so plain text
    and image items whose characters, times six, fit are within it; anything
    else (structured content, other items) is left to :func:`result_size`.
    """
    if result.structured_content is not None:
        return False
    total = 64
    for item in result.content:
        if item.type not in ("text", "image") or item.extra:
            return False
        total += 64 + 6 * (len(item.text) + len(item.data) + len(item.mime_type))
    return total <= limit


def tool_to_mcp(definition: ToolDefinition) -> types.Tool:
    """The MCP ``Tool`` for a domain definition."""
    schema = wire_value(dict(definition.input_schema)) or {"type": "object"}
    schema.setdefault("type", "object")
    annotations = None
    if definition.annotations is not None:
        a = definition.annotations
        annotations = types.ToolAnnotations(
            title=None if a.title is None else visible_text(a.title),
            read_only_hint=a.read_only,
            destructive_hint=a.destructive,
            idempotent_hint=a.idempotent,
            open_world_hint=a.open_world,
        )
    return types.Tool(
        name=visible_text(definition.name),
        description=visible_text(definition.description),
        input_schema=schema,
        output_schema=wire_value(dict(definition.output_schema)) if definition.output_schema else None,
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
    """The MCP content block for a domain content item, every string made encodable."""
    if item.type == "text" and not item.extra:  # ASCII (a flag, no scan) holds no lone surrogate
        return types.TextContent(text=item.text if item.text.isascii() else visible_text(item.text))
    if item.type == "image" and not item.extra:
        return types.ImageContent(data=visible_text(item.data), mime_type=visible_text(item.mime_type))
    return _CONTENT_BLOCK.validate_python(wire_value(content_to_wire(item)), by_name=False)


def result_to_mcp(result: ToolResult, tool_name: str = "the tool") -> types.CallToolResult:
    """The MCP ``CallToolResult`` for a domain result, within :data:`RESULT_BYTE_LIMIT`.

    A result over the limit becomes an ``isError`` result that says so.
    """
    try:
        if not surely_within(result):
            result_size(result)
    except ResultTooLarge as exc:
        result = ToolResult.error(too_large_message(f"the result of {tool_name}", exc.size))
    except (RecursionError, TypeError, ValueError) as exc:
        result = ToolResult.error(f"the result of {tool_name} cannot be encoded as JSON: {exc}")
    return types.CallToolResult(
        content=[content_to_mcp(item) for item in result.content],
        is_error=result.is_error,
        structured_content=wire_value(result.structured_content),
    )


def too_large_message(what: str, size: int) -> str:
    """The sentence for a reply over the frame limit (``size`` may be a lower bound)."""
    return (
        f"{visible_text(what)} is at least {size:,} bytes encoded, over the {MAX_MESSAGE_BYTES:,}-byte "
        "message limit, so it was not sent; ask for less (a narrower path, pattern, range or LIMIT)"
    )


def _error_frame(request_id: Any, code: int, message: str) -> bytes:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def json_problem(exc: Exception) -> str | None:
    """What made the SDK's JSON parser reject a line, in words, or ``None`` when it parsed."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    for error in errors():
        if error.get("type") != "json_invalid":
            continue
        reason = str((error.get("ctx") or {}).get("error") or error.get("msg") or "")
        where = reason.partition(" at ")[2]
        at = f" (at {where})" if where else ""
        if "recursion limit" in reason:
            return (
                f"the JSON is nested too deeply{at}; "
                "at most about 200 levels of arrays and objects are accepted"
            )
        if "number out of range" in reason:
            return f"a number is too long or too large to parse{at}; send very long numbers as strings"
        return f"the line is not valid JSON: {reason}" if reason else "the line is not valid JSON"
    return None


def frame_error(data: bytes, problem: str | None = None) -> bytes:
    """The JSON-RPC error answering an input line the SDK could not accept.

    ``problem`` is :func:`json_problem` of the SDK's error: when the SDK's parser
    rejected the line, the answer is ``-32700`` with that reason.
    """
    if problem is not None:
        return _error_frame(None, types.PARSE_ERROR, f"Parse error: {problem}")
    try:
        parsed = json.loads(data)
    except RecursionError:
        return _error_frame(None, types.PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    except ValueError as exc:
        reason = "a number is too long to parse" if "digits" in str(exc) else "the line is not valid JSON"
        return _error_frame(None, types.PARSE_ERROR, f"Parse error: {reason}")
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return _error_frame(
        request_id,
        types.INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


def encode_reply(reply: Any) -> bytes | None:
    """One outgoing message as a frame, never over the limit; see the module docstring.

    A response that cannot be encoded or is too large becomes a ``-32603`` error
    for its id; any other message that cannot be sent is dropped (``None``).
    """
    problem = ""
    try:
        data: bytes = reply.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if len(data) <= MAX_MESSAGE_BYTES:
            return data
        problem = too_large_message("the reply", len(data) - 1)
    except Exception as exc:  # a value the JSON encoder refuses: the server must not go down for it
        problem = f"the reply could not be encoded as JSON ({type(exc).__name__})"
    request_id = getattr(reply, "id", None)
    if not isinstance(reply, types.JSONRPCResponse | types.JSONRPCError) or request_id is None:
        log.warning("dropped an outgoing %s: %s", type(reply).__name__, problem)
        return None
    log.warning("answered request %r with an error: %s", request_id, problem)
    if isinstance(request_id, str):
        request_id = visible_text(request_id)
    try:
        frame = _error_frame(request_id, types.INTERNAL_ERROR, f"Internal error: {problem}")
    except Exception:
        return None
    return frame if len(frame) <= MAX_MESSAGE_BYTES else None


def client_name(ctx: ServerRequestContext[Any]) -> str | None:
    """The ``clientInfo.name`` of the client making this request, when it said.

    From ``initialize`` on the handshake revisions; on the stateless revision (2026-07-28)
    from the request's own ``_meta`` envelope, which the SDK turns into the same
    ``client_params`` when it carries capabilities too, and which is read directly otherwise.
    """
    params = ctx.session.client_params
    if params is not None:
        return params.client_info.name
    info = (ctx.meta or {}).get(types.CLIENT_INFO_META_KEY)
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


INPUT_REQUIRED_VERSION = "2026-07-28"
"""The first revision without a back-channel: questions go out as ``InputRequiredResult``."""

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


def _result_type(method: str, params: Mapping[str, Any]) -> type[BaseModel]:
    if method == "roots/list":
        return types.ListRootsResult
    if method == "elicitation/create":
        return types.ElicitResult
    if wants_sampling_tools(params.get("tools"), params.get("toolChoice")):
        return types.CreateMessageResultWithTools
    return types.CreateMessageResult


def question_key(method: str, params: Mapping[str, Any]) -> str:
    """The key of a question in ``inputRequests``: the same question always has the same key."""
    digest = hashlib.sha256(compact_json({"m": method, "p": params}, sort_keys=True).encode()).digest()
    return f"{CLIENT_METHODS[method]}-{base64.urlsafe_b64encode(digest[:12]).decode()}"


def _session_key(ctx: ServerRequestContext[Any]) -> Hashable | None:
    """Which client session a request belongs to: stdio has one; HTTP says it in a header."""
    if ctx.request is None:
        return "stdio"
    headers = getattr(ctx.request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{session_id}" if session_id else None


class ClientChannel:
    """The :class:`~awf_mcp.ports.ClientChannel` of one call; see the module docstring."""

    def __init__(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        self.ctx = ctx
        self.stateless = is_version_at_least(ctx.protocol_version or "", INPUT_REQUIRED_VERSION)
        self.asked: set[str] = set()
        self.answers: dict[str, Any] = {}
        self.responses: Mapping[str, Any] = {}
        if self.stateless:
            self._restore(ctx, params)

    def _restore(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> None:
        """What earlier rounds of this call asked and learnt (the state was unsealed by the SDK)."""
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            state = json.loads(params.request_state or "{}")
            self.asked = {key for key in state.get("asked", []) if isinstance(key, str)}
            answers = state.get("answers", {})
            self.answers = dict(answers) if isinstance(answers, dict) else {}
        raw = (ctx.params or {}).get("inputResponses")
        if isinstance(raw, dict):
            self.responses = raw
        elif params.input_responses:
            self.responses = {
                key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, value in params.input_responses.items()
            }

    def supports(self, feature: ClientFeature) -> bool:
        """True when the client declared the capability ``feature`` needs."""
        capabilities = self.ctx.session.client_capabilities
        if capabilities is None:
            return False
        if feature == "roots":
            return capabilities.roots is not None
        if feature == "sampling":
            return capabilities.sampling is not None
        elicitation = capabilities.elicitation
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The client's result for ``method``; see :class:`~awf_mcp.ports.ClientChannel`."""
        feature = CLIENT_METHODS.get(method)
        if feature is None:
            raise ClientCannotAnswer(f"{method} is not a request a server may send a client")
        if not self.supports(feature):
            raise ClientCannotAnswer(f"the client does not support {feature} (it did not declare it)")
        result_type = _result_type(method, params)
        if self.stateless:
            return self._answer(method, params, result_type)
        try:
            request = _INPUT_REQUEST.validate_python(
                {"method": method, "params": dict(params)}, by_name=False
            )
        except ValidationError as exc:
            raise ClientCannotAnswer(
                f"the {method} request is malformed ({exc.error_count()} errors)"
            ) from None
        try:
            result = await self.ctx.session.send_request(
                request,
                result_type,
                metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
            )
        except MCPError as exc:
            raise ClientCannotAnswer(
                f"the client answered {method} with an error: {exc.error.message}"
            ) from None
        except ValidationError:
            raise ClientCannotAnswer(f"the client's answer to {method} is malformed") from None
        answer: Mapping[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer

    def _answer(
        self, method: str, params: Mapping[str, Any], result_type: type[BaseModel]
    ) -> Mapping[str, Any]:
        key = question_key(method, params)
        known = self.answers.get(key)
        if isinstance(known, dict):
            return known
        response = self.responses.get(key)
        if response is None or key not in self.asked:
            raise InputRequired(key, method, params)
        try:
            answer: dict[str, Any] = result_type.model_validate(response, by_name=False).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
        except ValidationError:
            raise ClientCannotAnswer(f"the client's answer to {method} is malformed") from None
        self.answers[key] = answer
        return answer

    def input_required(self, question: InputRequired) -> types.InputRequiredResult:
        """The result that puts ``question`` to the client, carrying this call's progress so far."""
        request = _INPUT_REQUEST.validate_python(
            {"method": question.method, "params": dict(question.params)}, by_name=False
        )
        state = compact_json({"asked": [question.key], "answers": self.answers})
        return types.InputRequiredResult(input_requests={question.key: request}, request_state=state)


class ToolsServer(Server[Any]):
    """The SDK's low-level server, telling clients when the served tools change.

    ``tools_can_change`` (the registry's :attr:`~awf_mcp.core.registry.Registry.can_change`)
    decides what is advertised and served, per protocol family:

    * up to 2025-11-25 (``initialize``, on stdio and on each Streamable HTTP session),
      ``tools.listChanged`` is advertised, and ``notifications/tools/list_changed`` goes to
      each connection that listed the tools (the latest :data:`LISTED_BY_LIMIT`) on its own
      channel: stdout, or the HTTP session's standalone GET stream;
    * on the stateless revision (2026-07-28), ``subscriptions/listen`` is served by the SDK's
      :class:`ListenHandler` (at most :data:`LISTEN_LIMIT` streams at once), which makes
      ``server/discover`` advertise ``tools.listChanged``; each stream that asked for tool
      changes gets the notification on its own response stream.

    A registry that cannot change advertises neither and does not serve ``subscriptions/listen``.
    """

    tools_can_change: bool = False

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The SDK's, advertising ``tools.listChanged`` when the tools can change, on every transport."""
        if notification_options is None:
            notification_options = NotificationOptions(tools_changed=self.tools_can_change)
        return super().create_initialization_options(
            notification_options, experimental_capabilities, extensions
        )


class McpServer:
    """awf-mcp's tools behind the SDK's low-level server; see the module docstring."""

    def __init__(
        self,
        invoker: ToolInvoker,
        *,
        name: str = SERVER_NAME,
        version: str = "",
        instructions: str | None = None,
    ) -> None:
        self.invoker = invoker
        self._tools = types.ListToolsResult(tools=[tool_to_mcp(d) for d in invoker.registry.definitions()])
        can_change = invoker.registry.can_change
        self._listed_by: dict[int, Any] = {}  # per handshake-era connection: a session that listed the tools
        self._changes = InMemorySubscriptionBus()  # to the stateless revision's subscriptions/listen streams
        self._listen = ListenHandler(self._changes, max_subscriptions=LISTEN_LIMIT)
        self._listens_open = 0
        self._listen_ended = False
        invoker.registry.watch(self.notify_tools_changed)
        self.sdk_server = ToolsServer(
            name,
            version=version,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._subscriptions_listen if can_change else None,
        )
        self.sdk_server.tools_can_change = can_change
        # Added here: passing it to Server() warns that roots are deprecated as of 2026-07-28.
        self.sdk_server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        self.sdk_server.middleware.append(
            RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=name)
        )

    async def _roots_changed(self, ctx: ServerRequestContext[Any], params: Any) -> None:
        if self.invoker.client_roots is not None:
            self.invoker.client_roots.forget(_session_key(ctx))

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        connection = ctx.session.client_params  # one per handshake-era connection
        if (
            self.sdk_server.tools_can_change
            and connection is not None
            and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS  # those listen instead
        ):
            self._listed_by.pop(id(connection), None)
            self._listed_by[id(connection)] = (connection, ctx.session)
            while len(self._listed_by) > LISTED_BY_LIMIT:
                self._listed_by.pop(next(iter(self._listed_by)))
        return self._tools

    async def notify_tools_changed(self) -> None:
        """Serve the registry's current tools and tell the clients; see :class:`ToolsServer`."""
        self._tools = types.ListToolsResult(
            tools=[tool_to_mcp(d) for d in self.invoker.registry.definitions()]
        )
        await self._changes.publish(TOOLS_CHANGED)
        async with anyio.create_task_group() as group:
            for key, (_, session) in list(self._listed_by.items()):
                group.start_soon(self._tell_tools_changed, key, session)

    async def _tell_tools_changed(self, key: int, session: Any) -> None:
        try:
            with anyio.move_on_after(1.0):  # a client that does not read holds up no other
                await session.send_tool_list_changed()  # on the connection's own channel
        except Exception as exc:  # a client gone meanwhile
            self._listed_by.pop(key, None)
            log.debug("tools/list_changed not sent: %s", describe_exception(exc))

    async def _subscriptions_listen(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        if self._listen_ended:  # a stream opened now would hold up the exit
            raise MCPError(code=types.INTERNAL_ERROR, message="the server is shutting down")
        if self._listens_open >= LISTEN_LIMIT:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"{self._listens_open} subscriptions/listen streams are open, the most awf-mcp "
                "serves at once; end one before listening again",
            )
        self._listens_open += 1
        try:
            return await self._listen(ctx, params)
        finally:
            self._listens_open -= 1

    def end_listen_streams(self) -> None:
        """End every open ``subscriptions/listen`` stream with its result; refuse new ones (shutdown)."""
        self._listen_ended = True
        self._listen.close()

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        progress = None
        if ctx.meta is not None and ctx.meta.get("progress_token") is not None:
            session = ctx.session

            async def progress(value: float, total: float | None, message: str | None) -> None:
                await session.report_progress(
                    value, total, None if message is None else visible_text(message)
                )

        channel = ClientChannel(ctx, params)
        try:
            result = await self.invoker.call(
                params.name,
                params.arguments,
                progress=progress,
                client_name=client_name(ctx),
                channel=channel,
                session=_session_key(ctx),
            )
        except InputRequired as question:
            return channel.input_required(question)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        except Exception as exc:
            log.debug("call of %s failed outside the invoker", params.name, exc_info=True)
            result = ToolResult.error(describe_exception(exc))
        return result_to_mcp(result, visible_text(params.name))

    async def serve_stdio(
        self, wire: StdioWire, frames: AsyncIterator[Frame | Oversized] | None = None
    ) -> None:
        """Serve one client over ``wire`` until its EOF (or until cancelled).

        ``frames`` are the wire's input frames when the caller has begun reading them (the
        runtime reads the first one ahead); by default a reader of ``wire`` is made here.
        """
        if frames is None:
            frames = FrameReader(wire.read_fd, MAX_MESSAGE_BYTES).frames()
        writer = FrameWriter(wire.write_fd)
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](16)

        in_flight: set[Any] = set()
        handling: Counter[Any] = Counter()  # requests per id, listen streams apart (they stay open)

        async def pump_input() -> None:
            try:
                await read_input()
            finally:  # input has ended: shutdown must not wait for a reader that stopped reading
                writer.stop_waiting()

        async def read_input() -> None:
            async with to_session:
                async for item in frames:
                    if isinstance(item, Oversized):
                        log.warning(
                            "refused a %d-byte message (limit %d bytes)", item.size, MAX_MESSAGE_BYTES
                        )
                        await writer.send(
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
                    except Exception as exc:
                        await writer.send(frame_error(item.data, json_problem(exc)))
                        continue
                    if isinstance(message, types.JSONRPCRequest):
                        if message.method != "subscriptions/listen":
                            if handling.total() >= REQUESTS_IN_FLIGHT_LIMIT:
                                await writer.send(_error_frame(message.id, types.INTERNAL_ERROR, BUSY))
                                continue
                            handling[message.id] += 1
                        in_flight.add(message.id)
                    elif isinstance(message, types.JSONRPCNotification) and message.method == CANCELLED:
                        cancelled = (message.params or {}).get("requestId")  # never answered (SDK)
                        if isinstance(cancelled, str | int):
                            in_flight.discard(cancelled)
                            handling.pop(cancelled, None)
                    await to_session.send(SessionMessage(message))
                self.end_listen_streams()  # the one client left: its listen streams end now
                with anyio.move_on_after(EOF_GRACE_SECONDS):
                    while in_flight:
                        await anyio.sleep(0.005)

        async def pump_output() -> None:
            async with from_session:
                async for session_message in from_session:
                    reply = session_message.message
                    if isinstance(reply, types.JSONRPCResponse | types.JSONRPCError):
                        in_flight.discard(reply.id)
                        if handling[reply.id] > 1:
                            handling[reply.id] -= 1
                        else:
                            handling.pop(reply.id, None)
                    data = encode_reply(reply)
                    if data is not None:
                        await writer.send(data)

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


def query_token(query: bytes) -> bytes:
    """The first ``token`` parameter of a raw query string, percent-decoded (``b""`` when none)."""
    for part in query.split(b"&"):
        name, _, value = part.partition(b"=")
        if name == b"token":
            return urllib.parse.unquote_to_bytes(value.replace(b"+", b" "))
    return b""


class BearerTokenGuard:
    """ASGI middleware: HTTP requests without the token get 401.

    The token comes as ``Authorization: Bearer <token>``, or as the URL's ``?token=<token>``
    (the URL awf-mcp prints, for clients that take only a URL); each is compared in
    constant time.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected_header = f"Bearer {token}".encode()
        self.expected = token.encode()

    def _authorized(self, scope: Scope) -> bool:
        supplied = dict(scope.get("headers") or []).get(b"authorization", b"")
        by_header = hmac.compare_digest(supplied, self.expected_header)
        by_query = hmac.compare_digest(query_token(scope.get("query_string") or b""), self.expected)
        return by_header or by_query

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            body = b'{"error": "unauthorized: send Authorization: Bearer <token>"}'
            await _send_json(send, 401, body, (b"www-authenticate", b'Bearer realm="awf-mcp"'))
            return
        await self.app(scope, receive, send)


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
    try:
        return socket.create_server((host, port), family=family, backlog=ACCEPT_BATCH)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).split(" (while attempting", 1)[0]  # the address follows
        raise UserError(f"cannot listen on {host} port {port}: {reason}") from None


async def serve_http(
    server: McpServer,
    host: str,
    port: int,
    *,
    stop: anyio.Event,
    token: str | None = None,
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
    if token:
        app = BearerTokenGuard(app, token)
    config = uvicorn.Config(
        app,
        http=guarded_protocol(ConnectionGuard(connection_limit())),
        backlog=ACCEPT_BATCH,
        ws="none",  # no WebSocket: MCP has none, and an upgraded connection would leave the guard
        log_config=None,
        log_level=None,
        lifespan="on",
        access_log=False,
    )
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
