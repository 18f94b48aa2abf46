"""Prompts, resources, completions, subscriptions and log messages on the wire, beside the tools.

:func:`serve_offerings` registers, on the SDK's server, the handlers of what the
:class:`~awf_mcp.core.catalog.Catalog` offers, and only that (so a server with nothing to
offer advertises what it did before): ``prompts/list`` and ``prompts/get`` when some provider
offers prompts; ``resources/list``, ``resources/templates/list`` and ``resources/read`` when
some offers resources, with ``resources/subscribe`` and ``unsubscribe`` when one offers
subscriptions; ``completion/complete`` when one offers completions; ``logging/setLevel`` when
one offers logging.

* Lists are paged (:data:`~awf_mcp.core.catalog.PAGE_ITEMS` items a page; the cursor is
  awf-mcp's own, and one it did not give is ``-32602``).
* ``prompts/get`` and ``resources/read`` run through the call path (the catalog's), each with its
  :class:`~awf_mcp.wire.channel.ClientChannel` as a tool call has: an upstream's sampling or
  elicitation request meanwhile reaches the agent on the back-channel, or as ``input_required``
  on the stateless revision; a failure
  (unknown name or URI, a policy's denial, a timeout, the provider's error) is a JSON-RPC error
  with its sentence, and so is a result over the frame limit.
* A change of prompts or resources is told as the tools' is (:mod:`awf_mcp.wire.changes`):
  ``notifications/<kind>/list_changed`` to the handshake-era connections that listed them,
  and the event to the ``subscriptions/listen`` streams.
* ``notifications/resources/updated`` goes to the connections subscribed to the URI (and as
  an event to listen streams); on the stateless revision a listen stream's
  ``resourceSubscriptions`` are subscribed for it (:meth:`OfferingHandlers.subscribe_stream`,
  under the catalog's bounds) and end with it. ``notifications/message`` of a provider goes to
  the connections that set a log level (the latest
  :data:`~awf_mcp.wire.changes.LISTED_BY_LIMIT`, each at its level and above), its ``logger``
  marked with the server's name (``<server>`` or ``<server>/<logger>``); on the stateless
  revision it rides the request that asked for it instead (:mod:`awf_mcp.wire.channel`). At most
  :data:`MAX_PENDING_NOTICES` of these wait to be sent at once; more are dropped (a provider
  flooding them cannot grow awf-mcp's memory).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Hashable
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from awf_mcp.core.catalog import MAX_CLIENT_SUBSCRIPTIONS, Catalog, UnknownResourceError, page
from awf_mcp.core.clientchannel import LOG_LEVELS
from awf_mcp.errors import UnknownToolError, describe_exception
from awf_mcp.ports import InputRequired, visible_text
from awf_mcp.wire.changes import LISTED_BY_LIMIT, ListedBy, ListenStreams
from awf_mcp.wire.channel import ClientChannel, call_origin, session_key
from awf_mcp.wire.mapping import (
    prompt_result_to_mcp,
    prompt_to_mcp,
    read_result_to_mcp,
    resource_to_mcp,
    template_to_mcp,
)

log = logging.getLogger("awf_mcp.wire.server")

MAX_PENDING_NOTICES = 256
"""How many resource-updated and log notifications may wait to be sent at once."""
MAX_COMPLETION_VALUES = 100


def _cursor(params: types.PaginatedRequestParams | None) -> str | None:
    return params.cursor if params is not None else None


def _paged(items: list[Any], params: types.PaginatedRequestParams | None) -> tuple[list[Any], str | None]:
    try:
        return page(items, _cursor(params))
    except ValueError as exc:
        raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None


class OfferingHandlers:
    """The handlers of one server's prompts and resources; see the module docstring."""

    def __init__(self, catalog: Catalog, listen: ListenStreams) -> None:
        self.catalog = catalog
        self.listen = listen
        self.prompts_listed_by = ListedBy("prompts")
        self.resources_listed_by = ListedBy("resources")
        self._log_sessions: dict[int, tuple[Any, str]] = {}
        """The connections that set a log level, with it (the latest :data:`LISTED_BY_LIMIT`)."""
        self._subscriber_sessions: dict[Hashable, Any] = {}
        """The latest SDK session of each subscribed client (stdio: the one; HTTP: per session id)."""
        self._pending: set[asyncio.Task[None]] = set()
        catalog.watch(self.notify_changed)
        catalog.update_listeners.append(self._updated)
        catalog.log_listeners.append(self._logged)
        if "subscribe" in catalog.offers:
            listen.subscriptions = self

    def register(self, server: Server[Any]) -> frozenset[str]:
        """Register the handlers of what the catalog offers on ``server``; return the capabilities
        that are answered but not to be advertised.

        What nothing offers still has its list methods answered, with an empty list: the spec
        allows ``-32601``, but some clients (the Inspector CLI, langchain's session) fail on it.
        """
        offers = self.catalog.offers
        unadvertised: set[str] = set()
        if "prompts" in offers:
            server.add_request_handler("prompts/list", types.PaginatedRequestParams, self._list_prompts)
            server.add_request_handler("prompts/get", types.GetPromptRequestParams, self._get_prompt)
        else:
            server.add_request_handler("prompts/list", types.PaginatedRequestParams, _no_prompts)
            unadvertised.add("prompts")
        if "resources" not in offers:
            server.add_request_handler("resources/list", types.PaginatedRequestParams, _no_resources)
            server.add_request_handler(
                "resources/templates/list", types.PaginatedRequestParams, _no_templates
            )
            unadvertised.add("resources")
        if "resources" in offers:
            server.add_request_handler("resources/list", types.PaginatedRequestParams, self._list_resources)
            server.add_request_handler(
                "resources/templates/list", types.PaginatedRequestParams, self._list_templates
            )
            server.add_request_handler("resources/read", types.ReadResourceRequestParams, self._read)
            if "subscribe" in offers:
                server.add_request_handler(
                    "resources/subscribe", types.SubscribeRequestParams, self._subscribe
                )
                server.add_request_handler(
                    "resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe
                )
        if "completions" in offers and ("prompts" in offers or "resources" in offers):
            server.add_request_handler("completion/complete", types.CompleteRequestParams, self._complete)
        if "logging" in offers:
            server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, self._set_level)
        return frozenset(unadvertised)

    @property
    def can_change(self) -> bool:
        """True when some provider may change its prompts or resources."""
        return bool({"prompts_changed", "resources_changed"} & self.catalog.offers)

    # ------------------------------------------------------------------ prompts

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self.prompts_listed_by.note(ctx)
        prompts, cursor = _paged(self.catalog.prompts(), params)
        return types.ListPromptsResult(prompts=[prompt_to_mcp(p) for p in prompts], next_cursor=cursor)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        channel = ClientChannel(ctx, params)
        try:
            result = await self.catalog.get_prompt(
                params.name,
                params.arguments or {},
                **call_origin(ctx, channel),
            )
        except InputRequired as question:
            return channel.input_required(question)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        return prompt_result_to_mcp(result, params.name)

    # ------------------------------------------------------------------ resources

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self.resources_listed_by.note(ctx)
        resources, cursor = _paged(self.catalog.resources(), params)
        return types.ListResourcesResult(
            resources=[resource_to_mcp(r) for r in resources], next_cursor=cursor
        )

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self.resources_listed_by.note(ctx)
        templates, cursor = _paged(self.catalog.templates(), params)
        return types.ListResourceTemplatesResult(
            resource_templates=[template_to_mcp(t) for t in templates], next_cursor=cursor
        )

    async def _read(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        channel = ClientChannel(ctx, params)
        try:
            result = await self.catalog.read_resource(
                params.uri,
                **call_origin(ctx, channel),
            )
        except InputRequired as question:
            return channel.input_required(question)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        return read_result_to_mcp(result, params.uri)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        who = session_key(ctx)
        if who is None:
            raise MCPError(
                code=types.INVALID_PARAMS, message="subscribe through subscriptions/listen on this revision"
            )
        self._subscriber_sessions[who] = ctx.session
        try:
            await self.catalog.subscribe(params.uri, who, on=True)
        except UnknownResourceError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        who = session_key(ctx)
        if who is not None:
            await self.catalog.subscribe(params.uri, who, on=False)
        return types.EmptyResult()

    async def subscribe_stream(self, stream: object, uris: list[str]) -> list[str]:
        """Subscribe a ``subscriptions/listen`` stream to ``uris`` (the stateless revision's
        subscriptions): the first :data:`~awf_mcp.core.catalog.MAX_CLIENT_SUBSCRIPTIONS` distinct
        ones are tried; the URIs subscribed (those refused are left out, with one log line)."""
        honored: list[str] = []
        refused: list[str] = []
        distinct = list(dict.fromkeys(uris))
        if len(distinct) > MAX_CLIENT_SUBSCRIPTIONS:  # only the first are tried
            refused.append(
                f"{len(distinct):,} URIs, more than the {MAX_CLIENT_SUBSCRIPTIONS} one client holds"
            )
        for uri in distinct[:MAX_CLIENT_SUBSCRIPTIONS]:
            try:
                await self.catalog.subscribe(uri, stream, on=True, ends_itself=True)
            except UnknownResourceError as exc:
                refused.append(exc.message)
                continue
            honored.append(uri)
        if refused:
            log.info(
                "a listen stream's subscriptions: %d of %d refused (the first: %s)",
                len(distinct) - len(honored),
                len(distinct),
                refused[0][:300],
            )
        return honored

    async def end_stream(self, stream: object) -> None:
        """End the subscriptions of a ``subscriptions/listen`` stream that ended."""
        await self.catalog.forget(stream)

    # ------------------------------------------------------------------ completion and logging

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        request = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        request.pop("_meta", None)
        try:
            completion = await self.catalog.complete(request)
            values = [v for v in completion.get("values", []) if isinstance(v, str)][:MAX_COMPLETION_VALUES]
            answer = types.Completion(
                values=[visible_text(v) for v in values],
                total=completion.get("total") if isinstance(completion.get("total"), int) else None,
                has_more=completion.get("hasMore") if isinstance(completion.get("hasMore"), bool) else None,
            )
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        except ValidationError:
            raise MCPError(code=types.INTERNAL_ERROR, message="the completion is malformed") from None
        except Exception as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=visible_text(describe_exception(exc))) from None
        return types.CompleteResult(completion=answer)

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        connection = (
            ctx.session.client_params
        )  # one per handshake-era connection (the session is per request)
        key = id(connection) if connection is not None else id(ctx.session)
        self._log_sessions.pop(key, None)
        self._log_sessions[key] = (ctx.session, params.level)
        while len(self._log_sessions) > LISTED_BY_LIMIT:
            self._log_sessions.pop(next(iter(self._log_sessions)))
        await self.catalog.set_logging_level(params.level)
        return types.EmptyResult()

    # ------------------------------------------------------------------ telling the clients

    async def notify_changed(self, kind: str) -> None:
        """Tell the clients that the served ``kind`` (``prompts`` or ``resources``) changed."""
        if kind == "prompts":
            await self.listen.publish(PromptsListChanged())
            await self.prompts_listed_by.tell()
        else:
            await self.listen.publish(ResourcesListChanged())
            await self.resources_listed_by.tell()

    def _soon(self, send: Any) -> None:
        """Send one notification in a task of its own; dropped when too many wait already."""
        if len(self._pending) >= MAX_PENDING_NOTICES:
            send.close()
            return
        task = asyncio.get_running_loop().create_task(self._guarded(send))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    @staticmethod
    async def _guarded(send: Any) -> None:
        try:
            with anyio.move_on_after(1.0):  # a client that does not read holds up no other
                await send
        except Exception as exc:  # a client gone meanwhile
            log.debug("notification not sent: %s", describe_exception(exc))

    def _updated(self, uri: str) -> None:
        self._soon(self.listen.publish(ResourceUpdated(uri=uri)))
        for who in self.catalog.subscribers(uri):
            session = self._subscriber_sessions.get(who)
            if session is not None:
                self._soon(session.send_resource_updated(uri))

    def _logged(self, level: str, logger: str, data: Any) -> None:
        if level not in LOG_LEVELS:
            return
        for session, wanted in list(self._log_sessions.values()):
            if LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted):
                self._soon(session.send_log_message(level, data, logger=visible_text(logger)))


async def _no_prompts(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[])


async def _no_resources(_ctx: Any, _params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[])


async def _no_templates(
    _ctx: Any, _params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[])
