"""An MCP server, written with the SDK's own low-level server, whose tool set changes while it runs.

``python changing_upstream.py`` serves on stdio, advertising ``tools.listChanged``:

* ``wait`` sleeps ``seconds`` (default 1), then answers ``waited``;
* ``grow`` adds a tool called ``name`` (listed again if it is there already, so the list
  then holds the name twice) and sends ``notifications/tools/list_changed``; with ``linger``
  (seconds) it answers only that long after, so the change is known before the call ends;
* ``drop`` removes every tool called ``name`` (``wait`` too) and sends ``notifications/tools/list_changed``;
* an added tool answers ``I am <name>``.
"""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.stdio import stdio_server

NAMED = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
GROW = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "linger": {"type": "number"}},
    "required": ["name"],
}
FIXED = [
    types.Tool(
        name="wait",
        description="Sleep.",
        input_schema={"type": "object", "properties": {"seconds": {"type": "number"}}},
    ),
    types.Tool(name="grow", description="Add a tool.", input_schema=GROW),
    types.Tool(name="drop", description="Remove a tool.", input_schema=NAMED),
]
added: list[str] = []


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    extra = [
        types.Tool(name=name, description=f"Added {name}.", input_schema={"type": "object"}) for name in added
    ]
    return types.ListToolsResult(tools=FIXED + extra)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "wait":
        await anyio.sleep(float(arguments.get("seconds", 1)))
        return text("waited")
    if params.name in ("grow", "drop"):
        name = str(arguments["name"])
        if params.name == "grow":
            added.append(name)
        else:
            added[:] = [n for n in added if n != name]
            FIXED[:] = [tool for tool in FIXED if tool.name != name]
        await ctx.session.send_tool_list_changed()
        await anyio.sleep(float(arguments.get("linger", 0)))
        return text("ok")
    if params.name in added:
        return text(f"I am {params.name}")
    return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)


async def main() -> None:
    server: Server[Any] = Server("changing", on_list_tools=list_tools, on_call_tool=call_tool)
    options = server.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (reads, writes):
        await server.run(reads, writes, options)


if __name__ == "__main__":
    anyio.run(main)
