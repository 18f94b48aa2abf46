"""The SDK adapter's tools/list_changed bookkeeping, in-process: what it remembers stays bounded.

Handshake-era connections that listed the tools are remembered to be told of a change, at most
:data:`~awf_mcp.wire.changes.LISTED_BY_LIMIT` of them, the latest to list; connections that come
and go never make it grow past that, and the latest is still told. Stateless-revision requests
(each its own connection, with no channel to tell) are never remembered: those clients listen.
"""

from __future__ import annotations

import anyio
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types import ToolListChangedNotification

from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.config import Settings
from awf_mcp.core.registry import build
from awf_mcp.wire.changes import LISTED_BY_LIMIT
from awf_mcp.wire.server import McpServer
from tests.unit.test_registry import provider_of, upstream

pytestmark = pytest.mark.anyio


async def test_connections_that_come_and_go_are_remembered_up_to_the_limit_and_the_latest_is_told() -> None:
    record = upstream("chg", "chg_a")
    server = McpServer(ToolInvoker(build([record], Settings()), timeout_seconds=5))
    for _ in range(LISTED_BY_LIMIT + 8):
        async with Client(server.sdk_server, mode="legacy") as gone:
            await gone.list_tools()
    assert len(server._listed_by) == LISTED_BY_LIMIT

    told: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            told.append(message)

    async with Client(server.sdk_server, mode="legacy", message_handler=on_message) as client:
        await client.list_tools()
        assert len(server._listed_by) == LISTED_BY_LIMIT
        await provider_of(record).change("chg_a", "chg_b", source="server:chg")
        with anyio.fail_after(5):
            while not told:
                await anyio.sleep(0.01)
        assert [tool.name for tool in (await client.list_tools()).tools] == ["chg_a", "chg_b"]


async def test_stateless_requests_are_never_remembered() -> None:
    record = upstream("chg", "chg_a")
    server = McpServer(ToolInvoker(build([record], Settings()), timeout_seconds=5))
    async with Client(server.sdk_server, mode="2026-07-28") as client:
        for _ in range(10):
            await client.list_tools()
    assert len(server._listed_by) == 0


async def test_nothing_is_remembered_when_the_tools_cannot_change() -> None:
    server = McpServer(ToolInvoker(build([], Settings()), timeout_seconds=5))
    async with Client(server.sdk_server, mode="legacy") as client:
        await client.list_tools()
    assert len(server._listed_by) == 0


async def test_once_listen_streams_are_ended_a_new_one_is_refused() -> None:
    """At shutdown, a stream opened after the others were ended would hold up the exit."""
    server = McpServer(ToolInvoker(build([upstream("chg", "chg_a")], Settings()), timeout_seconds=5))
    async with Client(server.sdk_server, mode="2026-07-28") as client:
        async with client.listen(tools_list_changed=True) as changes:
            server.end_listen_streams()
            with anyio.fail_after(5):
                assert [event async for event in changes] == []  # ended, gracefully
        with pytest.raises(MCPError, match="shutting down"):
            async with client.listen(tools_list_changed=True):
                pass
