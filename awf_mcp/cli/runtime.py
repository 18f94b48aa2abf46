"""Start-up and shutdown: from :class:`~awf_mcp.core.config.Settings` to a running server.

``cli`` calls these; they hold the order that matters:

1. claim stdio (so a plugin printing at import time cannot touch the wire);
2. :func:`start` — load plugins (:mod:`awf_mcp.core.plugins`), start the upstream MCP
   servers (:mod:`awf_mcp.core.upstream`, through :mod:`awf_mcp.wire.client`), build the registry
   (:mod:`awf_mcp.core.registry`; fatal on collision), wire the policy hook and the
   call observer into a :class:`~awf_mcp.core.calls.ToolInvoker`;
3. :func:`settle` — move everything start-up allocated (the SDK's and the
   plugins' modules, the registry) out of the garbage collector's reach;
4. serve until stdin EOF, SIGTERM or SIGINT;
5. :func:`close` — every provider's ``close()``, each bounded in time, so
   shutdown finishes within a second even when a provider hangs.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import signal
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import anyio

from awf_mcp.concurrency import call_either
from awf_mcp.core.calls import CallRecord, ToolInvoker
from awf_mcp.core.config import Settings
from awf_mcp.core.instructions import plugin_paragraphs, server_instructions
from awf_mcp.core.observability import call_fields
from awf_mcp.core.plugins import LoadedPlugins, PluginRecord
from awf_mcp.core.plugins import load as load_plugins
from awf_mcp.core.policy import policies_from
from awf_mcp.core.registry import Registry, build
from awf_mcp.core.roots import ClientRoots
from awf_mcp.core.upstream import Connect, start_all
from awf_mcp.core.upstream import instructions as upstream_instructions
from awf_mcp.errors import describe_exception
from awf_mcp.ports import ToolProvider

log = logging.getLogger("awf_mcp")

CLOSE_TIMEOUT_SECONDS = 0.5


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


def report_failed_plugin(record: PluginRecord) -> None:
    """The one stderr line for a plugin that was skipped."""
    log.warning("%s skipped: %s", record.describe(), record.status.removeprefix("failed: "))


def log_call(record: CallRecord) -> None:
    """The default call observer: one log record per call (fields under ``call`` for JSON logs)."""
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
) -> Runtime:
    """Load plugins and build the registry and invoker; raises :class:`~awf_mcp.errors.AwfError`."""
    plugins = load_plugins(settings, on_failure=on_plugin_failure)
    try:
        if settings.servers:
            plugins.records.extend(await start_servers(settings, connect))
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
    instructions = server_instructions(settings, plugin_paragraphs(plugins.manager))
    relayed = upstream_instructions(plugins.records)
    if relayed:
        instructions = f"{instructions}\n\n{relayed}"
    return Runtime(
        settings=settings, plugins=plugins, registry=registry, invoker=invoker, instructions=instructions
    )


async def start_servers(settings: Settings, connect: Connect | None = None) -> list[PluginRecord]:
    """Start the configured upstream servers through the SDK client adapter (or ``connect``)."""
    if connect is None:
        from awf_mcp.wire.client import connect as sdk_connect

        connect = sdk_connect
    return await start_all(settings.servers, connect, roots=settings.roots, strict=settings.strict)


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
) -> AsyncIterator[Runtime]:
    """:func:`start`, then :func:`close` when the block ends, however it ends.

    A command's whole life runs in one event loop inside this block, so providers
    that hold loop resources (upstream servers' sessions) are closed on the loop
    that opened them.
    """
    runtime = await start(settings, on_plugin_failure=on_plugin_failure, observer=observer)
    try:
        yield runtime
    finally:
        await close(runtime)


async def _stop_on_signal(stop: Callable[[], None]) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            log.info("received %s, shutting down", signal.Signals(signum).name)
            stop()
            return


async def serve_http(
    settings: Settings,
    version: str,
    *,
    host: str,
    port: int,
    token: str | None,
    observer: Callable[[CallRecord], None] | None = log_call,
) -> None:
    """Run ``awf-mcp serve --transport http`` until SIGTERM or SIGINT."""
    from awf_mcp.wire import server as adapter

    async with open_runtime(settings, observer=observer) as runtime:
        mcp_server = adapter.McpServer(runtime.invoker, version=version, instructions=runtime.instructions)
        settle()
        stop = anyio.Event()
        async with anyio.create_task_group() as group:
            group.start_soon(_stop_on_signal, stop.set)
            await adapter.serve_http(
                mcp_server,
                host,
                port,
                stop=stop,
                token=token,
                on_listening=lambda url: log.warning("listening on %s", url),
            )
            group.cancel_scope.cancel()


async def serve_stdio(
    settings: Settings, version: str, observer: Callable[[CallRecord], None] | None = log_call
) -> None:
    """Run ``awf-mcp serve`` on stdio until EOF or a signal; see the module docstring."""
    from awf_mcp.wire.framing import claim_stdio
    from awf_mcp.wire.server import McpServer

    with claim_stdio() as wire:
        async with open_runtime(settings, observer=observer) as runtime:
            server = McpServer(runtime.invoker, version=version, instructions=runtime.instructions)
            settle()
            async with anyio.create_task_group() as group:
                group.start_soon(_stop_on_signal, group.cancel_scope.cancel)
                await server.serve_stdio(wire)
                log.info("stdin closed, shutting down")
                group.cancel_scope.cancel()
