"""A live client session with one upstream server, speaking domain types: :class:`UpstreamConnection`.

Contract
--------
:func:`awf_mcp.wire.client.connect` yields an :class:`UpstreamConnection` over the SDK's
:class:`ClientSession` (an :class:`OfferingSession`); the provider
(:class:`~awf_mcp.core.upstream.UpstreamProvider`) then runs its handshake, lists and forwards
through it. Upstream wire types are read by :mod:`awf_mcp.wire.clientmapping`.

* The handshake advertises the :data:`~awf_mcp.core.upstream.ClientOffer` it is given
  (:meth:`UpstreamConnection.handshake`), and no other client capability, whatever callbacks
  the session holds (:class:`OfferingSession`).
* A ``tools/list`` of more than :data:`MAX_LISTED_TOOLS` tools or :data:`MAX_LIST_PAGES`
  pages fails, so a server that pages forever cannot grow awf-mcp's memory without bound.
  Pages are read one at a time as the provider takes them
  (:meth:`UpstreamConnection.tool_pages`), so its byte bounds stop the listing early.

Prompts and resources
---------------------
:attr:`UpstreamConnection.offers` says what the server advertised besides tools
(:func:`~awf_mcp.wire.clientmapping.offers_of`). :meth:`UpstreamConnection.item_pages` lists
prompts, resources or templates a page at a time (at most :data:`MAX_LIST_PAGES` pages);
``get_prompt``, ``read_resource``, ``complete``, ``subscribe`` and ``set_logging_level`` forward
one request each. A prompt comes back as a :class:`~awf_mcp.ports.ToolResult` of its messages
(roles in ``structured_content``), a read as ``resource`` items; the server's JSON-RPC error is
an ``isError`` result (or :class:`~awf_mcp.core.upstream.UpstreamFailure`), a dead connection
:class:`~awf_mcp.core.upstream.UpstreamGone` (:class:`~awf_mcp.core.upstream.UpstreamSignedOut`
when an ``auth = "oauth"`` server ended it by refusing the sign-in: a token revoked, or expired
and its refresh refused).

What went wrong on a connection is kept in its :class:`Transcript` (written by the transports,
:mod:`awf_mcp.wire.clientstdio` and :mod:`awf_mcp.wire.clienthttp`), read as one redacted
sentence (:meth:`ServerSpec.redact`).
"""

from __future__ import annotations

import contextlib
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from awf_mcp.core.servers import ServerSpec
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
    UpstreamSignedOut,
)
from awf_mcp.ports import PROMPT_ROLES, ToolDefinition, ToolResult
from awf_mcp.wire.clientmapping import (
    content_from_mcp,
    contents_from_mcp,
    context_arguments,
    offers_of,
    prompt_from_mcp,
    resource_from_mcp,
    result_from_mcp,
    tool_from_mcp,
)

log = logging.getLogger("awf_mcp.upstream")

STDERR_TAIL_LINES = 5
"""How many of a stdio server's last stderr lines are kept for the reason of a failure."""
MAX_LISTED_TOOLS = 10_000
"""More tools than this from one server (a listing that never ends, say) fail the listing."""
MAX_LIST_PAGES = 1_000


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


class OfferingSession(ClientSession):
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


class UpstreamConnection:
    """A live MCP client session with one upstream server, speaking domain types."""

    def __init__(
        self, spec: ServerSpec, session: OfferingSession, transcript: Transcript, closed: anyio.Event
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
