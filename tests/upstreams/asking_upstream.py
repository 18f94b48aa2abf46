"""An MCP server, written with the SDK's own low-level server, whose tools ask their client things.

``python asking_upstream.py`` serves on stdio:

* ``sample`` sends ``sampling/createMessage`` with ``prompt`` and answers ``sampled: <text> (<model>)``;
* ``elicit`` sends a form ``elicitation/create`` asking for ``name`` and answers
  ``elicited: <action> <content as JSON>``;
* ``roots`` sends ``roots/list`` and answers ``roots: <uri> <uri> ...``;
* ``seen`` answers the client capabilities the ``initialize`` request declared, as JSON;
* ``roots_changes`` answers how many ``notifications/roots/list_changed`` it has received;
* ``echo`` answers ``echo: <message>``.

Its prompt ``sampled`` (argument ``prompt``) asks the client's model too, and says what came
back as the prompt's message; its resource ``ask://name`` asks the client's user for a name,
and its text is the ``elicited: ...`` answer.

A request the client refuses makes the tool answer ``<tool> refused: <the error's message>``
(not an error result), so a test reads exactly what the client sent back. Every tool is
listed whatever the client declared.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

OBJECT = {"type": "object"}
roots_changes: list[object] = []
TOOLS = [
    types.Tool(
        name="sample",
        description="Ask the client's model.",
        input_schema={"type": "object", "properties": {"prompt": {"type": "string"}}},
    ),
    types.Tool(name="elicit", description="Ask the client's user for a name.", input_schema=OBJECT),
    types.Tool(name="roots", description="Ask the client for its roots.", input_schema=OBJECT),
    types.Tool(name="seen", description="The client capabilities declared.", input_schema=OBJECT),
    types.Tool(name="roots_changes", description="Roots changes announced.", input_schema=OBJECT),
    types.Tool(
        name="echo",
        description="Echo.",
        input_schema={"type": "object", "properties": {"message": {"type": "string"}}},
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


async def ask(ctx: ServerRequestContext[Any], name: str, arguments: dict[str, Any]) -> str:
    related = ServerMessageMetadata(related_request_id=ctx.request_id)
    if name == "sample":
        message = types.SamplingMessage(role="user", content=types.TextContent(text=str(arguments["prompt"])))
        request = types.CreateMessageRequest(
            params=types.CreateMessageRequestParams(messages=[message], max_tokens=50)
        )
        sampled = await ctx.session.send_request(request, types.CreateMessageResult, metadata=related)
        content = sampled.content
        said = content.text if isinstance(content, types.TextContent) else type(content).__name__
        return f"sampled: {said} ({sampled.model})"
    if name == "elicit":
        schema: Any = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        params = types.ElicitRequestFormParams(message="Your name?", requested_schema=schema)
        elicited = await ctx.session.send_request(
            types.ElicitRequest(params=params), types.ElicitResult, metadata=related
        )
        return f"elicited: {elicited.action} {json.dumps(elicited.content, sort_keys=True)}"
    listed = await ctx.session.send_request(types.ListRootsRequest(), types.ListRootsResult, metadata=related)
    return "roots: " + " ".join(str(root.uri) for root in listed.roots)


async def call_tool(
    ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    arguments = params.arguments or {}
    if params.name == "echo":
        return text(f"echo: {arguments.get('message', '')}")
    if params.name == "roots_changes":
        return text(str(len(roots_changes)))
    if params.name == "seen":
        client = ctx.session.client_params
        declared = client.capabilities.model_dump(by_alias=True, exclude_none=True) if client else None
        return text(json.dumps(declared, sort_keys=True))
    try:
        return text(await ask(ctx, params.name, arguments))
    except MCPError as exc:
        return text(f"{params.name} refused: {exc.error.message}")


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    argument = types.PromptArgument(name="prompt", required=True)
    return types.ListPromptsResult(
        prompts=[types.Prompt(name="sampled", description="Ask the model.", arguments=[argument])]
    )


async def get_prompt(
    ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    try:
        said = await ask(ctx, "sample", dict(params.arguments or {}))
    except MCPError as exc:
        said = f"sample refused: {exc.error.message}"
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(text=said))]
    )


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[types.Resource(uri="ask://name", name="name")])


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    try:
        said = await ask(ctx, "elicit", {})
    except MCPError as exc:
        said = f"elicit refused: {exc.error.message}"
    return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text=said)])


async def main() -> None:
    server: Server[Any] = Server(
        "asking",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )

    async def roots_changed(ctx: ServerRequestContext[Any], params: Any) -> None:
        roots_changes.append(params)

    server.add_notification_handler(
        "notifications/roots/list_changed", types.NotificationParams, roots_changed
    )
    async with stdio_server() as (reads, writes):
        await server.run(reads, writes, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
