"""The relay's floor: the MCP Python SDK's low-level server forwarding every tool call to one
stdio upstream through the SDK's own client, and nothing else.

``python bench/bare_relay.py COMMAND [ARG ...]`` starts ``COMMAND`` as its upstream (the SDK's
``stdio_client``), lists the upstream's tools as its own, and answers each ``tools/call`` with
the upstream's result (``ClientSession.call_tool``). No policy, audit, budget, pins or naming:
whatever awf-mcp's relay adds on top of what this adds is awf-mcp's own; what this adds is what
any relay built on the SDK pays (two sessions' validation and dispatch, a task per request).
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server


async def main(command: str, args: list[str]) -> None:
    upstream = StdioServerParameters(command=command, args=args)
    async with stdio_client(upstream) as (up_read, up_write), ClientSession(up_read, up_write) as client:
        await client.initialize()
        tools = (await client.list_tools()).tools

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            return types.ListToolsResult(tools=tools)

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> types.CallToolResult:
            result = await client.call_tool(params.name, params.arguments)
            assert isinstance(result, types.CallToolResult)
            return result

        server: Server[Any] = Server("bare-sdk-relay", on_list_tools=list_tools, on_call_tool=call_tool)
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: bare_relay.py COMMAND [ARG ...]")
    anyio.run(main, sys.argv[1], sys.argv[2:])
