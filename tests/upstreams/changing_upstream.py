"""An MCP server, written with the SDK's own low-level server, whose tool set changes while it runs.

``python changing_upstream.py`` serves on stdio, advertising ``tools.listChanged``:

* ``wait`` sleeps ``seconds`` (default 1), then answers ``waited``;
* ``grow`` adds a tool called ``name`` (listed again if it is there already, so the list
  then holds the name twice) and sends ``notifications/tools/list_changed``; with ``linger``
  (seconds) it answers only that long after, so the change is known before the call ends;
* ``drop`` removes every tool called ``name`` (``wait`` too) and sends ``notifications/tools/list_changed``;
* an added tool answers ``I am <name>``;
With ``--offerings``, four more tools:

* ``offer`` adds a prompt (``prompt``) or a resource (``resource``, a URI) and sends its
  ``list_changed``; ``touch`` sends ``notifications/resources/updated`` for ``uri``; ``say`` sends a
  log message ``text`` (at ``info``), through the logger ``changing-logger``.

Prompts: ``greet`` (argument ``who``), ``huge`` (``mib`` MiB of text), and those offered. Resources:
``note://fixed``, those offered, and ``CHANGING_RESOURCES`` (an environment variable) more,
``many://<n>``. Templates: ``big://{megabytes}`` (that many MB of text), and ``{+anything}``, which
matches every URI (it answers ``anything: <uri>``). Completion of ``who`` offers ``Ada`` and ``Alan``.
Subscriptions are accepted and recorded; ``subscribed`` answers ``<count>: <uri>,<uri>...``.
"""

from __future__ import annotations

import os
import sys
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
prompts: list[str] = ["greet", "huge"]
resources: list[str] = ["note://fixed"]
subscribed: list[str] = []
OFFER = {
    "type": "object",
    "properties": {"prompt": {"type": "string"}, "resource": {"type": "string"}},
}
OFFERING_TOOLS = [
    types.Tool(name="offer", description="Add a prompt or a resource.", input_schema=OFFER),
    types.Tool(
        name="touch",
        description="Say a resource changed.",
        input_schema={"type": "object", "properties": {"uri": {"type": "string"}}},
    ),
    types.Tool(
        name="say",
        description="Send a log message.",
        input_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    ),
    types.Tool(name="subscribed", description="The subscriptions.", input_schema={"type": "object"}),
]


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
    if params.name == "offer":
        if arguments.get("prompt"):
            prompts.append(str(arguments["prompt"]))
            await ctx.session.send_prompt_list_changed()
        if arguments.get("resource"):
            resources.append(str(arguments["resource"]))
            await ctx.session.send_resource_list_changed()
        return text("ok")
    if params.name == "touch":
        await ctx.session.send_resource_updated(str(arguments["uri"]))
        return text("ok")
    if params.name == "say":
        await ctx.session.send_log_message("info", str(arguments["text"]), logger="changing-logger")
        return text("ok")
    if params.name == "subscribed":
        return text(f"{len(subscribed)}: " + ",".join(subscribed))
    if params.name in added:
        return text(f"I am {params.name}")
    return types.CallToolResult(content=[types.TextContent(text=f"no tool {params.name}")], is_error=True)


async def list_prompts(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(
                name=name,
                description=f"The prompt {name}.",
                arguments=[types.PromptArgument(name="who", required=name == "greet")]
                if name == "greet"
                else [types.PromptArgument(name="mib")]
                if name == "huge"
                else None,
            )
            for name in prompts
        ]
    )


async def get_prompt(
    ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
) -> types.GetPromptResult:
    arguments = params.arguments or {}
    if params.name == "greet":
        said = f"Hello, {arguments.get('who', '')}!"
    elif params.name == "huge":
        said = "x" * int(float(arguments.get("mib", "10")) * 1024 * 1024)
    else:
        said = f"I am the prompt {params.name}."
    return types.GetPromptResult(
        description=f"The prompt {params.name}.",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=said)),
            types.PromptMessage(role="assistant", content=types.TextContent(text="Noted.")),
        ],
    )


if "--offerings" in sys.argv:
    FIXED += OFFERING_TOOLS


def all_resources() -> list[str]:
    return resources + [f"many://{n}" for n in range(int(os.environ.get("CHANGING_RESOURCES", "0")))]


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    listed = all_resources()
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + 1000
    return types.ListResourcesResult(
        resources=[types.Resource(uri=uri, name=uri.split("://")[-1] or uri) for uri in listed[start:end]],
        next_cursor=str(end) if end < len(listed) else None,
    )


async def list_templates(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(
        resource_templates=[
            types.ResourceTemplate(uri_template="big://{megabytes}", name="big"),
            types.ResourceTemplate(uri_template="{+anything}", name="anything"),
        ]
    )


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    uri = str(params.uri)
    if uri.startswith("big://"):
        body = "y" * int(float(uri.removeprefix("big://")) * 1_000_000)
    elif uri in all_resources():
        body = f"the text of {uri}"
    else:
        body = f"anything: {uri}"
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=uri, text=body, mime_type="text/plain")]
    )


async def subscribe(
    ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
) -> types.EmptyResult:
    subscribed.append(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
) -> types.EmptyResult:
    if str(params.uri) in subscribed:
        subscribed.remove(str(params.uri))
    return types.EmptyResult()


async def complete(
    ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
) -> types.CompleteResult:
    names = ["Ada", "Alan"] if params.argument.name == "who" else []
    values = [name for name in names if name.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values)))


async def set_level(ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def main() -> None:
    server: Server[Any] = Server(
        "changing",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_completion=complete,
    )
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    options = server.create_initialization_options(
        NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)
    )
    async with stdio_server() as (reads, writes):
        await server.run(reads, writes, options)


if __name__ == "__main__":
    anyio.run(main)
