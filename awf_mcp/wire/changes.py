"""Telling clients that a served list changed, on every protocol family.

* Up to 2025-11-25 (``initialize``, on stdio and on each Streamable HTTP session), a
  ``notifications/<kind>/list_changed`` goes to each connection that listed that kind
  (:class:`ListedBy`: the latest :data:`LISTED_BY_LIMIT`) on its own channel: stdout, or the
  HTTP session's standalone GET stream. A client that does not read holds up no other (one
  second each), and one gone meanwhile is forgotten.
* On the stateless revision (2026-07-28), ``subscriptions/listen`` is served by the SDK's
  :class:`ListenHandler` (:class:`ListenStreams`: at most :data:`LISTEN_LIMIT` streams at
  once, all clients together); each stream that asked for a kind of change gets its
  notification on its own response stream. At shutdown (stdin EOF, HTTP stop) the open
  streams end with their result and new ones are refused.
* A stream's ``resourceSubscriptions`` (the URIs whose ``notifications/resources/updated`` it
  wants) are what that revision has instead of ``resources/subscribe``: when a
  :class:`StreamSubscriptions` is given, each URI is subscribed for the stream before its
  acknowledgement, which honors only the URIs subscribed (a URI refused is left out of it), and
  the stream's subscriptions end with it.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from awf_mcp.errors import describe_exception

log = logging.getLogger("awf_mcp.wire.server")

LISTED_BY_LIMIT = 64
"""How many handshake-era connections (HTTP sessions) are told of a change of one kind: the latest
to list it."""

LISTEN_LIMIT = 64
"""How many ``subscriptions/listen`` streams may be open at once, all clients together."""

STREAM_END_SECONDS = 5.0
"""How long ending a closed stream's subscriptions (unsubscribing upstream) may take."""


class ListedBy:
    """The handshake-era connections that listed one kind of item (tools, prompts, resources)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._sessions: dict[int, tuple[Any, Any]] = {}

    def note(self, ctx: ServerRequestContext[Any]) -> None:
        """Remember the connection of this list request (the stateless revision listens instead)."""
        connection = ctx.session.client_params  # one per handshake-era connection
        if connection is None or ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        self._sessions.pop(id(connection), None)
        self._sessions[id(connection)] = (connection, ctx.session)
        while len(self._sessions) > LISTED_BY_LIMIT:
            self._sessions.pop(next(iter(self._sessions)))

    def __len__(self) -> int:
        return len(self._sessions)

    async def tell(self) -> None:
        """Send ``notifications/<kind>/list_changed`` to each connection noted."""
        async with anyio.create_task_group() as group:
            for key, (_, session) in list(self._sessions.items()):
                group.start_soon(self._tell, key, session)

    async def _tell(self, key: int, session: Any) -> None:
        try:
            with anyio.move_on_after(1.0):  # a client that does not read holds up no other
                await getattr(session, f"send_{self.kind[:-1]}_list_changed")()  # on its own channel
        except Exception as exc:  # a client gone meanwhile
            self._sessions.pop(key, None)
            log.debug("%s/list_changed not sent: %s", self.kind, describe_exception(exc))


class StreamSubscriptions(Protocol):
    """Subscribes a listen stream to resource updates (see the module docstring)."""

    async def subscribe_stream(self, stream: object, uris: list[str]) -> list[str]:
        """Subscribe ``stream`` (a key of its own) to ``uris``; the URIs subscribed."""
        ...

    async def end_stream(self, stream: object) -> None:
        """End every subscription of ``stream``."""
        ...


class ListenStreams:
    """The open ``subscriptions/listen`` streams; see the module docstring."""

    def __init__(self) -> None:
        self._bus = InMemorySubscriptionBus()
        self._handler = ListenHandler(self._bus, max_subscriptions=LISTEN_LIMIT)
        self._open = 0
        self._ended = False
        self.subscriptions: StreamSubscriptions | None = None
        """Who subscribes a stream's ``resourceSubscriptions`` (``None``: none are honored)."""

    async def publish(self, event: ServerEvent) -> None:
        """Tell every stream that asked for ``event``'s kind."""
        await self._bus.publish(event)

    async def __call__(
        self, ctx: ServerRequestContext[Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        if self._ended:  # a stream opened now would hold up the exit
            raise MCPError(code=types.INTERNAL_ERROR, message="the server is shutting down")
        if self._open >= LISTEN_LIMIT:
            raise MCPError(
                code=types.INTERNAL_ERROR,
                message=f"{self._open} subscriptions/listen streams are open, the most awf-mcp "
                "serves at once; end one before listening again",
            )
        self._open += 1
        stream = object()
        try:
            wanted = params.notifications.resource_subscriptions
            if wanted:
                honored = (
                    await self.subscriptions.subscribe_stream(stream, wanted) if self.subscriptions else []
                )
                notifications = params.notifications.model_copy(
                    update={"resource_subscriptions": honored or None}
                )
                params = params.model_copy(update={"notifications": notifications})
            return await self._handler(ctx, params)
        finally:
            self._open -= 1
            if self.subscriptions is not None:
                with anyio.CancelScope(shield=True), anyio.move_on_after(STREAM_END_SECONDS):
                    await self.subscriptions.end_stream(stream)

    def end(self) -> None:
        """End every open stream with its result; refuse new ones (shutdown)."""
        self._ended = True
        self._handler.close()
