"""The floor: the MCP Python SDK's low-level server with one tool, over the SDK's own stdio transport.

``python bench/bare_server.py [FILE]`` serves one tool, ``read``, that returns
the text of ``FILE`` (read once at start-up and kept in memory; an empty string
without ``FILE``). Nothing else is imported: whatever awf-mcp costs on top of
this is awf-mcp's own.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TEXT = ""

TOOL = types.Tool(
    name="read",
    description="Return the benchmark file's text (held in memory).",
    input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
)


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=TEXT)])


async def main() -> None:
    server: Server[Any] = Server("bare-sdk-server", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as source:
            TEXT = source.read()
    anyio.run(main)
