"""One upstream server as a tool provider: its connection's lifecycle, its listing, its calls.

See :mod:`awf_mcp.core.upstream` for the contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import anyio

from awf_mcp.core.observability import (
    upstream_requests_of_call,
)
from awf_mcp.core.pins import admit_instructions, admit_tools
from awf_mcp.core.servers import ServerSpec, working_directory
from awf_mcp.core.upstream.listing import (
    MAX_SERVER_DEFINITION_BYTES,
    Listing,
    text_bytes,
)
from awf_mcp.core.upstream.offerings import ServerOfferings
from awf_mcp.core.upstream.routing import Flight, RequestRouting
from awf_mcp.core.upstream.session import (
    NO_OFFER,
    ClientOffer,
    Connect,
    ProgressCallback,
    SignIn,
    UpstreamFailure,
    UpstreamGone,
    UpstreamSession,
)
from awf_mcp.core.upstream.signin import SIGN_IN_TOOL, AgentSignIn
from awf_mcp.ports import (
    CallContext,
    ToolDefinition,
    ToolResult,
    current_call,
)

log = logging.getLogger("awf_mcp.upstream")

MAX_BACKOFF_SECONDS = 30.0
RELIST_PAUSE_SECONDS = 0.05
"""After ``tools/list_changed``, how long to wait for more before listing: at most one listing per pause."""
SHUT_SECONDS = 0.45
"""How long closing waits for a connection to end (stdin EOF, SIGTERM, SIGKILL of its group take
0.3 s at most) before it stops waiting: under the runtime's 0.5 s bound per provider."""


MAX_INSTRUCTIONS_BYTES = 32 * 1024
"""The largest ``instructions`` of one server relayed in awf-mcp's own."""
MAX_RELAYED_INSTRUCTIONS_BYTES = 256 * 1024
"""The most bytes of the servers' ``instructions`` relayed together."""


def backoff_seconds(deaths: int) -> float:
    """How long after the ``deaths``-th consecutive death the next restart may start."""
    if deaths <= 1:
        return 0.0
    return float(min(0.5 * 2 ** (deaths - 2), MAX_BACKOFF_SECONDS))


class UpstreamProvider(ServerOfferings, RequestRouting, AgentSignIn):
    """One upstream server as a :class:`~awf_mcp.ports.ToolProvider`; see the module docstring."""

    def __init__(
        self,
        spec: ServerSpec,
        connect: Connect,
        *,
        roots: Sequence[str] = (),
        offer: ClientOffer = NO_OFFER,
        definition_bytes: int = MAX_SERVER_DEFINITION_BYTES,
        sign_in: SignIn | None = None,
    ) -> None:
        self.spec = spec
        self.definition_bytes = definition_bytes
        """The most bytes of this server's definitions served (see the module docstring)."""
        self._connect = connect
        self._cwd = working_directory(spec, roots)
        self._roots = tuple(roots)
        self.offer = offer
        self._in_flight: list[Flight] = []
        self._suspended: list[Flight] = []
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
        self._init_offerings()
        self._init_sign_in(sign_in)

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
                try:
                    await self.gather_offerings(session, ("prompts", "resources", "templates"))
                except UpstreamFailure as exc:
                    log.warning(
                        "server '%s': its prompts and resources are not served: %s", self.spec.name, exc
                    )
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
        listing = Listing(self.definition_bytes)
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
        self.left_out += [
            sentence for sentences in self.offerings_left_out.values() for sentence in sentences
        ]
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
                        group.start_soon(self._follow_offering_changes, session, bool(self._tools))
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
        size = text_bytes(self.instructions or "")
        if size > MAX_INSTRUCTIONS_BYTES:
            self.instructions = None
            self._instructions_left_out = (
                f"its instructions are left out: they take {size:,} bytes, over the "
                f"{MAX_INSTRUCTIONS_BYTES:,} awf-mcp relays of one server"
            )
            log.warning("server '%s': %s", self.spec.name, self._instructions_left_out)
        self.instructions = admit_instructions(self.spec, self.instructions)
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
                hint = await self.offer_sign_in_again(exc)
                if hint:
                    raise UpstreamFailure(f"{exc}{hint}") from None
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

        On the stateless revision the upstream call runs in a task of its own, followed by the
        agent's call, so that it can outlive an agent's call that ends with ``input_required`` (see
        "Upstream requests"); with a back-channel it runs inside the agent's call.
        """
        tool = name.removeprefix(self._prefix)
        if self.awaiting_sign_in:
            if tool == SIGN_IN_TOOL:
                return await self.call_sign_in()
            raise UpstreamFailure(self.awaiting_sign_in)
        return await self._forward_followed(
            tool,
            arguments,
            (f"the call of {tool}", tool),
            lambda session, progress: session.call_tool(tool, arguments, progress),
        )

    async def _forward_followed(
        self,
        key: str,
        arguments: Mapping[str, Any],
        what: tuple[str, str],
        action: Callable[[UpstreamSession, ProgressCallback | None], Awaitable[ToolResult]],
    ) -> ToolResult:
        """``action`` (a call, a ``prompts/get``, a ``resources/read``) on a live session as a
        :class:`Flight` the agent's request follows: the server's requests meanwhile go to that agent,
        and on the stateless revision it is suspended and resumed (``key`` and ``arguments`` find it
        again on the retry); ``what`` names it in the sentences of its failures (``stopped during
        <what[0]>``, ``did not answer <what[1]>``)."""
        context = current_call()
        suspended = self._resumable(key, arguments)
        if suspended is not None:
            return await self._resume(suspended, context)
        session = await self._ensure()
        await self._announce_roots(session, context)
        await self._lower_log_level(session, context)
        flight = Flight(key, arguments, context, upstream_requests_of_call())
        self._in_flight.append(flight)
        progress = _wanted_progress(context)
        forward = None if progress is None else flight.report_progress
        if _may_suspend(context):
            flight.task = asyncio.get_running_loop().create_task(
                self._forward(flight, what, action(session, forward)),
                name=f"awf-mcp {self.spec.name}: {what[1]}",
            )
            return await self._follow(flight)
        await self._forward(flight, what, action(session, forward))  # in the agent's call itself
        if flight.failure is not None:
            raise flight.failure
        assert flight.outcome is not None
        return flight.outcome

    async def _forward(self, flight: Flight, what: tuple[str, str], action: Awaitable[ToolResult]) -> None:
        """The upstream request itself; its outcome goes to ``flight``."""
        try:
            with anyio.fail_after(self.spec.timeout_seconds) if self.spec.timeout_seconds else _no_limit():
                flight.outcome = await action
            self.deaths = 0
        except UpstreamGone as exc:
            self._mark_down(str(exc))
            hint = await self.offer_sign_in_again(exc)
            flight.outcome = ToolResult.error(
                f"server '{self.spec.name}' stopped during {what[0]}: {exc}"
                + (hint or "; the next call restarts it")
            )
        except TimeoutError:
            flight.outcome = ToolResult.error(
                f"server '{self.spec.name}' did not answer {what[1]} within {self.spec.timeout_seconds:g} s "
                "(timeout_seconds); it was cancelled"
            )
        except Exception as exc:
            flight.failure = exc
        finally:
            self._in_flight.remove(flight)
            if flight in self._suspended:
                self._suspended.remove(flight)
            flight.end()

    async def close(self) -> None:
        """Stop the server."""
        self.stop_sign_in()
        for flight in list(self._in_flight):
            flight.abandon()
        await self._shut()


def _as_failure(exc: BaseException, spec: ServerSpec) -> UpstreamFailure:
    """The :class:`UpstreamFailure` inside ``exc`` (task groups wrap it), or one describing ``exc``."""
    while isinstance(exc, BaseExceptionGroup):
        found = next((e for e in exc.exceptions if isinstance(e, UpstreamFailure)), None)
        exc = found if found is not None else exc.exceptions[0]
    if isinstance(exc, UpstreamFailure):
        return exc
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return UpstreamFailure(spec.redact(f"{type(exc).__name__}: {text}" if text else type(exc).__name__))


@contextlib.contextmanager
def _no_limit() -> Any:
    yield


def _may_suspend(context: CallContext) -> bool:
    """Whether the agent's call may end before the upstream's does: on the stateless revision, a
    question of the server ends it with ``input_required`` (the upstream call then waits, suspended,
    for the retry). A channel that says it is not ``stateless`` has a back-channel: its calls never
    end that way, so the upstream call may run inside the agent's call, without a task of its own
    (two passes of the event loop fewer)."""
    return getattr(context.channel, "stateless", True) is not False


_NO_PROGRESS = CallContext(tool_name="").report_progress
"""The reporter of a call whose client asked for no progress: :class:`CallContext`'s default."""


def _wanted_progress(context: CallContext) -> ProgressCallback | None:
    """The call's progress reporter, or ``None`` (then no progress token goes upstream)."""
    return None if context.report_progress is _NO_PROGRESS else context.report_progress
