"""The SDK client adapter: one connection to an upstream MCP server, in domain types.

Purpose
-------
:func:`connect` is the ``Connect`` function :mod:`awf_mcp.core.upstream` is given by the CLI
runtime: it opens a :class:`~awf_mcp.core.servers.ServerSpec` and yields an
:class:`~awf_mcp.wire.clientsession.UpstreamConnection`, before its handshake, that lists
tools and forwards calls, returning :class:`~awf_mcp.ports.ToolDefinition` and
:class:`~awf_mcp.ports.ToolResult`.

Where things are
----------------
* :mod:`awf_mcp.wire.clientsession`  the connection: handshake, listing a page at a time,
  forwarding calls, prompts, reads, completions, subscriptions;
* :mod:`awf_mcp.wire.clientmapping`  the upstream's wire types as domain types;
* :mod:`awf_mcp.wire.clientstdio`    a server with a ``command``: its process and pipes;
* :mod:`awf_mcp.wire.clienthttp`     a server with a ``url``: Streamable HTTP or SSE, and why a
  request failed;
* :mod:`awf_mcp.wire.oauth`          the stored OAuth tokens an ``auth = "oauth"`` server is
  served with (:mod:`awf_mcp.wire.oauthsignin`: ``servers login``).

Secrets
-------
Every message these modules log or raise passes through :meth:`ServerSpec.redact`.

Upstream requests
-----------------
The handshake advertises the :data:`~awf_mcp.core.upstream.ClientOffer` it is given
(:meth:`~awf_mcp.wire.clientsession.UpstreamConnection.handshake`): the ``sampling``,
``elicitation`` and ``roots`` objects exactly as given (``roots`` is awf-mcp's own, with
``listChanged``: :meth:`~awf_mcp.wire.clientsession.UpstreamConnection.roots_changed` sends
the notification), and no other client capability, whatever callbacks the session holds.
:func:`offer_from_first_message` reads that offer from the agent's first message
(``initialize``'s ``capabilities``, or the client-capabilities ``_meta`` of a 2026-07-28
request). The server's ``roots/list``, ``sampling/createMessage`` and ``elicitation/create`` go
to the connection's ``on_request`` (set by :class:`~awf_mcp.core.upstream.UpstreamProvider`) as
JSON objects; its result goes back as the SDK's result type, and an
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
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientRequestContext
from pydantic import BaseModel, ValidationError

from awf_mcp import __version__
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream import NO_OFFER, ClientOffer, UpstreamRequestRefused, offer_from
from awf_mcp.wire.clienthttp import http_streams
from awf_mcp.wire.clientsession import OfferingSession, Transcript, UpstreamConnection
from awf_mcp.wire.clientstdio import stdio_streams

log = logging.getLogger("awf_mcp.upstream")


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
        http_streams(spec, transcript, closed, auth)
        if spec.url
        else stdio_streams(spec, cwd, transcript, closed)
    )
    opened: list[UpstreamConnection] = []

    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        return await _answer(opened, "sampling/createMessage", params)

    async def elicit(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
        return await _answer(opened, "elicitation/create", params)

    async def list_roots(context: ClientRequestContext) -> Any:
        return await _answer(opened, "roots/list", None)

    async with streams as (reads, writes):
        session = OfferingSession(
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
