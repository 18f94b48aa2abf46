"""Upstream MCP servers as tool providers: one :class:`UpstreamProvider` per configured server.

Contract
--------
* The core does not speak MCP: it is given a :data:`Connect` function (the CLI runtime
  passes :func:`awf_mcp.wire.client.connect`) that opens a
  :class:`~awf_mcp.core.servers.ServerSpec` and yields an :class:`UpstreamSession`.
* :func:`start_all` starts every enabled server at once and returns when each has
  listed its tools or hit its ``startup_timeout_seconds``. It returns one
  :class:`~awf_mcp.core.plugins.PluginRecord` per server (name = server name, source
  ``server:<name>``), so the registry merges server tools under the plugin rules
  (prefix, collisions, ``[rename]``, ``--only``, ``--exclude``). A server that fails
  is reported (``on_failure``) with its name and reason and served without; with
  ``strict`` the failure raises :class:`~awf_mcp.errors.PluginError`.
* Tools are named ``<server>_<tool>``; description, schemas and annotations are the
  server's own. The registry checks the names (after ``[rename]``): one that breaks the
  rules, or is already taken, is left out with a warning showing the ``[rename]`` line to add.
* A server's tool list is gathered in one place, :meth:`UpstreamProvider.gather_tools`,
  bounded in bytes (a definition's size is its JSON, :func:`definition_bytes`) while the
  pages are read: a tool listed twice (the second), or whose definition passes
  :data:`MAX_TOOL_DEFINITION_BYTES`, is left out; the tools that would take the server past
  its share of definition bytes (:data:`MAX_SERVER_DEFINITION_BYTES`, less when more than
  :data:`MAX_UPSTREAM_DEFINITION_BYTES` / that many servers are enabled) are left out and no
  further page is asked for, as once :data:`MAX_LISTING_BYTES` were read. Each is a warning
  (``log``) and a sentence in :attr:`UpstreamProvider.left_out` (``servers list`` shows
  them); the rest is served. So the merged ``tools/list`` stays far below the 10 MiB frame
  limit however large or many the servers' tools. What is kept then passes
  :func:`~awf_mcp.core.pins.admit_tools`: a tool whose definition changed since the user
  approved it, or that is new, is held back (not served).
* ``notifications/tools/list_changed`` from the server makes the provider list its tools
  again, :data:`RELIST_PAUSE_SECONDS` later (notifications arriving meanwhile, or during
  the listing, are coalesced into one more listing: a server sending a flood of them gets
  at most one listing per pause and round trip); when the set differs, every
  :meth:`UpstreamProvider.watch_tools` callback is awaited (the registry's re-merge, which
  tells the agent). A listing that fails keeps the old set, with a warning. A restarted
  server is listed again the same way.
* A call is forwarded with its progress (to :func:`~awf_mcp.ports.current_call`'s
  reporter; the upstream is asked for progress only when the client asked) and its
  cancellation (the client session sends ``notifications/cancelled``). A per-server
  ``timeout_seconds`` bounds it below the server-wide call timeout.
* When the connection dies, its in-flight calls end in an ``isError`` result that says
  so; the next call restarts it. Restarts after consecutive deaths wait
  :func:`backoff_seconds`; a call inside that wait gets an ``isError`` saying when the
  next attempt is.
* :func:`instructions` gathers the upstreams' own ``instructions`` for awf-mcp's: a
  server's over :data:`MAX_INSTRUCTIONS_BYTES` are left out (a warning, and a sentence in
  :attr:`UpstreamProvider.left_out`), and so are those that would take the gathered text
  past :data:`MAX_RELAYED_INSTRUCTIONS_BYTES`.
* Requests from the server (see "Upstream requests" below) go to :meth:`UpstreamProvider.answer`.
* ``close()`` ends the connection (the adapter stops the process group) and is bounded
  by the runtime's close timeout.

Upstream requests
-----------------
A server may ask its client for ``roots/list``, ``sampling/createMessage`` or
``elicitation/create``. What the connection advertises is the :data:`ClientOffer` the
provider is given: the agent's own declared ``sampling`` and ``elicitation`` capabilities
(verbatim), and ``roots`` when the agent declared roots; nothing at all without an agent
(``awf-mcp tools list``, ``tools call``, ``servers list``, ``serve --transport http``). A
request is answered so:

* ``roots/list`` is answered by awf-mcp itself (even when roots were not advertised),
  never forwarded: the roots the oldest attached call (below) of this server is confined
  to (:attr:`~awf_mcp.ports.CallContext.roots`, the client's roots under the configured
  ceiling), or the configured roots when there is none, as ``file://`` URIs. An upstream
  so never learns of a directory awf-mcp's own tools may not touch. ``roots`` is
  advertised with ``listChanged``: a call whose roots differ from those last sent first
  sends the server ``notifications/roots/list_changed`` (the agent's roots change, say).
* ``sampling/createMessage`` and ``elicitation/create`` are forwarded to the agent
  through the :class:`~awf_mcp.ports.ClientChannel` of a call of this server that an
  agent's call is waiting on ("attached"), the **oldest** one when there are several (the
  request carries nothing that ties it to one call; the oldest is the one the upstream has
  been working on longest). The agent's result goes back unchanged.
* On the stateless revision (2026-07-28) the channel raises
  :class:`~awf_mcp.ports.InputRequired` instead of answering. The upstream call runs in a
  task of its own, so the agent's call then ends with that ``input_required`` while the
  upstream call stays open, **suspended**, its request waiting. The agent's retry (the same
  tool and arguments, carrying the answer) finds the oldest suspended call of that tool
  with those arguments, asks its channel the same question (which now finds the answer),
  sends it upstream, and follows the upstream call again, to its result or its next
  question. At most :data:`MAX_SUSPENDED` calls of a server are suspended (beyond that
  the oldest is cancelled upstream), each for at most :data:`SUSPEND_SECONDS` (then its
  request is refused and the upstream call goes on without a follower).
* Refused, with a JSON-RPC error holding one sentence (:class:`UpstreamRequestRefused`),
  the server serving on: a request with no attached call of the server; one the agent
  did not declare the capability for; one the agent answered with an error; one whose
  call ended (answered, timed out, cancelled) before the agent answered.
* Cancelling or timing out the agent's call cancels the upstream call (the SDK sends
  ``notifications/cancelled``); an agent's call ended by ``input_required`` does not.
* At most :data:`MAX_PENDING_REQUESTS` requests of a server wait for the agent at once;
  one more is refused.
* Each request is logged (INFO, logger ``awf_mcp.upstream``) with the server, the method,
  the call and the outcome, and goes into the audit record of the call it was routed to
  (:class:`~awf_mcp.core.observability.UpstreamRequest`: method, outcome, sizes, never
  content), through the list the call path gives each call
  (:func:`~awf_mcp.core.observability.upstream_requests_of_call`), which the flight keeps
  (bounded: past :data:`~awf_mcp.core.observability.MAX_RECORDED_REQUESTS` only counted).
  A retry on the stateless revision takes over the requests of the call that ended with
  ``input_required`` (that call has no record). A request asked outside any call, or whose
  suspended call the agent never retried, is in the log only.

The connection is owned by one task per server (the SDK's session must be entered and
left in the same task); it is an asyncio task because start-up runs before the serve
loop's task group exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import replace
from typing import Any, Protocol

import anyio

from awf_mcp import budget
from awf_mcp.core.observability import (
    CallRequests,
    RequestOutcome,
    UpstreamRequest,
    json_size,
    upstream_requests_of_call,
)
from awf_mcp.core.pins import admit_tools
from awf_mcp.core.plugins import PluginRecord, ProviderTools
from awf_mcp.core.roots import root_uri
from awf_mcp.core.servers import ServerSpec, working_directory
from awf_mcp.errors import PluginError
from awf_mcp.ports import (
    CLIENT_METHODS,
    CallContext,
    ClientCannotAnswer,
    InputRequired,
    ToolDefinition,
    ToolError,
    ToolResult,
    current_call,
)

log = logging.getLogger("awf_mcp.upstream")

ProgressCallback = Callable[[float, "float | None", "str | None"], None]

MAX_BACKOFF_SECONDS = 30.0
RELIST_PAUSE_SECONDS = 0.05
"""After ``tools/list_changed``, how long to wait for more before listing: at most one listing per pause."""
SHUT_SECONDS = 0.45
"""How long closing waits for a connection to end (stdin EOF, SIGTERM, SIGKILL of its group take
0.3 s at most) before it stops waiting: under the runtime's 0.5 s bound per provider."""


SUSPEND_SECONDS = 300.0
"""How long an upstream's call waits, suspended, for an agent on the stateless revision to come back
with its answer (the agent's ``request_state`` lives ten minutes)."""
MAX_PENDING_REQUESTS = 8
"""How many of one server's requests may wait for the agent at once; more are refused (a server
flooding the agent's user with questions is cut short)."""
MAX_SUSPENDED = 16
"""How many calls of one server may be suspended at once; beyond that the oldest is cancelled."""

MAX_TOOL_DEFINITION_BYTES = 128 * 1024
"""The largest tool definition (name, description, schemas, annotations as JSON) awf-mcp serves."""
MAX_SERVER_DEFINITION_BYTES = 1024 * 1024
"""The most definition bytes served of one server (a server with 100 tools of 2 KB takes 200 KB)."""
MAX_UPSTREAM_DEFINITION_BYTES = 6 * 1024 * 1024
"""The most definition bytes served of all servers together: with more than six servers enabled,
each gets an equal share. Built-ins and plugins add tens of KB: the ``tools/list`` answer stays
well below the 10 MiB frame limit (:data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`)."""
MAX_LISTING_BYTES = 32 * 1024 * 1024
"""The most definition bytes read in one listing, served or not: no page is asked for after that.
Each page is dropped once taken; what the SDK keeps of a page (output schemas) stays below it."""
MAX_INSTRUCTIONS_BYTES = 32 * 1024
"""The largest ``instructions`` of one server relayed in awf-mcp's own."""
MAX_RELAYED_INSTRUCTIONS_BYTES = 256 * 1024
"""The most bytes of the servers' ``instructions`` relayed together."""


class UpstreamFailure(ToolError):
    """A sentence saying what went wrong with an upstream server (already redacted)."""


class UpstreamGone(UpstreamFailure):
    """The connection ended; the message says how (exit code, signal, fault)."""


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


Connect = Callable[[ServerSpec, str], AbstractAsyncContextManager[UpstreamSession]]
"""Opens a server (the ``str`` is the working directory for a stdio server)."""


def definition_bytes(tool: ToolDefinition) -> int:
    """About how many bytes ``tool`` takes in a ``tools/list`` answer: its fields as UTF-8 JSON."""
    return budget.json_size(
        [tool.name, tool.description, tool.input_schema, tool.output_schema, tool.annotations]
    )


def _text_bytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def definition_share(servers: int) -> int:
    """The definition bytes each of ``servers`` enabled servers may have served."""
    return min(MAX_SERVER_DEFINITION_BYTES, MAX_UPSTREAM_DEFINITION_BYTES // max(servers, 1))


def backoff_seconds(deaths: int) -> float:
    """How long after the ``deaths``-th consecutive death the next restart may start."""
    if deaths <= 1:
        return 0.0
    return float(min(0.5 * 2 ** (deaths - 2), MAX_BACKOFF_SECONDS))


SHOWN_NAME_CHARS = 80
"""How much of a tool's name a sentence about what was left out quotes."""


def _shown(name: str) -> str:
    return name if len(name) <= SHOWN_NAME_CHARS else name[:SHOWN_NAME_CHARS] + "…"


class _Listing:
    """One listing of a server's tools under its byte bounds (see the module docstring)."""

    def __init__(self, served_bytes: int) -> None:
        self.served_bytes = served_bytes
        self.kept: list[ToolDefinition] = []
        self.left_out: list[str] = []
        self._names: set[str] = set()
        self._kept_bytes = 0
        self._read_bytes = 0

    def take(self, tool: ToolDefinition) -> bool:
        """Keep ``tool``, or note why it is left out; ``False`` when no further tool is to be read."""
        if self._read_bytes > MAX_LISTING_BYTES:
            return self._stop(tool, MAX_LISTING_BYTES, "reads")
        size = definition_bytes(tool)
        self._read_bytes += size
        if tool.name in self._names:
            self.left_out.append(f"tool '{_shown(tool.name)}' is listed twice: the second is left out")
        elif size > MAX_TOOL_DEFINITION_BYTES:
            self.left_out.append(
                f"tool '{_shown(tool.name)}' is left out: its definition takes {size:,} bytes, over the "
                f"{MAX_TOOL_DEFINITION_BYTES:,} awf-mcp serves of one tool"
            )
        elif self._kept_bytes + size > self.served_bytes:
            return self._stop(tool, self.served_bytes, "serves")
        else:
            self._names.add(tool.name)
            self.kept.append(tool)
            self._kept_bytes += size
        return True

    def _stop(self, tool: ToolDefinition, bound: int, verb: str) -> bool:
        self.left_out.append(
            f"its tools from '{_shown(tool.name)}' on are left out: their definitions pass the "
            f"{bound:,} bytes awf-mcp {verb} of one server"
        )
        return False


class UpstreamProvider:
    """One upstream server as a :class:`~awf_mcp.ports.ToolProvider`; see the module docstring."""

    def __init__(
        self,
        spec: ServerSpec,
        connect: Connect,
        *,
        roots: Sequence[str] = (),
        offer: ClientOffer = NO_OFFER,
        definition_bytes: int = MAX_SERVER_DEFINITION_BYTES,
    ) -> None:
        self.spec = spec
        self.definition_bytes = definition_bytes
        """The most bytes of this server's definitions served (see the module docstring)."""
        self._connect = connect
        self._cwd = working_directory(spec, roots)
        self._roots = tuple(roots)
        self.offer = offer
        self._in_flight: list[_Flight] = []
        self._suspended: list[_Flight] = []
        self._asking = 0
        self._roots_told: tuple[str, ...] | None = None
        """The roots last sent in answer to the server's ``roots/list`` (``None``: none since the
        last change)."""
        self._prefix = f"{spec.name}_"
        self._session: UpstreamSession | None = None
        self._runner: asyncio.Task[None] | None = None
        self._stop = anyio.Event()
        self._lock = anyio.Lock()
        self._tools: list[ToolDefinition] = []
        self._watchers: list[Callable[[], Awaitable[object]]] = []
        self.deaths = 0
        self.down_since = 0.0
        self.last_reason = ""
        self.instructions: str | None = None
        self.left_out: list[str] = []
        """One sentence per tool (or run of tools) of the last listing left out, and for
        ``instructions`` left out (see the module docstring)."""
        self._instructions_left_out = ""

    @property
    def running(self) -> bool:
        """True while the connection is up."""
        return self._session is not None and not self._session.closed.is_set()

    def list_tools(self) -> list[ToolDefinition]:
        """The tools last listed (at start-up, or after ``tools/list_changed``), prefixed ``<server>_``."""
        return list(self._tools)

    def watch_tools(self, on_change: Callable[[], Awaitable[object]]) -> None:
        """Have ``on_change`` awaited after each change of :meth:`list_tools`."""
        self._watchers.append(on_change)

    async def start(self) -> list[ToolDefinition]:
        """Connect and list the tools, within ``startup_timeout_seconds``; raises :class:`UpstreamFailure`."""
        timeout = self.spec.startup_timeout_seconds
        try:
            with anyio.fail_after(timeout):
                session = await self._open()
                tools = await self.gather_tools(session)
        except TimeoutError:
            reason = self._session.reason() if self._session is not None else ""
            await self._shut()
            detail = f" ({reason})" if reason and "closed the connection" not in reason else ""
            raise UpstreamFailure(f"it did not list its tools within {timeout:g} s{detail}") from None
        except BaseException:
            await self._shut()
            raise
        self._tools = tools
        return self.list_tools()

    async def gather_tools(self, session: UpstreamSession) -> list[ToolDefinition]:
        """The server's tools as served, prefixed, bounded in bytes while read (see the module
        docstring); the one place a server's tool list is gathered, at start-up and after a change.

        Warns about, and records in :attr:`left_out`, what is left out (only what is new since the
        last listing is logged again).
        """
        listing = _Listing(self.definition_bytes)
        async with contextlib.aclosing(session.tool_pages()) as pages:
            async for page in pages:
                if not all(listing.take(tool) for tool in page):
                    break  # no further page is asked for
        left_out = listing.left_out
        logged = set(self.left_out)
        for sentence in left_out:
            if sentence not in logged:
                log.warning("server '%s': %s", self.spec.name, sentence)
        self.left_out = left_out + ([self._instructions_left_out] if self._instructions_left_out else [])
        admitted = admit_tools(self.spec, listing.kept)  # pinned definitions: a changed or new tool is held
        return [
            replace(tool, name=f"{self._prefix}{tool.name}", source=self.spec.source) for tool in admitted
        ]

    async def _follow_changes(self, session: UpstreamSession) -> None:
        """List the tools again after each ``tools/list_changed`` (coalesced); see the module docstring."""
        send, receive = anyio.create_memory_object_stream[None](1)

        def changed() -> None:
            with contextlib.suppress(anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                send.send_nowait(None)  # one pending is enough; none once the connection has ended

        session.on_tools_changed = changed
        if self._tools:  # a restart: the server may have changed while it was down
            changed()
        async with receive:
            async for _ in receive:
                await anyio.sleep(RELIST_PAUSE_SECONDS)  # a burst becomes one listing
                with contextlib.suppress(anyio.WouldBlock):
                    receive.receive_nowait()
                await self._relist(session)

    async def _relist(self, session: UpstreamSession) -> None:
        name = self.spec.name
        try:
            with anyio.fail_after(self.spec.startup_timeout_seconds):
                tools = await self.gather_tools(session)
        except (UpstreamFailure, TimeoutError) as exc:
            reason = str(exc) or f"no answer within {self.spec.startup_timeout_seconds:g} s"
            log.warning("server '%s' changed its tools, but listing them failed: %s", name, reason)
            return
        if tools == self._tools:
            return
        self._tools = tools
        log.info("server '%s' changed its tools: now %d", name, len(tools))
        for watcher in list(self._watchers):
            try:
                await watcher()
            except Exception as exc:
                log.warning(
                    "server '%s': applying its new tools failed: %s: %s", name, type(exc).__name__, exc
                )

    async def _open(self) -> UpstreamSession:
        """Start the task that owns a new connection; wait until it is up or has failed."""
        ready = anyio.Event()
        failure: list[BaseException] = []
        opened: list[UpstreamSession] = []
        self._stop = anyio.Event()
        stop = self._stop

        async def own() -> None:
            try:
                async with self._connect(self.spec, self._cwd) as session:
                    session.on_request = self.answer
                    self._roots_told = None
                    opened.append(session)
                    self._session = session
                    ready.set()
                    async with anyio.create_task_group() as group:

                        async def on_death() -> None:
                            await session.closed.wait()
                            group.cancel_scope.cancel()

                        group.start_soon(on_death)
                        group.start_soon(self._follow_changes, session)
                        await stop.wait()
                        group.cancel_scope.cancel()
            except Exception as exc:
                failure.append(exc)
            except BaseException:
                stop.set()  # cancelled with the event loop: a shutdown, not a death
                raise
            finally:
                if opened and opened[0].closed.is_set() and not stop.is_set():
                    self._mark_down(opened[0].reason())
                ready.set()

        self._runner = asyncio.get_running_loop().create_task(
            own(), name=f"awf-mcp upstream {self.spec.name}"
        )
        await ready.wait()
        session = self._session
        if session is None:
            if failure:
                raise _as_failure(failure[0], self.spec)
            raise UpstreamFailure("it could not be started")
        try:
            await session.handshake(self.offer)
        except UpstreamFailure:
            raise
        except Exception as exc:
            raise _as_failure(exc, self.spec) from None
        self.instructions = session.instructions
        self._instructions_left_out = ""
        size = _text_bytes(self.instructions or "")
        if size > MAX_INSTRUCTIONS_BYTES:
            self.instructions = None
            self._instructions_left_out = (
                f"its instructions are left out: they take {size:,} bytes, over the "
                f"{MAX_INSTRUCTIONS_BYTES:,} awf-mcp relays of one server"
            )
            log.warning("server '%s': %s", self.spec.name, self._instructions_left_out)
        return session

    def _mark_down(self, reason: str) -> None:
        if self.down_since:
            return
        self.deaths += 1
        self.down_since = time.monotonic()
        self.last_reason = reason
        log.warning("server '%s' stopped: %s", self.spec.name, reason)

    async def _shut(self) -> None:
        """End the connection task (the adapter stops the process) and wait for it."""
        self._stop.set()
        runner, self._runner = self._runner, None
        if runner is not None and not runner.done():
            with anyio.CancelScope(shield=True):
                await asyncio.wait({runner}, timeout=SHUT_SECONDS)
            if not runner.done():
                runner.cancel()
        self._session = None

    async def _ensure(self) -> UpstreamSession:
        session = self._session
        if session is not None and not session.closed.is_set():
            return session
        async with self._lock:
            session = self._session
            if session is not None and not session.closed.is_set():
                return session
            name = self.spec.name
            wait = self.down_since + backoff_seconds(self.deaths) - time.monotonic()
            if self.down_since and wait > 0:
                raise UpstreamFailure(
                    f"server '{name}' is down ({self.last_reason}); the next restart is in {wait:.1f} s"
                )
            await self._shut()
            try:
                with anyio.fail_after(self.spec.startup_timeout_seconds):
                    session = await self._open()
            except TimeoutError:
                await self._shut()
                self._restart_failed(f"it did not answer within {self.spec.startup_timeout_seconds:g} s")
            except UpstreamFailure as exc:
                await self._shut()
                self._restart_failed(str(exc))
            assert session is not None
            self.down_since = 0.0
            log.warning("server '%s' restarted", name)
            return session

    def _restart_failed(self, reason: str) -> None:
        self.down_since = 0.0
        self._mark_down(reason)
        raise UpstreamFailure(f"server '{self.spec.name}' could not be restarted: {reason}")

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Forward a call to the server; see the module docstring.

        The upstream call runs in a task of its own, followed by the agent's call, so that it can
        outlive an agent's call that ends with ``input_required`` (see "Upstream requests").
        """
        tool = name.removeprefix(self._prefix)
        context = current_call()
        suspended = self._resumable(tool, arguments)
        if suspended is not None:
            return await self._resume(suspended, context)
        session = await self._ensure()
        await self._announce_roots(session, context)
        flight = _Flight(tool, arguments, context, upstream_requests_of_call())
        self._in_flight.append(flight)
        progress = _wanted_progress(context)
        forward = None if progress is None else flight.report_progress
        flight.task = asyncio.get_running_loop().create_task(
            self._forward(flight, session, forward), name=f"awf-mcp call {self.spec.name}/{tool}"
        )
        return await self._follow(flight)

    async def _forward(
        self, flight: _Flight, session: UpstreamSession, progress: ProgressCallback | None
    ) -> None:
        """The upstream call itself; its outcome goes to ``flight``."""
        tool = flight.tool
        try:
            with anyio.fail_after(self.spec.timeout_seconds) if self.spec.timeout_seconds else _no_limit():
                flight.outcome = await session.call_tool(tool, flight.arguments, progress)
            self.deaths = 0
        except UpstreamGone as exc:
            self._mark_down(str(exc))
            flight.outcome = ToolResult.error(
                f"server '{self.spec.name}' stopped during the call of {tool}: {exc}; "
                "the next call restarts it"
            )
        except TimeoutError:
            flight.outcome = ToolResult.error(
                f"server '{self.spec.name}' did not answer {tool} within {self.spec.timeout_seconds:g} s "
                "(timeout_seconds); the call was cancelled"
            )
        except Exception as exc:
            flight.failure = exc
        finally:
            self._in_flight.remove(flight)
            if flight in self._suspended:
                self._suspended.remove(flight)
            flight.end()

    async def _follow(self, flight: _Flight) -> ToolResult:
        """The agent's call waiting for ``flight``: its outcome, or :class:`InputRequired` to suspend it."""
        try:
            while True:
                await flight.wake.wait()
                flight.wake = anyio.Event()
                if flight.ended:
                    if flight.failure is not None:
                        raise flight.failure
                    assert flight.outcome is not None
                    return flight.outcome
                question = flight.question
                if question is not None and not question.put and not question.answered.is_set():
                    question.put = True
                    self._suspend(flight)
                    raise question.asked
        except InputRequired:
            raise
        except BaseException:
            flight.abandon()  # the agent's call was cancelled or timed out: so is the upstream call
            raise

    def _suspend(self, flight: _Flight) -> None:
        flight.attached = False
        flight.suspended_at = time.monotonic()
        self._suspended.append(flight)
        while len(self._suspended) > MAX_SUSPENDED:
            oldest = self._suspended.pop(0)
            log.info(
                "server '%s': gave up a suspended call of %s (too many suspended)",
                self.spec.name,
                oldest.tool,
            )
            oldest.abandon()

    def _resumable(self, tool: str, arguments: Mapping[str, Any]) -> _Flight | None:
        """The oldest suspended call of ``tool`` with ``arguments`` whose question is still open."""
        now = time.monotonic()
        for flight in list(self._suspended):
            if now - flight.suspended_at > SUSPEND_SECONDS:
                self._suspended.remove(flight)
                flight.abandon()
        for flight in self._suspended:
            question = flight.question
            if (
                flight.tool == tool
                and flight.arguments == arguments
                and question
                and not question.answered.is_set()
            ):
                return flight
        return None

    async def _resume(self, flight: _Flight, context: CallContext) -> ToolResult:
        """The agent's retry of a suspended call: its answer goes upstream, and the call is followed again."""
        question = flight.question
        assert question is not None
        asked = question.asked
        try:
            answer: Mapping[str, Any] | None = await context.channel.ask(asked.method, asked.params)
            refusal = ""
        except ClientCannotAnswer as exc:
            answer, refusal = None, f"awf-mcp could not forward {asked.method}: {exc}"
        # (an InputRequired here, the agent retrying without the answer, leaves the call suspended)
        if flight in self._suspended:
            self._suspended.remove(flight)
        flight.context = context
        # The call that ended with input_required has no record: its requests go into the retry's.
        requests = upstream_requests_of_call()
        requests.take_over(flight.requests)
        flight.requests = requests
        flight.attached = True
        flight.question = None
        question.settle(answer, refusal)
        return await self._follow(flight)

    async def _announce_roots(self, session: UpstreamSession, context: CallContext) -> None:
        """``notifications/roots/list_changed`` when this call's roots differ from those last told."""
        roots = context.roots if context.roots is not None else self._roots
        if self._roots_told is not None and roots != self._roots_told and "roots" in self.offer:
            self._roots_told = None
            await session.roots_changed()

    def _oldest_attached(self) -> _Flight | None:
        return next((flight for flight in self._in_flight if flight.attached), None)

    def roots(self) -> tuple[str, ...]:
        """The roots an upstream's ``roots/list`` is answered with; see the module docstring."""
        flight = self._oldest_attached()
        confined = flight.context.roots if flight is not None else None
        return confined if confined is not None else self._roots

    async def answer(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The result for the server's request ``method``; see "Upstream requests" in the module docstring.

        Raises :class:`UpstreamRequestRefused` with the sentence the server is sent. The request
        goes into the record of the call it is routed to (the oldest attached one), whatever its
        outcome.
        """
        flight = self._oldest_attached()
        request = UpstreamRequest(method=method, request_bytes=json_size(params))
        if flight is not None:
            flight.requests.add(request)
        during = "outside any call"
        if flight is not None:
            during = f"during {flight.context.tool_name or 'a call'}"
        try:
            result = await self._route(method, params, flight, request)
        except UpstreamRequestRefused as exc:
            request.finish("refused", reason=str(exc))
            log.info("server '%s' asked %s %s: refused: %s", self.spec.name, method, during, exc)
            raise
        request.finish(_outcome(method, result), answer=result)
        how = "forwarded to the agent" if request.forwarded else "answered by awf-mcp"
        log.info("server '%s' asked %s %s: %s, %s", self.spec.name, method, during, how, request.outcome)
        return result

    async def _route(
        self, method: str, params: Mapping[str, Any], flight: _Flight | None, request: UpstreamRequest
    ) -> Mapping[str, Any]:
        """Answer one request of the server: awf-mcp itself, the agent of ``flight``, or a refusal."""
        name = self.spec.name
        feature = CLIENT_METHODS.get(method)
        if feature is None:
            raise UpstreamRequestRefused(
                f"awf-mcp does not answer {method} from server '{name}': it is not a request a server may "
                "send its client",
                unsupported=True,
            )
        if feature == "roots":
            self._roots_told = self.roots()
            return {"roots": [{"uri": root_uri(root)} for root in self._roots_told]}
        if feature not in self.offer:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': it did not advertise {feature} to this "
                "server, because the agent did not declare it",
                unsupported=True,
            )
        if flight is None:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': none of the server's tool calls is running, "
                "and awf-mcp forwards such a request to the agent only during one"
            )
        if self._asking >= MAX_PENDING_REQUESTS:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': {MAX_PENDING_REQUESTS} of its requests "
                "already wait for the agent; ask again once they are answered"
            )
        self._asking += 1
        try:
            return await flight.ask(method, params, request)
        finally:
            self._asking -= 1

    async def close(self) -> None:
        """Stop the server."""
        for flight in list(self._in_flight):
            flight.abandon()
        await self._shut()


def _outcome(method: str, result: Mapping[str, Any]) -> RequestOutcome:
    """How a request the server got an answer to ended: an elicitation may be declined or cancelled."""
    if method == "elicitation/create":
        action = result.get("action")
        if action == "decline":
            return "declined"
        if action == "cancel":
            return "cancelled"
    return "answered"


def _as_failure(exc: BaseException, spec: ServerSpec) -> UpstreamFailure:
    """The :class:`UpstreamFailure` inside ``exc`` (task groups wrap it), or one describing ``exc``."""
    while isinstance(exc, BaseExceptionGroup):
        found = next((e for e in exc.exceptions if isinstance(e, UpstreamFailure)), None)
        exc = found if found is not None else exc.exceptions[0]
    if isinstance(exc, UpstreamFailure):
        return exc
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return UpstreamFailure(spec.redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__))


class _Question:
    """A request of the server that ended the agent's call with ``input_required``, waiting for the retry."""

    def __init__(self, asked: InputRequired) -> None:
        self.asked = asked
        self.put = False
        """The agent's call has ended with it (the agent was asked)."""
        self.answered = anyio.Event()
        self.answer: Mapping[str, Any] | None = None
        self.refusal = ""

    def settle(self, answer: Mapping[str, Any] | None, refusal: str = "") -> None:
        if not self.answered.is_set():
            self.answer, self.refusal = answer, refusal
            self.answered.set()


class _Flight:
    """One call forwarded to the server, while it runs: the agent's channel for the server's requests.

    ``attached`` while an agent's call follows it; a suspended flight (the agent's call ended with
    ``input_required``) waits for the agent's retry with its ``question`` open.
    """

    def __init__(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        context: CallContext,
        requests: CallRequests,
    ) -> None:
        self.tool = tool
        self.arguments = dict(arguments)
        self.context = context
        self.requests = requests
        """The upstream requests of the agent's call that follows it now (its record lists them)."""
        self.attached = True
        self.ended = False
        self.outcome: ToolResult | None = None
        self.failure: Exception | None = None
        self.question: _Question | None = None
        self.suspended_at = 0.0
        self.wake = anyio.Event()
        self.task: asyncio.Task[None] | None = None
        self._asking: set[anyio.CancelScope] = set()

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Progress of the upstream call, to whichever agent call follows it now."""
        if self.attached:
            self.context.report_progress(progress, total, message)

    def end(self) -> None:
        """The upstream call is over: a request still waiting for the agent is abandoned."""
        self.ended = True
        for scope in self._asking:
            scope.cancel()
        self.wake.set()

    def abandon(self) -> None:
        """Cancel the upstream call (no agent call will take its outcome)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def ask(
        self, method: str, params: Mapping[str, Any], request: UpstreamRequest
    ) -> Mapping[str, Any]:
        """The agent's answer to ``method``; raises :class:`UpstreamRequestRefused`.

        ``request`` is marked ``forwarded`` once the agent is asked.
        """
        channel = self.context.channel
        feature = CLIENT_METHODS[method]
        if not channel.supports(feature):
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method}: the agent does not support {feature}", unsupported=True
            )
        call = self.context.tool_name or "the call"
        with anyio.CancelScope() as scope:
            self._asking.add(scope)
            if self.ended:
                scope.cancel()
            try:
                try:
                    request.forwarded = True
                    return await channel.ask(method, params)
                except ClientCannotAnswer as exc:
                    raise UpstreamRequestRefused(f"awf-mcp could not forward {method}: {exc}") from None
                except InputRequired as asked:
                    question = _Question(asked)
                self.question = question
                self.wake.set()
                with anyio.move_on_after(SUSPEND_SECONDS):
                    await question.answered.wait()
                question.settle(
                    None,
                    f"awf-mcp refused {method}: the agent did not come back with an answer within "
                    f"{SUSPEND_SECONDS:g} s",
                )
                if question.answer is None:
                    raise UpstreamRequestRefused(question.refusal)
                return question.answer
            finally:
                self._asking.discard(scope)
        raise UpstreamRequestRefused(
            f"awf-mcp refused {method}: {call} ended (answered, timed out or cancelled) "
            "before the agent answered"
        )


@contextlib.contextmanager
def _no_limit() -> Any:
    yield


_NO_PROGRESS = CallContext(tool_name="").report_progress
"""The reporter of a call whose client asked for no progress: :class:`CallContext`'s default."""


def _wanted_progress(context: CallContext) -> ProgressCallback | None:
    """The call's progress reporter, or ``None`` (then no progress token goes upstream)."""
    return None if context.report_progress is _NO_PROGRESS else context.report_progress


def instructions(records: Sequence[PluginRecord]) -> str | None:
    """The served upstreams' own ``instructions``, each under its server's name, for awf-mcp's."""
    parts = []
    total = 0
    for record in records:
        for entry in record.providers if record.ok else ():
            provider = entry.provider
            if isinstance(provider, UpstreamProvider) and provider.instructions:
                text = provider.instructions.strip()
                part = f"## Server '{record.name}' (tools {record.name}_*)\n\n{text}"
                total += _text_bytes(part)
                if total > MAX_RELAYED_INSTRUCTIONS_BYTES:
                    sentence = (
                        f"its instructions are left out: with those of the servers before it they pass the "
                        f"{MAX_RELAYED_INSTRUCTIONS_BYTES:,} bytes awf-mcp relays"
                    )
                    provider.left_out.append(sentence)
                    log.warning("server '%s': %s", record.name, sentence)
                    total -= _text_bytes(part)
                    continue
                parts.append(part)
    if not parts:
        return None
    return "Instructions of the upstream MCP servers whose tools this server relays:\n\n" + "\n\n".join(parts)


def report_failed_server(record: PluginRecord) -> None:
    """The one stderr line for a server that did not start."""
    log.warning("server '%s' not served: %s", record.name, record.status.removeprefix("failed: "))


async def start_all(
    specs: Sequence[ServerSpec],
    connect: Connect,
    *,
    roots: Sequence[str] = (),
    strict: bool = False,
    on_failure: Callable[[PluginRecord], None] | None = report_failed_server,
    offer: ClientOffer = NO_OFFER,
) -> list[PluginRecord]:
    """Start every enabled server concurrently, advertising ``offer``; one record per server (see the
    module docstring)."""
    records: list[PluginRecord] = []

    async def start_one(record: PluginRecord, provider: UpstreamProvider) -> None:
        try:
            tools = await provider.start()
        except UpstreamFailure as exc:
            record.fail(str(exc))
            return
        record.providers.append(ProviderTools(provider=provider, tools=tools))

    share = definition_share(sum(1 for spec in specs if spec.enabled and not spec.problem))
    async with anyio.create_task_group() as group:
        for spec in specs:
            record = PluginRecord(name=spec.name, source=spec.source, distribution=f"{spec.transport} server")
            records.append(record)
            if not spec.enabled:
                record.status = "disabled"
            elif spec.problem:
                record.fail(spec.problem)
            else:
                provider = UpstreamProvider(spec, connect, roots=roots, offer=offer, definition_bytes=share)
                group.start_soon(start_one, record, provider)
    failed = [record for record in records if not record.ok and record.status != "disabled"]
    if failed and strict:
        for record in records:
            for entry in record.providers:
                await entry.provider.close()  # type: ignore[misc]
        first = failed[0]
        raise PluginError(f"server '{first.name}' failed to start: {first.status.removeprefix('failed: ')}")
    if on_failure is not None:
        for record in failed:
            on_failure(record)
    return records


@contextlib.asynccontextmanager
async def serving(*args: Any, **kwargs: Any) -> AsyncIterator[list[PluginRecord]]:
    """:func:`start_all`, closing every started provider on exit (for one-shot commands)."""
    records = await start_all(*args, **kwargs)
    try:
        yield records
    finally:
        for record in records:
            for entry in record.providers:
                await entry.provider.close()  # type: ignore[misc]
