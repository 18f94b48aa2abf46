"""The SDK client adapter: one connection to an upstream MCP server, in domain types.

Purpose
-------
With :mod:`awf_mcp.wire.server` the only module that imports the SDK (``mcp``,
``mcp_types``). :func:`connect` is the ``Connect`` function
:mod:`awf_mcp.core.upstream` is given by the CLI runtime: it opens a
:class:`~awf_mcp.core.servers.ServerSpec`, runs the MCP handshake, and yields an
:class:`UpstreamConnection` that lists tools and forwards calls, returning
:class:`~awf_mcp.ports.ToolDefinition` and :class:`~awf_mcp.ports.ToolResult`.

stdio
-----
* The server starts with the user's environment (:func:`awf_mcp.processes.childenv.child_environment`)
  plus its ``env``, through :mod:`awf_mcp.processes.upstreamprocess`: under a keeper, in its own
  process group, so that neither it nor anything it starts (detached or not) outlives its
  connection or awf-mcp, even a ``kill -9`` of awf-mcp. A process that
  :func:`~awf_mcp.processes.upstreamprocess.launch_early` started for the same launch is used.
* Its stdout is read by the event loop (no thread): a line over 10 MiB
  (:data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`) ends the connection (the server is
  restarted on the next call), at most about twice that buffered; a line that is not
  JSON-RPC is logged and skipped.
* A ``tools/list`` of more than :data:`MAX_LISTED_TOOLS` tools or :data:`MAX_LIST_PAGES`
  pages fails, so a server that pages forever cannot grow awf-mcp's memory without bound.
  Pages are read one at a time as the provider takes them
  (:meth:`UpstreamConnection.tool_pages`), so its byte bounds stop the listing early.
* Its stderr goes to awf-mcp's log at INFO, each line prefixed ``[<server>]`` and cut at
  :data:`STDERR_LINE_CHARS`; the last lines are kept for the reason of a failed start.
* Closing: stdin is closed, then after :data:`STDIN_GRACE_SECONDS` the process group gets
  SIGTERM (the keeper then ends the server's descendants), then SIGKILL
  :data:`TERM_GRACE_SECONDS` later — within the server's one-second exit bound.

HTTP
----
The SDK's Streamable HTTP client, or its HTTP+SSE client for a ``type = "sse"`` server, with
the spec's ``headers`` on every request and, for an ``auth = "oauth"`` server, the SDK's OAuth
provider over the stored tokens (:mod:`awf_mcp.wire.oauth`). The SDK ends the
connection on a request that fails without saying why; awf-mcp's HTTP client records the cause
as the connection's reason (:func:`describe_http_failure`): ``connection refused``, ``name not
resolved``, ``TLS: <what failed>``, ``no answer within N s``, and for an answer of status 400 or
more to a POST (or, on SSE, to the GET that opens the stream), ``HTTP <status> at <url>``; a
server that needs sign-in, ``server 'NAME' needs sign-in: run awf-mcp servers login NAME``. An
answer to a request beside the MCP endpoint (OAuth metadata, registration, tokens) over
:data:`SIDE_RESPONSE_BYTES` fails that request: ``the answer from <url> passed N bytes``.

Secrets
-------
Every message this module logs or raises passes through :meth:`ServerSpec.redact`.

Upstream requests
-----------------
The handshake advertises the :data:`~awf_mcp.core.upstream.ClientOffer` it is given
(:meth:`UpstreamConnection.handshake`): the ``sampling``, ``elicitation`` and ``roots``
objects exactly as given (``roots`` is awf-mcp's own, with ``listChanged``:
:meth:`UpstreamConnection.roots_changed` sends the notification), and no other client
capability, whatever callbacks the session holds. :func:`offer_from_first_message` reads
that offer from the agent's first message (``initialize``'s ``capabilities``, or the
client-capabilities ``_meta`` of a 2026-07-28 request). The server's ``roots/list``,
``sampling/createMessage`` and ``elicitation/create`` go to the connection's ``on_request`` (set by
:class:`~awf_mcp.core.upstream.UpstreamProvider`) as JSON objects; its result goes back
as the SDK's result type, and an
:class:`~awf_mcp.core.upstream.UpstreamRequestRefused` becomes a JSON-RPC error with its
sentence (``-32600`` when the request is unsupported, ``-32603`` otherwise). A result
that does not fit the request's result type is refused the same way.

Notifications
-------------
Each calls a callback the provider set, from the session's reader (none blocks: the provider
does its work in tasks of its own): ``tools/list_changed`` ``on_tools_changed``;
``prompts/list_changed`` and ``resources/list_changed`` ``on_offerings_changed`` (with
``prompts`` or ``resources``); ``resources/updated`` ``on_resource_updated`` (the URI);
``notifications/message`` ``on_log`` (level, logger, data).

Prompts and resources
---------------------
:attr:`UpstreamConnection.offers` says what the server advertised besides tools
(:func:`offers_of`). :meth:`UpstreamConnection.item_pages` lists prompts, resources or
templates a page at a time (at most :data:`MAX_LIST_PAGES` pages); ``get_prompt``,
``read_resource``, ``complete``, ``subscribe`` and ``set_logging_level`` forward one request
each. A prompt comes back as a :class:`~awf_mcp.ports.ToolResult` of its messages (roles in
``structured_content``), a read as ``resource`` items; the server's JSON-RPC error is an
``isError`` result (or :class:`~awf_mcp.core.upstream.UpstreamFailure`), a dead connection
:class:`~awf_mcp.core.upstream.UpstreamGone` (:class:`~awf_mcp.core.upstream.UpstreamSignedOut` when
an ``auth = "oauth"`` server ended it by refusing the sign-in: a token revoked, or expired and its
refresh refused).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
from asyncio.streams import FlowControlMixin
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ValidationError

from awf_mcp import __version__
from awf_mcp.core.servers import ServerSpec, launch_key, may_sign_in, record_oauth
from awf_mcp.core.upstream import (
    NO_OFFER,
    ClientOffer,
    OfferedItem,
    OfferingKind,
    ProgressCallback,
    RequestAnswerer,
    UpstreamFailure,
    UpstreamGone,
    UpstreamNeedsSignIn,
    UpstreamRequestRefused,
    UpstreamSignedOut,
    offer_from,
)
from awf_mcp.ports import (
    PROMPT_ROLES,
    PromptArgument,
    PromptDefinition,
    ResourceDefinition,
    ToolAnnotations,
    ToolContent,
    ToolDefinition,
    ToolResult,
)
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.upstreamprocess import KEEPER_GRACE_SECONDS, claim, spawn
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES

log = logging.getLogger("awf_mcp.upstream")

STDIN_GRACE_SECONDS = 0.2
TERM_GRACE_SECONDS = KEEPER_GRACE_SECONDS + 0.3
"""After SIGTERM, the time the server's keeper has to end what it left before the group is SIGKILLed."""
STDERR_LINE_CHARS = 2000
STDERR_TAIL_LINES = 5
MAX_LISTED_TOOLS = 10_000
"""More tools than this from one server (a listing that never ends, say) fail the listing."""
MAX_LIST_PAGES = 1_000
SIDE_RESPONSE_BYTES = 1 << 20
"""An HTTP upstream's answer to a request beside its MCP endpoint (OAuth metadata, client
registration, tokens; SSE message posts) is read at most this far, then the request fails."""


class Transcript:
    """What went wrong on a connection, for the sentence a caller reads."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
        self.fault = ""
        self.exit = ""
        self.needs_sign_in = False
        """The fault is an ``auth = "oauth"`` server asking for a sign-in awf-mcp does not hold."""

    def failure(self, reason: str) -> UpstreamFailure:
        """The failure for REASON (already redacted): :class:`UpstreamNeedsSignIn` when the server asked
        for a sign-in."""
        return (UpstreamNeedsSignIn if self.needs_sign_in else UpstreamFailure)(reason)

    def reason(self) -> str:
        """One redacted sentence: the fault or the exit, and the last stderr lines."""
        parts = [self.fault or self.exit or "it closed the connection"]
        if self.stderr_tail:
            parts.append("its last stderr line: " + self.stderr_tail[-1])
        return self.spec.redact("; ".join(parts))


def offer_from_first_message(data: bytes) -> ClientOffer:
    """The client capabilities to advertise upstream, from the agent's first message (raw JSON).

    ``initialize`` declares them in ``params.capabilities``; a request of the stateless revision
    (2026-07-28: ``server/discover`` or any other) in its ``_meta``. Anything else, or anything
    malformed, offers nothing.
    """
    try:
        message = json.loads(data)
    except ValueError:
        return NO_OFFER
    params = message.get("params") if isinstance(message, dict) else None
    if not isinstance(params, dict):
        return NO_OFFER
    if message.get("method") == "initialize":
        declared = params.get("capabilities")
    else:
        meta = params.get("_meta")
        declared = meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
    try:
        capabilities = types.ClientCapabilities.model_validate(declared, by_name=False)
    except ValidationError:
        return NO_OFFER
    return offer_from(capabilities.model_dump(by_alias=True, mode="json", exclude_none=True))


class _OfferingSession(ClientSession):
    """The SDK's client session, advertising :attr:`offer` instead of what its callbacks imply."""

    offer: ClientOffer = NO_OFFER

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        built = super()._build_capabilities(version)
        offered: dict[str, type[BaseModel]] = {
            "sampling": types.SamplingCapability,
            "elicitation": types.ElicitationCapability,
            "roots": types.RootsCapability,
        }
        return built.model_copy(
            update={
                field: kind.model_validate(self.offer[field], by_name=False) if field in self.offer else None
                for field, kind in offered.items()
            }
        )

    async def validate_tool_result(self, name: str, result: types.CallToolResult) -> None:
        """Nothing: the call path checks structured content against the output schema, matching
        patterns with RE2 off the event loop (:mod:`awf_mcp.core.schemacheck`); the SDK's own
        check would run Python's backtracking ``re`` on the loop."""


def _result_type(method: str, params: Mapping[str, Any]) -> type[BaseModel]:
    if method == "roots/list":
        return types.ListRootsResult
    if method == "elicitation/create":
        return types.ElicitResult
    return types.CreateMessageResultWithTools if params.get("tools") else types.CreateMessageResult


async def _answer(connection: list[UpstreamConnection], method: str, params: BaseModel | None) -> Any:
    """One server request through the connection's ``on_request``: the SDK's result, or its ``ErrorData``."""
    wire = {} if params is None else params.model_dump(by_alias=True, mode="json", exclude_unset=True)
    wire.pop("_meta", None)
    answerer = connection[0].on_request if connection else None
    if answerer is None:
        return types.ErrorData(code=types.INVALID_REQUEST, message=f"awf-mcp does not answer {method} here")
    try:
        result = await answerer(method, wire)
        return _result_type(method, wire).model_validate(result, by_name=False)
    except UpstreamRequestRefused as exc:
        code = types.INVALID_REQUEST if exc.unsupported else types.INTERNAL_ERROR
        return types.ErrorData(code=code, message=str(exc))
    except ValidationError:
        message = f"the agent's answer to {method} is malformed; awf-mcp dropped it"
        return types.ErrorData(code=types.INTERNAL_ERROR, message=message)


class UpstreamConnection:
    """A live MCP client session with one upstream server, speaking domain types."""

    def __init__(
        self, spec: ServerSpec, session: _OfferingSession, transcript: Transcript, closed: anyio.Event
    ) -> None:
        self.spec = spec
        self.session = session
        self.transcript = transcript
        self.closed = closed
        self.instructions: str | None = None
        self.on_tools_changed: Callable[[], None] | None = None
        self.on_request: RequestAnswerer | None = None
        self.on_offerings_changed: Callable[[str], None] | None = None
        self.on_resource_updated: Callable[[str], None] | None = None
        self.on_log: Callable[[str, str | None, Any], None] | None = None
        self.offers: frozenset[str] = frozenset()

    def reason(self) -> str:
        """Why the connection ended (or what went wrong on it), redacted."""
        return self.transcript.reason()

    async def roots_changed(self) -> None:
        """Send ``notifications/roots/list_changed`` (a connection that has ended sends nothing)."""
        with contextlib.suppress(Exception):
            await self.session.send_notification(types.RootsListChangedNotification())

    async def handshake(self, offer: ClientOffer = NO_OFFER) -> None:
        """``initialize`` advertising ``offer``; raises :class:`UpstreamFailure` saying why it failed."""
        self.session.offer = offer
        try:
            result = await self.session.initialize()
        except MCPError as exc:
            await anyio.sleep(0.01)  # a transport error is delivered by a task of its own: let it land
            known = self.closed.is_set() or self.transcript.fault
            reason = self.reason() if known else self.spec.redact(exc.error.message)
            raise self.transcript.failure(f"the handshake failed: {reason}") from None
        except Exception as exc:
            raise UpstreamFailure(self.spec.redact(f"the handshake failed: {exc}")) from None
        self.instructions = result.instructions
        self.offers = offers_of(result.capabilities)

    async def tool_pages(self) -> AsyncGenerator[list[ToolDefinition], None]:
        """The server's tools (its own names), one page at a time: the next page is asked for only
        when the caller takes it. The SDK's per-tool state is kept for the tools listed this time only."""
        listed: set[str] = set()
        cursor: str | None = None
        try:
            for _ in range(MAX_LIST_PAGES):
                params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
                try:
                    page = await self.session.list_tools(params=params)
                except MCPError as exc:
                    raise self._failure(exc) from None
                listed.update(tool.name for tool in page.tools)
                if len(listed) > MAX_LISTED_TOOLS:
                    raise UpstreamFailure(
                        f"it listed more than {MAX_LISTED_TOOLS} tools; awf-mcp serves at most that many"
                    )
                cursor = page.next_cursor
                tools = [tool_from_mcp(tool, self.spec.source) for tool in page.tools]
                del page
                yield tools
                if not cursor:
                    return
            raise UpstreamFailure(f"its tools/list went on for more than {MAX_LIST_PAGES} pages")
        finally:
            _forget_unlisted(self.session, listed)

    async def item_pages(self, kind: OfferingKind) -> AsyncGenerator[list[OfferedItem], None]:
        """The server's prompts, resources or resource templates (``kind``), one page at a time as
        :meth:`tool_pages` reads tools; raises :class:`UpstreamFailure`."""
        cursor: str | None = None
        source = self.spec.source
        for _ in range(MAX_LIST_PAGES):
            params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
            items: list[OfferedItem]
            try:
                if kind == "prompts":
                    prompts = await self.session.list_prompts(params=params)
                    cursor, items = prompts.next_cursor, [prompt_from_mcp(p, source) for p in prompts.prompts]
                elif kind == "resources":
                    listed = await self.session.list_resources(params=params)
                    cursor, items = (
                        listed.next_cursor,
                        [resource_from_mcp(r, source) for r in listed.resources],
                    )
                else:
                    templates = await self.session.list_resource_templates(params=params)
                    cursor = templates.next_cursor
                    items = [resource_from_mcp(t, source) for t in templates.resource_templates]
            except MCPError as exc:
                if exc.error.code == types.METHOD_NOT_FOUND:  # an optional method it lacks: none of them
                    log.debug("[%s] %s: method not found: it offers none", self.spec.name, kind)
                    return
                raise self._failure(exc) from None
            yield items
            if not cursor:
                return
        raise UpstreamFailure(f"its {kind} listing went on for more than {MAX_LIST_PAGES} pages")

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> ToolResult:
        """Get prompt ``name`` (the server's own name): its messages as a prompt result."""
        try:
            result = await self.session.get_prompt(name, dict(arguments))
        except MCPError as exc:
            return self._error_result(exc)
        return ToolResult(
            content=[content_from_mcp(message.content) for message in result.messages],
            structured_content={
                "description": result.description or "",
                PROMPT_ROLES: [message.role for message in result.messages],
            },
        )

    async def read_resource(self, uri: str) -> ToolResult:
        """Read ``uri``: one ``resource`` item per content."""
        try:
            result = await self.session.read_resource(uri)
        except MCPError as exc:
            return self._error_result(exc)
        return ToolResult(content=[contents_from_mcp(contents) for contents in result.contents])

    async def complete(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """The server's ``completion/complete`` result (``completion``) for ``request`` (the wire params,
        ``ref`` naming the server's own prompt or template); raises :class:`UpstreamFailure`."""
        try:
            params = types.CompleteRequestParams.model_validate(request, by_name=False)
            result = await self.session.complete(
                params.ref, params.argument.model_dump(), context_arguments(params)
            )
        except ValidationError:
            raise UpstreamFailure("the completion request is malformed") from None
        except MCPError as exc:
            raise self._failure(exc) from None
        completion: Mapping[str, Any] = result.completion.model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        return completion

    async def subscribe(self, uri: str, on: bool) -> None:
        """``resources/subscribe`` (``on``) or ``resources/unsubscribe`` ``uri``; raises UpstreamFailure."""
        try:
            if on:
                await self.session.send_request(
                    types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri)), types.EmptyResult
                )
            else:
                await self.session.send_request(
                    types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri)),
                    types.EmptyResult,
                )
        except MCPError as exc:
            raise self._failure(exc) from None

    async def set_logging_level(self, level: str) -> None:
        """``logging/setLevel``; raises :class:`UpstreamFailure`."""
        try:
            await self.session.send_request(
                types.SetLevelRequest(params=types.SetLevelRequestParams(level=level)),  # type: ignore[arg-type]
                types.EmptyResult,
            )
        except (MCPError, ValidationError) as exc:
            raise UpstreamFailure(
                self.spec.redact(f"server '{self.spec.name}' refused logging/setLevel: {exc}")
            ) from None

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressCallback | None
    ) -> ToolResult:
        """Call tool ``name`` (the server's own name); JSON-RPC errors become ``isError`` results."""

        reporter = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if reporter is not None:
                reporter(progress, total, message)

        try:
            result = await self.session.call_tool(
                name, dict(arguments), progress_callback=on_progress if progress else None
            )
        except MCPError as exc:
            return self._error_result(exc)
        if not isinstance(result, types.CallToolResult):
            return ToolResult.error(
                f"server '{self.spec.name}' answered {name} with a {type(result).__name__}, "
                "which awf-mcp does not relay"
            )
        return result_from_mcp(result)

    def _error_result(self, exc: MCPError) -> ToolResult:
        """The ``isError`` result of a request the server answered with an error; raises
        :class:`UpstreamGone` when the connection died instead."""
        failure = self._failure(exc)
        if isinstance(failure, UpstreamGone):
            raise failure from None
        return ToolResult.error(str(failure))

    def _failure(self, exc: MCPError) -> UpstreamFailure:
        if exc.error.code == types.CONNECTION_CLOSED or self.closed.is_set():
            return (UpstreamSignedOut if self.transcript.needs_sign_in else UpstreamGone)(self.reason())
        return UpstreamFailure(self.spec.redact(f"server '{self.spec.name}' answered: {exc.error.message}"))


def _forget_unlisted(session: ClientSession, listed: set[str]) -> None:
    """Drop the SDK's per-tool state (output schemas, their validators, header maps) of tools not in
    ``listed``: the session adds to it with every page and prunes only after a one-page listing, so a
    server listing new tools, or large ones, on each of many pages would otherwise keep them all."""
    for state in ("_tool_output_schemas", "_tool_output_validators", "_x_mcp_header_maps"):
        kept: dict[str, Any] | None = getattr(session, state, None)
        if kept is not None:
            setattr(session, state, {name: value for name, value in kept.items() if name in listed})


def tool_from_mcp(tool: types.Tool, source: str) -> ToolDefinition:
    """The domain definition of an upstream tool, name unchanged (the provider prefixes it)."""
    annotations = None
    hints = tool.annotations
    if hints is not None or tool.title:
        annotations = ToolAnnotations(
            title=(hints.title if hints is not None and hints.title else None) or tool.title,
            read_only=hints.read_only_hint if hints is not None else None,
            destructive=hints.destructive_hint if hints is not None else None,
            idempotent=hints.idempotent_hint if hints is not None else None,
            open_world=hints.open_world_hint if hints is not None else None,
        )
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        source=source,
        annotations=annotations,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        meta=upstream_meta(tool.meta),
        icons=icons_from_mcp(tool.icons),
    )


RESERVED_META = frozenset({"anthropic/alwaysLoad", "anthropic/searchHint"})
"""``_meta`` keys that steer the agent's own client (what it loads, what it defers): awf-mcp's to
set for what it serves, never an upstream's."""


def upstream_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An upstream item's ``_meta``, less :data:`RESERVED_META` (``None`` when nothing is left)."""
    kept = {key: value for key, value in (meta or {}).items() if key not in RESERVED_META}
    return kept or None


def icons_from_mcp(icons: Sequence[types.Icon] | None) -> tuple[dict[str, Any], ...]:
    """An upstream item's ``icons`` as JSON objects (MCP's names)."""
    return tuple(icon.model_dump(by_alias=True, exclude_none=True, mode="json") for icon in icons or ())


def offers_of(capabilities: types.ServerCapabilities) -> frozenset[str]:
    """What a server offers besides tools (:data:`~awf_mcp.core.upstream.session.OFFERS`), from its
    capabilities."""
    offers = set()
    if capabilities.prompts is not None:
        offers.add("prompts")
        if capabilities.prompts.list_changed:
            offers.add("prompts_changed")
    if capabilities.resources is not None:
        offers.add("resources")
        if capabilities.resources.subscribe:
            offers.add("subscribe")
        if capabilities.resources.list_changed:
            offers.add("resources_changed")
    if capabilities.completions is not None:
        offers.add("completions")
    if capabilities.logging is not None:
        offers.add("logging")
    return frozenset(offers)


def context_arguments(params: types.CompleteRequestParams) -> dict[str, str] | None:
    """The already-filled arguments of a completion request, when it has any."""
    return params.context.arguments if params.context is not None else None


def prompt_from_mcp(prompt: types.Prompt, source: str) -> PromptDefinition:
    """The domain definition of an upstream prompt, name unchanged (the provider prefixes it)."""
    return PromptDefinition(
        name=prompt.name,
        description=prompt.description or "",
        arguments=tuple(
            PromptArgument(name=a.name, description=a.description or "", required=bool(a.required))
            for a in prompt.arguments or ()
        ),
        source=source,
        title=prompt.title,
        meta=upstream_meta(prompt.meta),
        icons=icons_from_mcp(prompt.icons),
    )


def resource_from_mcp(resource: types.Resource | types.ResourceTemplate, source: str) -> ResourceDefinition:
    """The domain definition of an upstream resource or resource template, its URI (template) unchanged."""
    template = isinstance(resource, types.ResourceTemplate)
    return ResourceDefinition(
        uri=resource.uri_template if isinstance(resource, types.ResourceTemplate) else resource.uri,
        name=resource.name,
        description=resource.description or "",
        mime_type=resource.mime_type or "",
        source=source,
        template=template,
        title=resource.title,
        size=None if isinstance(resource, types.ResourceTemplate) else resource.size,
        meta=upstream_meta(resource.meta),
        icons=icons_from_mcp(resource.icons),
        annotations=(
            resource.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
            if resource.annotations is not None
            else None
        ),
    )


def contents_from_mcp(contents: types.TextResourceContents | types.BlobResourceContents) -> ToolContent:
    """One content of a read resource as a ``resource`` item."""
    if isinstance(contents, types.BlobResourceContents):
        return ToolContent(
            type="resource", uri=contents.uri, mime_type=contents.mime_type or "", data=contents.blob
        )
    return ToolContent(
        type="resource", uri=contents.uri, mime_type=contents.mime_type or "", text=contents.text
    )


_KNOWN_CONTENT_FIELDS = {"type", "text", "data", "mimeType", "uri", "name"}


def content_from_mcp(block: Any) -> ToolContent:
    """The domain item for an MCP content block; fields without a domain slot go to ``extra``."""
    if type(block) is types.TextContent and block.annotations is None and block.meta is None:
        return ToolContent(type="text", text=block.text)  # the common case, without a dump
    wire: dict[str, Any] = block.model_dump(by_alias=True, mode="json", exclude_none=True)
    kind = wire["type"]
    extra = {key: value for key, value in wire.items() if key not in _KNOWN_CONTENT_FIELDS}
    if kind == "resource":
        resource = dict(extra.pop("resource"))
        item = ToolContent(
            type="resource",
            uri=resource.pop("uri"),
            mime_type=resource.pop("mimeType", ""),
            text=resource.pop("text", ""),
            data=resource.pop("blob", ""),
        )
        if resource:
            extra["resource"] = resource
    else:
        item = ToolContent(
            type=kind,
            text=wire.get("text", ""),
            data=wire.get("data", ""),
            mime_type=wire.get("mimeType", ""),
            uri=wire.get("uri", ""),
            name=wire.get("name", ""),
        )
    if not extra:
        return item
    return ToolContent(
        type=item.type,
        text=item.text,
        data=item.data,
        mime_type=item.mime_type,
        uri=item.uri,
        name=item.name,
        extra=extra,
    )


def result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """The domain result for an upstream ``CallToolResult``: every item, flag and structured value."""
    return ToolResult(
        content=[content_from_mcp(block) for block in result.content],
        is_error=bool(result.is_error),
        structured_content=result.structured_content,
    )


async def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while process.poll() is None:
            await anyio.sleep(0.01)
    return process.poll() is not None


def _kill_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_process(process: subprocess.Popen[bytes], stdin: asyncio.StreamWriter) -> None:
    """Close stdin, then SIGTERM and SIGKILL the process group after short graces."""
    with contextlib.suppress(Exception):
        stdin.close()
    if not await _exited(process, STDIN_GRACE_SECONDS):
        _kill_group(process, signal.SIGTERM)
        if not await _exited(process, TERM_GRACE_SECONDS):
            _kill_group(process, signal.SIGKILL)
    _kill_group(process, signal.SIGKILL)  # whatever the server left in its group


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "it closed its stdout"
    if code < 0:
        try:
            return f"it was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"it was killed by signal {-code}"
    return f"it exited with code {code}"


async def _pipes(
    process: subprocess.Popen[bytes],
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader, asyncio.StreamReader, list[asyncio.BaseTransport]]:
    """The event loop's writer for the process's stdin, readers for its stdout and stderr, and
    the readers' transports (to close once the process is stopped).

    Both are read by the event loop itself, with no thread: a forwarded call's answer reaches
    the session without a hand-over between threads. The stdout reader holds at most about
    twice :data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES` before it stops reading.
    """
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(FlowControlMixin, process.stdin)
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    stdout = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    out, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), process.stdout)
    stderr = asyncio.StreamReader(limit=1 << 16)
    err, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), process.stderr)
    return stdin, stdout, stderr, [out, err]


async def _lines(stdout: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """Each non-empty line of ``stdout`` (stripped), ``None`` for one over the limit (then stops)."""
    while True:
        try:
            line = await stdout.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            yield None
            return
        except asyncio.IncompleteReadError as exc:  # EOF: a last line without its newline
            if exc.partial.strip():
                yield exc.partial.strip()
            return
        if line.strip():
            yield line.strip()


@contextlib.asynccontextmanager
async def _stdio_streams(
    spec: ServerSpec, cwd: str, transcript: Transcript, closed: anyio.Event
) -> AsyncIterator[Any]:
    env = child_environment()
    env.update(spec.env)
    key = launch_key(spec, env, cwd)
    process = claim(spec.name, key)
    if process is None:
        try:
            process = spawn(
                spec.command,
                spec.args,
                env,
                cwd,
                server=spec.name,
                sandbox=spec.sandbox,
                named=tuple(spec.env),
            )
        except OSError as exc:
            reason = f"could not start '{spec.command}': {exc.strerror}" if exc.strerror else str(exc)
            raise UpstreamFailure(spec.redact(reason)) from None
    stdin, stdout, stderr, readers = await _pipes(process)

    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](16)
    prefix = f"[{spec.name}]"

    async def pump_stdout() -> None:
        try:
            async with to_session:
                async for line in _lines(stdout):
                    if line is None:
                        transcript.fault = f"it sent a message over the {MAX_MESSAGE_BYTES}-byte limit"
                        log.warning("%s %s; closing the connection", prefix, transcript.fault)
                        return
                    await deliver(line)
                # EOF: say how the process ended before the session learns that the connection did.
                await _exited(process, 0.2)
                transcript.exit = _describe_exit(process.returncode)
        finally:
            closed.set()

    async def deliver(line: bytes) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:
            shown = spec.redact(line[:200].decode("utf-8", "replace"))
            transcript.fault = f"it printed a line that is not JSON-RPC on stdout: {shown!r}"
            log.warning("%s %s", prefix, transcript.fault)
            return
        await to_session.send(SessionMessage(message))

    async def pump_stdin() -> None:
        async with from_session:
            async for session_message in from_session:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except (ConnectionError, OSError, RuntimeError):
                    return

    async def pump_stderr() -> None:
        pending = b""
        while chunk := await stderr.read(65536):
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-STDERR_LINE_CHARS:]
            for raw in lines:
                line = spec.redact(raw[:STDERR_LINE_CHARS].decode("utf-8", "replace").rstrip())
                if line:
                    transcript.stderr_tail.append(line)
                    log.info("%s %s", prefix, line)

    async with anyio.create_task_group() as group:
        group.start_soon(pump_stdout)
        group.start_soon(pump_stdin)
        group.start_soon(pump_stderr)
        try:
            yield session_reads, session_writes
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process(process, stdin)
            for reader in readers:  # one paused by an over-long line never reads its EOF
                reader.close()
            group.cancel_scope.cancel()


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
async def _http_streams(
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


async def _on_message(transcript: Transcript, connection: list[UpstreamConnection], message: Any) -> None:
    """The session's ``message_handler``: transport errors and the server's notifications."""
    this = connection[0] if connection else None
    if isinstance(message, types.ToolListChangedNotification):
        if this is not None and this.on_tools_changed is not None:
            this.on_tools_changed()
    elif isinstance(message, types.PromptListChangedNotification | types.ResourceListChangedNotification):
        if this is not None and this.on_offerings_changed is not None:
            prompts = isinstance(message, types.PromptListChangedNotification)
            this.on_offerings_changed("prompts" if prompts else "resources")
    elif isinstance(message, types.ResourceUpdatedNotification):
        if this is not None and this.on_resource_updated is not None:
            this.on_resource_updated(message.params.uri)
    elif isinstance(message, types.LoggingMessageNotification):
        if this is not None and this.on_log is not None:
            this.on_log(message.params.level, message.params.logger, message.params.data)
    elif isinstance(message, Exception):
        text = str(message).strip().splitlines()[0] if str(message).strip() else ""
        transcript.fault = transcript.spec.redact(
            f"{type(message).__name__}: {text}" if text else repr(message)
        )
        log.debug("[%s] transport error: %s", transcript.spec.name, transcript.fault)


@contextlib.asynccontextmanager
async def connect(spec: ServerSpec, cwd: str, auth: Any = None) -> AsyncIterator[UpstreamConnection]:
    """Open ``spec`` (in ``cwd`` for a stdio server) and yield the connection, before its handshake.

    AUTH: the SDK's OAuth provider to use (``servers login`` passes its own); by default an
    ``auth = "oauth"`` server gets :func:`awf_mcp.wire.oauth.serving_auth`, which never asks a
    person. Raises :class:`~awf_mcp.core.upstream.UpstreamFailure` with a redacted sentence when
    the server cannot be started (or needs sign-in).
    """
    transcript = Transcript(spec)
    closed = anyio.Event()
    streams = (
        _http_streams(spec, transcript, closed, auth)
        if spec.url
        else _stdio_streams(spec, cwd, transcript, closed)
    )
    opened: list[UpstreamConnection] = []

    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await _answer(opened, "sampling/createMessage", params)

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await _answer(opened, "elicitation/create", params)

    async def list_roots(context: ClientRequestContext) -> Any:
        return await _answer(opened, "roots/list", None)

    async with streams as (reads, writes):
        session = _OfferingSession(
            reads,
            writes,
            client_info=types.Implementation(name="awf-mcp", version=__version__),
            message_handler=lambda message: _on_message(transcript, opened, message),
            sampling_callback=sample,
            elicitation_callback=elicit,
            list_roots_callback=list_roots,
        )
        async with session:
            opened.append(UpstreamConnection(spec, session, transcript, closed))
            yield opened[0]
