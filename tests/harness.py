"""End-to-end harness: a real ``awf-mcp serve`` subprocess driven by the SDK's own client.

``mcp_session(*serve_args, cwd=..., env=...)`` starts the server exactly as an
agent does (a subprocess speaking JSON-RPC on stdin/stdout), performs the
``initialize`` handshake with :class:`mcp.client.session.ClientSession`, and
yields the session. ``AWF_MCP_BINARY`` (the frozen single executable) replaces
``python -m awf_mcp`` when set, so the same tests run against both.

``server_command(*args)`` is the argv that starts awf-mcp, for tests that need
the raw process (signals, EOF, byte-level frames).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


def server_command(*args: str) -> list[str]:
    """The argv that runs ``awf-mcp ARGS...`` (the frozen binary when AWF_MCP_BINARY is set)."""
    binary = os.environ.get("AWF_MCP_BINARY")
    if binary:
        return [binary, *args]
    return [sys.executable, "-m", "awf_mcp", *args]


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a server subprocess: this one, plus ``extra``."""
    env = dict(os.environ)
    env.pop("AWF_MCP_PLUGINS", None)
    env.pop("AWF_MCP_NO_PLUGINS", None)
    env.update(extra or {})
    return env


@asynccontextmanager
async def mcp_session(
    *serve_args: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    errlog: Any = None,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``awf-mcp serve SERVE_ARGS...``."""
    command = server_command("serve", *serve_args)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(cwd) if cwd else None, env=server_env(env)
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session
