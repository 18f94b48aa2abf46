"""What a connection to an upstream server offers the core, and how it fails.

The core does not speak MCP: it is given a :data:`Connect` function (the CLI runtime
passes :func:`awf_mcp.wire.client.connect`) that opens a
:class:`~awf_mcp.core.servers.ServerSpec` and yields an :class:`UpstreamSession` speaking
domain types. What the connection advertises to the server as its client is a
:data:`ClientOffer` (:func:`offer_from` the agent's declared capabilities).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Literal, Protocol

import anyio

from awf_mcp.core.servers import ServerSpec
from awf_mcp.ports import (
    PromptDefinition,
    ResourceDefinition,
    ToolDefinition,
    ToolError,
    ToolResult,
)

log = logging.getLogger("awf_mcp.upstream")

ProgressCallback = Callable[[float, "float | None", "str | None"], None]

OfferingKind = Literal["prompts", "resources", "templates"]
"""What a server may offer besides tools: prompts, resources, resource templates."""

OfferedItem = PromptDefinition | ResourceDefinition

OFFERS = (
    "prompts",
    "prompts_changed",
    "resources",
    "resources_changed",
    "subscribe",
    "completions",
    "logging",
)
"""What :attr:`UpstreamSession.offers` may hold, from the server's capabilities."""


class UpstreamFailure(ToolError):
    """A sentence saying what went wrong with an upstream server (already redacted)."""


class UpstreamNeedsSignIn(UpstreamFailure):
    """An ``auth = "oauth"`` server asked for a sign-in awf-mcp does not hold (none stored, or refused)."""


class UpstreamGone(UpstreamFailure):
    """The connection ended; the message says how (exit code, signal, fault)."""


class UpstreamSignedOut(UpstreamGone, UpstreamNeedsSignIn):
    """The connection ended because the server refused the sign-in awf-mcp held (revoked, or
    expired and its refresh refused)."""


class UpstreamRequestRefused(Exception):
    """A request from an upstream server that awf-mcp does not answer; the message says why."""

    def __init__(self, message: str, *, unsupported: bool = False) -> None:
        super().__init__(message)
        self.unsupported = unsupported
        """True when the request is one the client does not support (the agent lacks it)."""


ClientOffer = Mapping[str, Mapping[str, Any]]
"""The client capabilities a connection advertises upstream: keys among ``sampling``,
``elicitation`` and ``roots``, each the JSON object the agent declared for it."""

NO_OFFER: ClientOffer = {}

RequestAnswerer = Callable[[str, Mapping[str, Any]], Awaitable[Mapping[str, Any]]]
"""Answers one request of a server (``method``, ``params``, as on the wire) with its result, or
raises :class:`UpstreamRequestRefused`."""


def offer_from(declared: Mapping[str, Any] | None) -> ClientOffer:
    """What to advertise upstream for an agent that declared client capabilities ``declared``."""
    if not isinstance(declared, Mapping):
        return NO_OFFER
    offer: dict[str, Mapping[str, Any]] = {
        feature: dict(declared[feature])
        for feature in ("sampling", "elicitation")
        if isinstance(declared.get(feature), Mapping)
    }
    if isinstance(declared.get("roots"), Mapping):
        offer["roots"] = {"listChanged": True}  # awf-mcp's own roots, whose changes it announces
    return offer


class UpstreamSession(Protocol):
    """What :data:`Connect` yields: a live connection speaking domain types."""

    closed: anyio.Event
    instructions: str | None
    on_tools_changed: Callable[[], None] | None
    """Called (synchronously, from the session's reader) for each ``tools/list_changed``."""
    on_request: RequestAnswerer | None
    """Answers the server's requests (each in a task of its own); ``None`` refuses them."""

    async def roots_changed(self) -> None:
        """Send the server ``notifications/roots/list_changed``."""
        ...

    def reason(self) -> str:
        """Why the connection ended, or what went wrong on it."""
        ...

    async def handshake(self, offer: ClientOffer) -> None:
        """The MCP ``initialize`` exchange advertising ``offer``; raises :class:`UpstreamFailure`."""
        ...

    def tool_pages(self) -> AsyncGenerator[list[ToolDefinition], None]:
        """The server's tools under its own names, one page at a time (each page is asked for when
        the previous one was taken, none after the caller stops); raises :class:`UpstreamFailure`."""
        ...

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressCallback | None
    ) -> ToolResult:
        """Forward one call; raises :class:`UpstreamGone` when the connection dies."""
        ...

    offers: frozenset[str]
    """What the server offers besides tools (among :data:`OFFERS`), known after the handshake."""
    on_offerings_changed: Callable[[str], None] | None
    """Called (synchronously, from the session's reader) with ``prompts`` or ``resources`` for each
    ``list_changed`` of those."""
    on_resource_updated: Callable[[str], None] | None
    """Called (synchronously) with the URI of each ``notifications/resources/updated``."""
    on_log: Callable[[str, str | None, Any], None] | None
    """Called (synchronously) with the level, logger and data of each ``notifications/message``."""

    def item_pages(self, kind: OfferingKind) -> AsyncGenerator[list[OfferedItem], None]:
        """The server's prompts, resources or templates, one page at a time, as :meth:`tool_pages`."""
        ...

    async def get_prompt(self, name: str, arguments: Mapping[str, str]) -> ToolResult:
        """Get one prompt (see :class:`~awf_mcp.ports.PromptDefinition`); raises :class:`UpstreamGone`."""
        ...

    async def read_resource(self, uri: str) -> ToolResult:
        """Read one resource (:class:`~awf_mcp.ports.ResourceDefinition`); raises :class:`UpstreamGone`."""
        ...

    async def complete(self, request: Mapping[str, Any]) -> Mapping[str, Any]:
        """The ``completion`` for a ``completion/complete`` request (its wire params, the server's own
        names); raises :class:`UpstreamFailure`."""
        ...

    async def subscribe(self, uri: str, on: bool) -> None:
        """Subscribe to (``on``) or unsubscribe from updates of ``uri``; raises :class:`UpstreamFailure`."""
        ...

    async def set_logging_level(self, level: str) -> None:
        """Ask for log messages at ``level`` and above; raises :class:`UpstreamFailure`."""
        ...


Connect = Callable[[ServerSpec, str], AbstractAsyncContextManager[UpstreamSession]]
"""Opens a server (the ``str`` is the working directory for a stdio server)."""

SignIn = Callable[[ServerSpec, Callable[[str], None]], Awaitable[None]]
"""Signs in to an ``auth = "oauth"`` server without opening a browser: gives the authorization URL
to the callable, waits for the redirect on a loopback callback of its own and stores the tokens;
raises :class:`UpstreamFailure` with one sentence (the CLI runtime passes
:func:`awf_mcp.wire.oauthsignin.sign_in_without_browser`)."""
