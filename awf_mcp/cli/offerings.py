"""``awf-mcp prompts list|get`` and ``awf-mcp resources list|read``: what an agent gets besides tools.

Each command starts the runtime as ``tools call`` does and goes through the same catalog and
call path as ``serve`` (:class:`~awf_mcp.core.catalog.Catalog`: names, routing, the policy
hook, the audit log, the timeout, the output budget), so what is printed is what an agent
gets. ``--json`` prints stable JSON for scripts; otherwise text from servers and plugins is
printed inert (:func:`~awf_mcp.cli.terminal.shown`). A failed get or read exits with 3.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions
from awf_mcp.errors import UserError

prompts_app = typer.Typer(help="List and get the prompts an agent will get.", no_args_is_help=True)
resources_app = typer.Typer(help="List and read the resources an agent will get.", no_args_is_help=True)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print stable JSON for scripts.")]


def _with_catalog(options: ServeOptions, work: Any) -> Any:
    """``await work(catalog)`` in a started runtime (:func:`awf_mcp.cli.runtime.run_command`)."""
    from awf_mcp.cli.runtime import run_command
    from awf_mcp.core.catalog import Catalog

    async def run(rt: Any) -> Any:
        return await work(Catalog(rt.registry.records, rt.registry.settings, rt.invoker))

    return run_command(options, run)


def _print_table(title: str, columns: list[str], rows: list[list[str]]) -> None:
    from awf_mcp.cli.terminal import print_table

    print_table(title, columns, rows)


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _item_json(item: Any) -> dict[str, Any]:
    if item.type == "resource":
        return {
            "uri": item.uri,
            "mime_type": item.mime_type,
            **({"blob": item.data} if item.data else {"text": item.text}),
        }
    if item.type == "text":
        return {"type": "text", "text": item.text}
    return {"type": item.type, "mime_type": item.mime_type, "data": item.data, "uri": item.uri}


def _print_items(result: Any, roles: list[str] | None = None) -> None:
    from rich.console import Console

    console = Console()
    for index, item in enumerate(result.content):
        role = f"[{roles[index]}] " if roles and index < len(roles) else ""
        if item.text or item.type == "text":
            console.print(
                role + item.text, markup=False, highlight=False, style="red" if result.is_error else None
            )
        else:
            size = len(item.data) * 3 // 4
            console.print(f"{role}[{item.type} {item.uri or item.mime_type}, {size} bytes]", markup=False)


@prompts_app.command("list")
@with_options("roots", "no_builtins", "only", "exclude", "config", "strict")
def prompts_list(json_output: JsonOpt = False, *, options: ServeOptions) -> None:
    """List the prompts an agent will get (named like tools: <server>_<prompt>)."""

    async def listing(catalog: Any) -> list[Any]:
        return list(catalog.prompts())

    prompts = _with_catalog(options, listing)
    if json_output:
        rows = [
            {
                "name": p.name,
                "source": p.source,
                "description": p.description,
                "arguments": [
                    {"name": a.name, "description": a.description, "required": a.required}
                    for a in p.arguments
                ],
            }
            for p in prompts
        ]
        print(json.dumps({"prompts": rows}, indent=2, sort_keys=True))
        return
    cells = [
        [
            p.name,
            p.source,
            ", ".join(a.name + ("" if a.required else "?") for a in p.arguments),
            _first_line(p.description),
        ]
        for p in prompts
    ]
    _print_table(f"{len(prompts)} prompts", ["name", "source", "arguments", "description"], cells)


@prompts_app.command("get")
@with_options(
    "roots", "no_builtins", "only", "exclude", "config", "strict", "call_timeout_seconds", "output_budget"
)
def prompts_get(
    name: Annotated[str, typer.Argument(help="Prompt name, as in `awf-mcp prompts list`.")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object of strings.")] = "{}",
    json_output: JsonOpt = False,
    *,
    options: ServeOptions,
) -> None:
    """Get one prompt through the same catalog and call path as the server, and print its messages."""
    from awf_mcp.ports import PROMPT_ROLES

    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"arguments are not valid JSON ({exc.msg} at column {exc.colno}): {arguments}"
        ) from None

    async def get(catalog: Any) -> Any:
        return await catalog.get_prompt(name, parsed)

    result = _with_catalog(options, get)
    structured = result.structured_content if isinstance(result.structured_content, dict) else {}
    roles = list(structured.get(PROMPT_ROLES) or [])
    if json_output:
        messages = [
            {"role": roles[i] if i < len(roles) else "user", **_item_json(item)}
            for i, item in enumerate(result.content)
        ]
        payload = {
            "is_error": result.is_error,
            "description": structured.get("description", ""),
            "messages": messages,
        }
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        _print_items(result, None if result.is_error else roles)
    if result.is_error:
        raise typer.Exit(3)


@resources_app.command("list")
@with_options("roots", "no_builtins", "config", "strict")
def resources_list(json_output: JsonOpt = False, *, options: ServeOptions) -> None:
    """List the resources and resource templates an agent will get (URIs as their servers gave them)."""

    async def listing(catalog: Any) -> tuple[list[Any], list[Any]]:
        return list(catalog.resources()), list(catalog.templates())

    resources, templates = _with_catalog(options, listing)

    def row(r: Any) -> dict[str, Any]:
        return {
            "uri": r.uri,
            "name": r.name,
            "source": r.source,
            "description": r.description,
            "mime_type": r.mime_type,
        }

    if json_output:
        report = {"resources": [row(r) for r in resources], "templates": [row(t) for t in templates]}
        print(json.dumps(report, indent=2, sort_keys=True))
        return
    rows = [[r.uri, r.source, _first_line(r.description or r.name)] for r in resources]
    rows += [[t.uri, t.source, "(template) " + _first_line(t.description or t.name)] for t in templates]
    _print_table(
        f"{len(resources)} resources, {len(templates)} templates", ["uri", "source", "description"], rows
    )


@resources_app.command("read")
@with_options("roots", "no_builtins", "config", "strict", "call_timeout_seconds", "output_budget")
def resources_read(
    uri: Annotated[str, typer.Argument(help="A URI of `awf-mcp resources list`, or one a template matches.")],
    json_output: JsonOpt = False,
    *,
    options: ServeOptions,
) -> None:
    """Read one resource through the same catalog and call path as the server, and print it."""

    async def read(catalog: Any) -> Any:
        return await catalog.read_resource(uri)

    result = _with_catalog(options, read)
    if json_output:
        payload = {"is_error": result.is_error, "contents": [_item_json(item) for item in result.content]}
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        _print_items(result)
    if result.is_error:
        raise typer.Exit(3)
