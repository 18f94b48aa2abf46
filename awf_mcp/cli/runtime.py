"""Start-up and shutdown: from :class:`~awf_mcp.core.config.Settings` to a running server.

``cli`` calls these; they hold the order that matters:

0. (``cli.main``, before the heavy imports) spawn the stdio upstream servers' processes,
   so their start overlaps awf-mcp's own;
1. claim stdio (so a plugin printing at import time cannot touch the wire);
2. :func:`start` — load plugins (:mod:`awf_mcp.core.plugins`); then, when upstream servers
   are configured, learn what the agent supports (below) and run their handshake and
   ``tools/list`` (:mod:`awf_mcp.core.upstream`, through :mod:`awf_mcp.wire.client`); build the
   registry (:mod:`awf_mcp.core.registry`; fatal on collision), wire the policy hook and the
   call observer into a :class:`~awf_mcp.core.calls.ToolInvoker`;
3. :func:`settle` — move everything start-up allocated (the SDK's and the
   plugins' modules, the registry) out of the garbage collector's reach;
4. serve until stdin EOF, SIGTERM or SIGINT, the config file watched and reloaded live on a
   change or SIGHUP (:func:`live_reload`, :mod:`awf_mcp.core.reload`);
5. :func:`close` — every provider's ``close()``, each bounded in time, so
   shutdown finishes within a second even when a provider hangs.

What the agent supports
-----------------------
An upstream's handshake advertises the client capabilities the agent declared
(:data:`~awf_mcp.core.upstream.ClientOffer`), and the agent declares them only in its
first message (``initialize``, or the ``_meta`` of a 2026-07-28 request), while the
upstreams' tools must be listed before awf-mcp answers that message (its
``instructions`` carry theirs). So :func:`serve_stdio` reads the agent's first frame
ahead (:class:`AgentInput`, in a task of its own, before the SDK sees it; the SDK then
gets it first), and the upstreams' handshake waits for it after the plugins have loaded.
An agent writes ``initialize`` as soon as it has started awf-mcp, so the frame is
normally waiting in the pipe and nothing is delayed; an agent silent for
:data:`AGENT_FIRST_MESSAGE_SECONDS` gets upstreams told of no client capability.
Without upstream servers nothing is read ahead. ``serve --transport http`` (several agents
share each upstream connection) and the commands without an agent (``tools list``,
``tools call``, ``servers list``) advertise nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from awf_mcp.concurrency import call_either, watch_children_with_pidfds
from awf_mcp.core.callrecord import CallRecord
from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.config import HttpAuth, ServeOptions, Settings
from awf_mcp.core.config import load as load_settings
from awf_mcp.core.instructions import plugin_paragraphs, server_instructions
from awf_mcp.core.observability import call_fields, configure_logging
from awf_mcp.core.plugins import LoadedPlugins, PluginRecord
from awf_mcp.core.plugins import load as load_plugins
from awf_mcp.core.policy import policies_from
from awf_mcp.core.registry import Registry, build, serving
from awf_mcp.core.roots import ClientRoots
from awf_mcp.core.upstream import NO_OFFER, ClientOffer, Connect, start_all
from awf_mcp.core.upstream import instructions as upstream_instructions
from awf_mcp.errors import UserError, describe_exception
from awf_mcp.ports import BUILTIN_SOURCE, ToolProvider

if TYPE_CHECKING:
    from awf_mcp.core.reload import Reloader
    from awf_mcp.core.servers import ServerSpec
    from awf_mcp.state.httptoken import NamedTokens
    from awf_mcp.state.statekey import StateKeys
    from awf_mcp.wire.framing import Frame, Oversized
    from awf_mcp.wire.server import McpServer

log = logging.getLogger("awf_mcp")

T = TypeVar("T")

CLOSE_TIMEOUT_SECONDS = 0.5
AGENT_FIRST_MESSAGE_SECONDS = 1.0
"""How long start-up waits for the agent's first message before it starts the upstreams without it."""


@dataclass(slots=True)
class Runtime:
    """Everything a serving process holds."""

    settings: Settings
    plugins: LoadedPlugins
    registry: Registry
    invoker: ToolInvoker
    instructions: str

    @property
    def providers(self) -> list[ToolProvider]:
        """Every provider that was created, served or not: all of them get ``close()``."""
        return self.plugins.providers


def say(text: str) -> None:
    """A command tells the user what it is doing (work that takes seconds): one line on stderr."""
    print(f"awf-mcp: {text}", file=sys.stderr, flush=True)


def announce_servers(settings: Settings) -> None:
    """Say which upstream servers a command is about to start (nothing when there are none)."""
    names = [spec.name for spec in settings.servers if spec.enabled]
    if names:
        count = f"{len(names)} upstream server{'s' if len(names) > 1 else ''}"
        say(f"starting {count} ({', '.join(names)}) ...")


def report_failed_plugin(record: PluginRecord) -> None:
    """The one stderr line for a plugin that was skipped."""
    log.warning("%s skipped: %s", record.describe(), record.status.removeprefix("failed: "))


def log_call(record: CallRecord) -> None:
    """The default call observer: one log record per call (fields under ``call`` for JSON logs)."""
    if not log.isEnabledFor(logging.INFO):  # filtered out: build nothing
        return
    fields = call_fields(record)
    log.info(
        "call %s source=%s duration_ms=%.1f is_error=%s%s",
        record.tool,
        record.source,
        record.duration_ms,
        record.is_error,
        f" error={fields['error']!r}" if fields["error"] else "",
        extra={"call": fields},
    )


def observers(*callbacks: Callable[[CallRecord], None]) -> Callable[[CallRecord], None]:
    """One observer calling each of ``callbacks``; a failing one is logged, never fatal to the call."""

    def observe(record: CallRecord) -> None:
        for callback in callbacks:
            try:
                callback(record)
            except Exception as exc:
                log.warning("call observer failed: %s", describe_exception(exc))

    return observe


async def start(
    settings: Settings,
    *,
    on_plugin_failure: Callable[[PluginRecord], None] = report_failed_plugin,
    observer: Callable[[CallRecord], None] | None = log_call,
    connect: Connect | None = None,
    agent: Callable[[], Awaitable[ClientOffer]] | None = None,
) -> Runtime:
    """Load plugins and build the registry and invoker; raises :class:`~awf_mcp.errors.AwfError`.

    ``agent`` returns what to advertise to the upstream servers, awaited after the plugins
    have loaded and only when servers are configured (``None``: nothing).
    """
    plugins = load_plugins(settings, on_failure=on_plugin_failure)
    try:
        if settings.servers:
            offer = await agent() if agent is not None else NO_OFFER
            plugins.records.extend(await start_servers(settings, connect, offer=offer))
        registry = build(plugins.records, settings)
    except BaseException:
        await close_providers(plugins.providers)
        raise
    for record in plugins.records:
        if not record.ok and record.providers:
            on_plugin_failure(record)
    policies = policies_from(plugins.manager)
    invoker = ToolInvoker(
        registry,
        timeout_seconds=settings.call_timeout_seconds,
        policy=policies.call,
        observer=observer,
        output_budget=settings.output_budget,
        path_policy=policies.path,
        client_roots=ClientRoots(settings.roots, explicit=settings.roots_explicit),
    )
    return Runtime(
        settings=settings,
        plugins=plugins,
        registry=registry,
        invoker=invoker,
        instructions=instructions_of(settings, plugins),
    )


def instructions_of(settings: Settings, plugins: LoadedPlugins) -> str:
    """awf-mcp's ``instructions``: its own, the plugins' paragraphs, the upstreams' relayed."""
    instructions = server_instructions(settings, plugin_paragraphs(plugins.manager))
    relayed = upstream_instructions(plugins.records)
    return f"{instructions}\n\n{relayed}" if relayed else instructions


async def start_servers(
    settings: Settings, connect: Connect | None = None, *, offer: ClientOffer = NO_OFFER
) -> list[PluginRecord]:
    """Start the configured upstream servers through the SDK client adapter (or ``connect``),
    advertising ``offer`` to them."""
    if connect is None:
        from awf_mcp.wire.client import connect as sdk_connect

        connect = sdk_connect
    return await start_all(
        settings.servers,
        connect,
        roots=settings.roots,
        strict=settings.strict,
        offer=offer,
        sign_in=_sign_in_without_browser,
    )


async def _sign_in_without_browser(spec: ServerSpec, show: Callable[[str], None]) -> None:
    """:func:`awf_mcp.wire.oauthsignin.sign_in_without_browser`, imported only when a sign-in starts."""
    from awf_mcp.wire.oauthsignin import sign_in_without_browser

    await sign_in_without_browser(spec, show)


class AgentInput:
    """The agent's input frames, the first one read ahead; see "What the agent supports" above."""

    def __init__(self, frames: AsyncIterator[Frame | Oversized]) -> None:
        self._frames = frames
        self._first: asyncio.Task[Frame | Oversized | None] | None = None

    def _read_first(self) -> asyncio.Task[Frame | Oversized | None]:
        if self._first is None:

            async def first() -> Frame | Oversized | None:
                return await anext(self._frames, None)

            self._first = asyncio.get_running_loop().create_task(first(), name="awf-mcp first frame")
        return self._first

    async def offer(self, seconds: float = AGENT_FIRST_MESSAGE_SECONDS) -> ClientOffer:
        """What the agent's first message declares it supports; nothing after ``seconds`` of silence."""
        from awf_mcp.wire.client import offer_from_first_message
        from awf_mcp.wire.framing import Frame

        first = self._read_first()
        done, _ = await asyncio.wait({first}, timeout=seconds)
        if not done:
            log.info("no message from the agent within %g s: upstreams are told of no capability", seconds)
            return NO_OFFER
        item = first.result()
        return offer_from_first_message(item.data) if isinstance(item, Frame) else NO_OFFER

    async def frames(self) -> AsyncIterator[Frame | Oversized]:
        """Every frame, the first one included, until EOF."""
        item = await self._read_first()
        if item is None:
            return
        yield item
        async for item in self._frames:
            yield item

    def close(self) -> None:
        """Stop the read ahead if nothing has taken its frame."""
        if self._first is not None and not self._first.done():
            self._first.cancel()


def settle() -> None:
    """Freeze the objects alive after start-up in the collector's permanent generation.

    They live as long as the process anyway. Without this, every full collection
    rescans the tens of thousands of objects start-up left (about 80,000 from the SDK alone), and interpreter
    shutdown spends about a quarter of a second on them after stdin EOF (measured
    with ``bench/run.py --only exit``). Call it once, after :func:`start`.
    """
    gc.freeze()


async def _close_one(provider: ToolProvider) -> None:
    try:
        with anyio.fail_after(CLOSE_TIMEOUT_SECONDS):
            await call_either(provider.close)
    except Exception as exc:
        log.warning("closing %s failed: %s", type(provider).__name__, describe_exception(exc))


async def close_providers(providers: list[ToolProvider]) -> None:
    """Close ``providers`` concurrently, shielded from cancellation, each one bounded in time."""
    with anyio.CancelScope(shield=True):
        async with anyio.create_task_group() as group:
            for provider in providers:
                group.start_soon(_close_one, provider)


async def close(runtime: Runtime) -> None:
    """Close every provider, concurrently, each bounded by ``CLOSE_TIMEOUT_SECONDS``."""
    await close_providers(runtime.providers)


@contextlib.asynccontextmanager
async def open_runtime(
    settings: Settings,
    *,
    on_plugin_failure: Callable[[PluginRecord], None] = report_failed_plugin,
    observer: Callable[[CallRecord], None] | None = log_call,
    agent: Callable[[], Awaitable[ClientOffer]] | None = None,
) -> AsyncIterator[Runtime]:
    """:func:`start`, then :func:`close` when the block ends, however it ends.

    A command's whole life runs in one event loop inside this block, so providers
    that hold loop resources (upstream servers' sessions) are closed on the loop
    that opened them.
    """
    runtime = await start(settings, on_plugin_failure=on_plugin_failure, observer=observer, agent=agent)
    try:
        yield runtime
    finally:
        await close(runtime)


EVERY_SERVER = "*"
""":func:`run_command`'s ``for_tool`` default: start every configured upstream server."""


def run_command(
    options: ServeOptions, work: Callable[[Any], Awaitable[T]], for_tool: str | None = EVERY_SERVER
) -> T:
    """A command's one event loop: load the settings, start the runtime, ``await work(runtime)``, close it.

    ``for_tool`` names the one tool the command needs: only the upstream servers that may
    serve it are started (:func:`~awf_mcp.core.registry.serving`; ``None``: no upstream server).
    Starting them is announced on stderr.
    """
    configure_logging("WARNING")
    settings = load_settings(options)
    if for_tool != EVERY_SERVER:
        settings = serving(settings, for_tool)
    announce_servers(settings)

    async def run() -> T:
        async with open_runtime(settings) as runtime:
            return await work(runtime)

    return anyio.run(run)


def served_tools(options: ServeOptions, for_tool: str | None = EVERY_SERVER) -> list[tuple[str, bool]]:
    """``(name, read_only)`` of every tool ``serve`` would serve with OPTIONS: what the trust
    hints of ``config`` and ``servers import`` name, and what ``--trust read-only`` approves.
    ``for_tool`` limits the upstream servers started, as for :func:`run_command`."""

    async def served(runtime: Runtime) -> list[tuple[str, bool]]:
        return [
            (d.name, bool(d.annotations is not None and d.annotations.read_only))
            for d in runtime.registry.definitions()
        ]

    return run_command(options, served, for_tool=for_tool)


async def _stop_on_signal(stop: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            stop()
            return


def serves_shell(registry: Registry) -> bool:
    """Whether the built-in Bash is served, under whatever name."""
    return any(tool.definition.source == BUILTIN_SOURCE and tool.original_name == "Bash" for tool in registry)


async def _reload_on_hangup(*reloads: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGHUP) as signals:
        async for _ in signals:
            log.info("received SIGHUP, reloading")
            for reload in reloads:
                reload()


def watches_a_config_file(options: ServeOptions | None) -> bool:
    """Whether a ``serve`` with ``options`` has a config file to watch (:func:`live_reload`)."""
    from awf_mcp.core.reload import watched_files

    return options is not None and bool(watched_files(options, Path.cwd()))


def live_reload(
    runtime: Runtime,
    server: McpServer,
    options: ServeOptions,
    agent: Callable[[], Awaitable[ClientOffer]] | None = None,
) -> Reloader:
    """The :class:`~awf_mcp.core.reload.Reloader` of a serving process: it starts servers as start-up
    did (advertising what the agent supports), and updates the runtime and the instructions."""
    from awf_mcp.core.reload import Reloader

    async def start_more(settings: Settings, specs: Sequence[ServerSpec]) -> list[PluginRecord]:
        offer = await agent() if agent is not None else NO_OFFER
        return await start_servers(replace(settings, servers=tuple(specs)), offer=offer)

    def applied(settings: Settings, plugins: LoadedPlugins) -> None:
        runtime.settings = settings
        runtime.instructions = instructions_of(settings, plugins)
        server.reconfigured(runtime.instructions)

    return Reloader(
        runtime.settings,
        options,
        plugins=runtime.plugins,
        registry=runtime.registry,
        invoker=runtime.invoker,
        catalog=server.catalog,
        start_servers=start_more,
        close_providers=close_providers,
        on_plugin_failure=report_failed_plugin,
        on_applied=applied,
    )


async def serve_http(
    settings: Settings,
    version: str,
    *,
    host: str,
    port: int,
    token: str | None,
    show_token: bool = False,
    token_file: Path | None = None,
    tokens: NamedTokens | None = None,
    auth: HttpAuth | None = None,
    allow_shell: bool = False,
    observer: Callable[[CallRecord], None] | None = log_call,
    state_keys: StateKeys | None = None,
    options: ServeOptions | None = None,
) -> None:
    """Run ``awf-mcp serve --transport http`` until SIGTERM or SIGINT.

    ``tokens`` are the static tokens accepted (SIGHUP reads their file again), ``auth`` the
    authorization server whose access tokens are (discovered before the port opens); neither
    means no token at all (``--no-token``). On a non-loopback ``host``, a served Bash is
    refused unless ``allow_shell``: every caller would run commands with this host's rights.

    The URL is logged at INFO once the port is bound. With ``show_token`` (the token is
    awf-mcp's own) the URL carries the token, and when it is kept in ``token_file`` a
    second line says where and how else to send it. Without a token, a warning says who
    can use the server. ``state_keys`` seal ``request_state`` (:mod:`awf_mcp.state.statekey`; ``None``:
    a key of this process). With ``options`` (those the settings were loaded with), the config file
    is watched and reloaded live (:mod:`awf_mcp.core.reload`), and at once on SIGHUP.
    """
    from awf_mcp.state.httptoken import NamedTokens
    from awf_mcp.wire import http
    from awf_mcp.wire import server as adapter
    from awf_mcp.wire.httpauth import Access

    watch_children_with_pidfds()

    def announce(url: str) -> None:
        if show_token and token:
            log.info("listening on %s?token=%s", url, token)
            if token_file is not None:
                log.info(
                    "the token is kept in %s; clients may send 'Authorization: Bearer %s' instead",
                    token_file,
                    token,
                )
        else:
            log.info("listening on %s", url)
        if auth is not None:
            log.info("accepting the access tokens of %s for %s", auth.issuer, auth.audience)
        if access is None:
            log.warning(
                "serving %s without a token (--no-token): every user of this machine can run "
                "every tool there as you, Bash included",
                url,
            )

    reloadable = watches_a_config_file(options)
    access = None
    if tokens is not None or auth is not None:
        access = await Access.start(tokens or NamedTokens(), auth)
    try:
        listener = http.listen(host, port)  # a port in use is reported before anything starts
        with listener:  # closed here should start-up fail before uvicorn owns it
            async with open_runtime(settings, observer=observer) as runtime:
                if host not in http.LOOPBACK_HOSTS and not allow_shell and serves_shell(runtime.registry):
                    raise UserError(
                        f"serving {host} would let every caller run Bash with this host's rights, "
                        "as its user: pass --allow-shell if that is meant, or --exclude Bash"
                    )
                mcp_server = adapter.McpServer(
                    runtime.invoker,
                    version=version,
                    instructions=runtime.instructions,
                    state_keys=state_keys.keys if state_keys is not None else (),
                    reloadable=reloadable,
                )
                if state_keys is not None:
                    log.info("request_state is sealed with %s", state_keys.describe())
                settle()
                stop = anyio.Event()
                async with anyio.create_task_group() as group:
                    group.start_soon(_stop_on_signal, stop.set)
                    on_hangup = [access.reload] if access is not None else []
                    if options is not None and reloadable:
                        reloader = live_reload(runtime, mcp_server, options)
                        watch = reloader.watch()
                        group.start_soon(reloader.follow, watch)
                        on_hangup.append(watch.now)
                    if on_hangup:
                        group.start_soon(_reload_on_hangup, *on_hangup)
                    await http.serve_http(
                        mcp_server,
                        host,
                        port,
                        stop=stop,
                        access=access,
                        on_listening=announce,
                        listener=listener,
                    )
                    group.cancel_scope.cancel()
    finally:
        if access is not None:
            await access.aclose()


async def serve_stdio(
    settings: Settings,
    version: str,
    observer: Callable[[CallRecord], None] | None = log_call,
    options: ServeOptions | None = None,
) -> None:
    """Run ``awf-mcp serve`` on stdio until EOF or a signal; see the module docstring. With ``options``
    (those the settings were loaded with), the config file is reloaded live, as :func:`serve_http` does."""
    from awf_mcp.wire.framing import MAX_MESSAGE_BYTES, FrameReader, claim_stdio
    from awf_mcp.wire.server import McpServer

    watch_children_with_pidfds()
    reloadable = watches_a_config_file(options)
    with claim_stdio() as wire:
        agent = AgentInput(FrameReader(wire.read_fd, MAX_MESSAGE_BYTES).frames())
        try:
            async with open_runtime(settings, observer=observer, agent=agent.offer) as runtime:
                server = McpServer(
                    runtime.invoker,
                    version=version,
                    instructions=runtime.instructions,
                    reloadable=reloadable,
                )
                settle()
                async with anyio.create_task_group() as group:
                    group.start_soon(_stop_on_signal, group.cancel_scope.cancel)
                    if options is not None and reloadable:
                        reloader = live_reload(runtime, server, options, agent.offer)
                        watch = reloader.watch()
                        group.start_soon(reloader.follow, watch)
                        group.start_soon(_reload_on_hangup, watch.now)
                    await server.serve_stdio(wire, agent.frames())
                    log.info("stdin closed, shutting down")
                    group.cancel_scope.cancel()
        finally:
            agent.close()
