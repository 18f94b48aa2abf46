"""The SDK adapter: awf-mcp's tools served over MCP by the official Python SDK.

Purpose
-------
With the modules beside it and the client adapter (:mod:`awf_mcp.wire` lists them), the only
code that imports the SDK (``mcp``, ``mcp_types``). It
maps the domain ports to MCP wire types and lets the SDK do the protocol: the handshake and
version negotiation (every version the SDK serves, 2024-11-05 through 2025-11-25 and the 2026
era), request dispatch, ``ping``, cancellation, progress. Swapping SDK versions touches the
``wire`` package only.

Where things are
----------------
* :mod:`awf_mcp.wire.mapping`  domain types to wire types, within the frame limit;
* :mod:`awf_mcp.wire.channel`  the client channel: a call asking its client (roots,
  confirmation, sampling), on the back-channel or by ``input_required``;
* :mod:`awf_mcp.wire.changes`  ``list_changed`` to handshake-era connections, and the
  stateless revision's ``subscriptions/listen`` streams;
* :mod:`awf_mcp.wire.offerings`  prompts, resources, completions, subscriptions and log
  messages (what the :class:`~awf_mcp.core.catalog.Catalog` offers, and only that);
* :mod:`awf_mcp.wire.stdio`    one client over stdio: framing errors, the in-flight cap;
* :mod:`awf_mcp.wire.http`     Streamable HTTP: token, Host/Origin checks, shutdown.

The transports take the server as a :class:`~awf_mcp.wire.served.ServedServer` (the SDK server
and :meth:`McpServer.end_listen_streams`), so they do not import this module.

Public surface
--------------
``McpServer(invoker, name=..., version=..., instructions=..., state_keys=...)``
    ``state_keys``       the keys sealing the stateless revision's ``request_state``
                         (:mod:`awf_mcp.state.statekey`: the first seals, all open); none: a
                         key made at start-up, held by this process only;
    ``sdk_server``       the SDK's low-level :class:`mcp.server.Server` (a
                         :class:`ToolsServer`; for in-memory tests and other transports);
    ``serve_stdio(wire)``  serve one client over the claimed stdio descriptors
                         (:func:`awf_mcp.wire.stdio.serve_stdio`) until EOF or cancellation;
    ``notify_tools_changed()``  serve the registry's current tools and tell the
                         clients (awaited by the registry after a re-merge): handshake-era
                         connections that listed them, and ``subscriptions/listen``
                         streams; see :class:`ToolsServer` for what is advertised;
    ``reconfigured(instructions)``  after a live reload (``reloadable=True``: the lists are
                         advertised as changing), serve what the catalog offers now;
    ``end_listen_streams()``  end the open listen streams with their result (at
                         stdin EOF and at HTTP shutdown).

Errors
------
:class:`~awf_mcp.errors.UnknownToolError` becomes JSON-RPC error ``-32602`` with
the message; every other failure of a call was already turned into an
``isError`` result by :class:`~awf_mcp.core.calls.ToolInvoker`, and anything that
still escapes becomes an ``isError`` result ``<ExceptionType>: <message>``.
No traceback is ever sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.subscriptions import ToolsListChanged
from mcp.shared.exceptions import MCPError

from awf_mcp.core import discovery
from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.catalog import Catalog
from awf_mcp.errors import UnknownToolError, describe_exception
from awf_mcp.ports import InputRequired, ToolResult, visible_text
from awf_mcp.wire.changes import ListedBy, ListenStreams
from awf_mcp.wire.channel import ClientChannel, call_origin, client_name, session_key
from awf_mcp.wire.framing import Frame, Oversized, StdioWire
from awf_mcp.wire.mapping import result_to_mcp, tool_to_mcp
from awf_mcp.wire.offerings import OfferingHandlers
from awf_mcp.wire.replay import SingleUseRequestState
from awf_mcp.wire.stdio import serve_stdio

log = logging.getLogger("awf_mcp.wire.server")

SERVER_NAME = "awf-mcp-server"
"""The ``serverInfo.name`` of the Go server, kept for parity."""

ALWAYS_LOAD = "anthropic/alwaysLoad"
"""The ``_meta`` key with which Claude Code keeps a tool loaded when it defers the others."""

TOOLS_CHANGED = ToolsListChanged()
"""The event published to ``subscriptions/listen`` streams when the served tools changed."""


class ToolsServer(Server[Any]):
    """The SDK's low-level server, telling clients when the served tools change.

    ``tools_can_change`` (the registry's :attr:`~awf_mcp.core.registry.Registry.can_change`)
    decides what is advertised and served, per protocol family:

    * up to 2025-11-25 (``initialize``, on stdio and on each Streamable HTTP session),
      ``tools.listChanged`` is advertised, and ``notifications/tools/list_changed`` goes to
      each connection that listed the tools (the latest
      :data:`~awf_mcp.wire.changes.LISTED_BY_LIMIT`) on its own channel: stdout, or the HTTP
      session's standalone GET stream;
    * on the stateless revision (2026-07-28), ``subscriptions/listen`` is served by the SDK's
      :class:`ListenHandler` (at most :data:`~awf_mcp.wire.changes.LISTEN_LIMIT` streams at once), which makes
      ``server/discover`` advertise ``tools.listChanged``; each stream that asked for tool
      changes gets the notification on its own response stream.

    A registry that cannot change advertises neither and does not serve ``subscriptions/listen``.
    """

    tools_can_change: bool = False
    prompts_can_change: bool = False
    resources_can_change: bool = False
    unadvertised: frozenset[str] = frozenset()
    """Capabilities whose list methods answer an empty list but are not advertised (nothing
    offers them: a client that asks anyway gets ``[]``, one that reads the capabilities adds
    nothing for them)."""

    def get_capabilities(self, *args: Any, **kwargs: Any) -> types.ServerCapabilities:
        """The SDK's, less :attr:`unadvertised`."""
        capabilities = super().get_capabilities(*args, **kwargs)
        if not self.unadvertised:
            return capabilities
        return capabilities.model_copy(update=dict.fromkeys(self.unadvertised))

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        """The SDK's, advertising ``listChanged`` of what can change (tools, prompts, resources)."""
        if notification_options is None:
            notification_options = NotificationOptions(
                tools_changed=self.tools_can_change,
                prompts_changed=self.prompts_can_change,
                resources_changed=self.resources_can_change,
            )
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
        catalog: Catalog | None = None,
        state_keys: Sequence[bytes] = (),
        reloadable: bool = False,
    ) -> None:
        self.invoker = invoker
        self._listing()
        tools_can_change = reloadable or invoker.registry.can_change
        self._listed_by = ListedBy("tools")  # handshake-era connections that listed the tools
        self._listen = ListenStreams()  # the stateless revision's subscriptions/listen streams
        invoker.registry.watch(self.notify_tools_changed)
        if catalog is None:
            catalog = Catalog(invoker.registry.records, invoker.registry.settings, invoker)
        self.catalog = catalog
        self.offerings = OfferingHandlers(catalog, self._listen)
        offers = catalog.offers
        can_change = tools_can_change or self.offerings.can_change or "subscribe" in offers
        self.sdk_server = ToolsServer(
            name,
            version=version,
            instructions=instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=self._listen if can_change else None,
        )
        self.sdk_server.tools_can_change = tools_can_change
        self.sdk_server.prompts_can_change = "prompts" in offers and (
            reloadable or "prompts_changed" in offers
        )
        self.sdk_server.resources_can_change = "resources" in offers and (
            reloadable or "resources_changed" in offers
        )
        self.sdk_server.unadvertised = self.offerings.register(self.sdk_server)
        # Added here: passing it to Server() warns that roots are deprecated as of 2026-07-28.
        self.sdk_server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        # request_state: sealed under the shared keys (the first seals, all open) so that any
        # replica can finish a call another began; without them, under a key of this process.
        security = (
            RequestStateSecurity(keys=list(state_keys)) if state_keys else RequestStateSecurity.ephemeral()
        )
        self.sdk_server.middleware.append(SingleUseRequestState())  # outside the seal: sees it sealed
        self.sdk_server.middleware.append(RequestStateBoundary(security, default_audience=name))

    async def _roots_changed(self, ctx: ServerRequestContext[Any], params: Any) -> None:
        if self.invoker.client_roots is not None:
            self.invoker.client_roots.forget(session_key(ctx))

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self.sdk_server.tools_can_change:
            self._listed_by.note(ctx)
        if discovery.defers_tools(client_name(ctx)):
            return self._tools_loaded_always
        return self._tools_offered

    def _listing(self) -> None:
        """The two listings a client may get (:mod:`awf_mcp.core.discovery`): for a client that
        defers tools, every tool with the built-ins (and ``[discovery] always``) marked
        ``_meta["anthropic/alwaysLoad"]``; for any other, every tool, or past the threshold the
        built-ins and the search."""
        self._definitions = list(self.invoker.registry.definitions())
        settings = self.invoker.registry.settings.discovery  # a reload may change them
        marked = []
        for definition in self._definitions:
            tool = tool_to_mcp(definition)
            if discovery.loaded_always(definition, settings):
                tool = tool.model_copy(update={"meta": {**(tool.meta or {}), ALWAYS_LOAD: True}})
            marked.append(tool)
        offered, _searching = discovery.offered(self._definitions, None, settings)
        self._tools_loaded_always = types.ListToolsResult(tools=marked)
        self._tools_offered = types.ListToolsResult(tools=[tool_to_mcp(d) for d in offered])

    async def notify_tools_changed(self) -> None:
        """Serve the registry's current tools and tell the clients; see :class:`ToolsServer`."""
        self._listing()
        await self._listen.publish(TOOLS_CHANGED)
        await self._listed_by.tell()

    def reconfigured(self, instructions: str) -> None:
        """After a live reload: serve what the catalog offers now; new connections get ``instructions``."""
        self.sdk_server.unadvertised = self.offerings.register(self.sdk_server)
        self.sdk_server.instructions = instructions

    def end_listen_streams(self) -> None:
        """End every open ``subscriptions/listen`` stream with its result; refuse new ones (shutdown)."""
        self._listen.end()

    async def serve_stdio(
        self, wire: StdioWire, frames: AsyncIterator[Frame | Oversized] | None = None
    ) -> None:
        """Serve one client over ``wire`` until its EOF (or cancelled); see :mod:`awf_mcp.wire.stdio`."""
        await serve_stdio(self, wire, frames)

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

        if params.name == discovery.FIND:
            budget = self.invoker.budget_for(client_name(ctx))
            found = discovery.find(self._definitions, params.arguments or {}, budget)
            return result_to_mcp(ToolResult.text(found), discovery.FIND)
        if params.name == discovery.CALL:  # the named tool's own call, as if it were listed
            arguments = params.arguments or {}
            target, inner = arguments.get("name"), arguments.get("arguments", {})
            if (
                not isinstance(target, str)
                or not isinstance(inner, dict)
                or target in (discovery.CALL, discovery.FIND)
            ):
                return result_to_mcp(
                    ToolResult.error(f"{discovery.CALL} takes a tool's name and an object of arguments")
                )
            params = params.model_copy(update={"name": target, "arguments": inner})
        channel = ClientChannel(ctx, params)
        try:
            result = await self.invoker.call(
                params.name,
                params.arguments,
                progress=progress,
                **call_origin(ctx, channel),
            )
        except InputRequired as question:
            return channel.input_required(question)
        except UnknownToolError as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=visible_text(exc.message)) from None
        except Exception as exc:
            log.debug("call of %s failed outside the invoker", params.name, exc_info=True)
            result = ToolResult.error(describe_exception(exc))
        return result_to_mcp(result, visible_text(params.name))
