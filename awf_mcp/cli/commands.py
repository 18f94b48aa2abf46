"""The ``awf-mcp`` command line (Typer).

Commands: ``serve``, ``tools list``, ``tools call``, ``prompts list|get``, ``resources list|read``
(:mod:`awf_mcp.cli.offerings`), ``config CLIENT``, ``plugins
list|install|uninstall``, ``plugin init``, ``servers list|import`` and ``--version``.
This module parses arguments and prints (rich tables for people, stable JSON for
scripts); the work is done by :mod:`awf_mcp.cli.runtime` (and
:mod:`awf_mcp.ops.clientconfig`, :mod:`awf_mcp.ops.installer`,
:mod:`awf_mcp.ops.scaffold`). The options a command shares with ``serve`` come from
:mod:`awf_mcp.cli.options`. A command raises :class:`~awf_mcp.errors.AwfError`;
:func:`awf_mcp.cli.main.main` turns it into its exit code. Each command runs in one
event loop.

``serve`` is parsed and run by :mod:`awf_mcp.cli.main`, which the entry point calls
without importing this module: start-up time is paid by every agent session.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import typer

from awf_mcp import __version__
from awf_mcp.cli.doctor import doctor_command
from awf_mcp.cli.offerings import prompts_app, resources_app
from awf_mcp.cli.options import SERVE_DESCRIPTION, with_options
from awf_mcp.cli.servers import servers_app
from awf_mcp.cli.trust import approve_at_users_command, trust_command
from awf_mcp.core.config import ServeOptions
from awf_mcp.errors import UserError
from awf_mcp.ports import MAX_TOOL_NAME_LENGTH, client_tool_name

app = typer.Typer(
    name="awf-mcp",
    help="A plugin-driven MCP tool server for AI coding agents.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
tools_app = typer.Typer(help="Inspect and run the tools an agent will get.", no_args_is_help=True)
plugins_app = typer.Typer(help="List, install and uninstall plugins.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
app.add_typer(plugins_app, name="plugins")
app.add_typer(servers_app, name="servers")
app.add_typer(prompts_app, name="prompts")
app.add_typer(resources_app, name="resources")
app.command("doctor")(doctor_command)
app.command("trust")(trust_command)

T = TypeVar("T")

JsonOpt = Annotated[bool, typer.Option("--json", help="Print stable JSON for scripts.")]


def _version_callback(value: bool) -> None:
    if value:
        print(f"awf-mcp {__version__}")
        raise typer.Exit(0)


@app.callback()
def root_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version_callback, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """A plugin-driven MCP tool server for AI coding agents."""


@app.command(
    help=SERVE_DESCRIPTION + " Options: `awf-mcp serve --help`.",
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def serve(ctx: typer.Context) -> None:
    """Forwarded to :func:`awf_mcp.cli.main.serve`, whose parser :mod:`awf_mcp.cli.options` generates."""
    from awf_mcp.cli.main import serve as serve_now

    serve_now(ctx.args)


def _run(options: ServeOptions, work: Callable[[Any], Awaitable[T]]) -> T:
    """Load the settings, start the runtime, ``await work(runtime)``, close it: one event loop."""
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging

    configure_logging("WARNING")
    settings = config.load(options)

    async def run() -> T:
        async with runtime.open_runtime(settings) as rt:
            return await work(rt)

    return anyio.run(run)


def served_tools(options: ServeOptions) -> list[tuple[str, bool]]:
    """``(name, read_only)`` of every tool ``serve`` would serve with OPTIONS: what the trust
    hints of ``config`` and ``servers import`` name, and what ``--trust read-only`` approves."""

    async def served(rt: Any) -> list[tuple[str, bool]]:
        return [
            (d.name, bool(d.annotations is not None and d.annotations.read_only))
            for d in rt.registry.definitions()
        ]

    return _run(options, served)


@tools_app.command("list")
@with_options("roots", "no_builtins", "only", "exclude", "config", "strict")
def tools_list(
    json_output: JsonOpt = False,
    schema: Annotated[bool, typer.Option("--schema", help="Include each tool's input schema.")] = False,
    *,
    options: ServeOptions,
) -> None:
    """List the tools an agent will get, in tools/list order."""
    from awf_mcp.core.registry import long_names

    async def listing(rt: Any) -> tuple[list[Any], int | None]:
        return rt.registry.definitions(), rt.settings.output_budget

    definitions, output_budget = _run(options, listing)
    too_long = long_names(definitions)
    warnings = [
        f"tool '{name}' exceeds {MAX_TOOL_NAME_LENGTH} characters as {client_tool_name('awf', name)}; "
        "some clients will refuse it: "
        "rename it in awf-mcp.toml"
        for name in too_long
    ]
    if json_output:
        rows = []
        for d in definitions:
            row: dict[str, Any] = {"name": d.name, "source": d.source, "description": d.description}
            if d.annotations is not None:
                row["annotations"] = {
                    k: v
                    for k, v in {
                        "readOnlyHint": d.annotations.read_only,
                        "destructiveHint": d.annotations.destructive,
                        "idempotentHint": d.annotations.idempotent,
                        "openWorldHint": d.annotations.open_world,
                    }.items()
                    if v is not None
                }
            if schema:
                row["input_schema"] = d.input_schema
            rows.append(row)
        from awf_mcp import budget

        report = {"tools": rows, "warnings": warnings, "output_budget": budget.rules(output_budget)}
        print(json.dumps(report, indent=2, sort_keys=True))
        return
    from rich.console import Console
    from rich.table import Table

    from awf_mcp.cli.terminal import shown

    table = Table(title=f"{len(definitions)} tools", title_justify="left")
    table.add_column("name", style="bold")
    table.add_column("source")
    table.add_column("description")
    for d in definitions:
        summary = d.description.strip().splitlines()[0] if d.description.strip() else ""
        table.add_row(shown(d.name), shown(d.source), shown(summary))  # an upstream's text, made inert
        if schema:
            table.add_row(
                "", "", "\n".join(shown(line) for line in json.dumps(d.input_schema, indent=2).splitlines())
            )
    Console().print(table)
    for warning in warnings:
        print(f"awf-mcp: warning: {warning}", file=sys.stderr)


@tools_app.command("call")
@with_options("roots", "no_builtins", "config", "strict", "call_timeout_seconds", "output_budget")
def tools_call(
    name: Annotated[str, typer.Argument(help="Tool name, as in `awf-mcp tools list`.")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object.")] = "{}",
    json_output: JsonOpt = False,
    *,
    options: ServeOptions,
) -> None:
    """Run one tool through the same registry and call path as the server, and print the result.

    The result is sized for the default output budget (10,000 bytes, as for Codex)
    unless --output-budget says otherwise.
    """
    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        problem = f"{exc.msg} at column {exc.colno}"
        raise UserError(f"arguments are not valid JSON ({problem}): {arguments}") from None

    async def call(rt: Any) -> Any:
        return await rt.invoker.call(name, parsed)

    result = _run(options, call)
    if json_output:
        payload: dict[str, Any] = {
            "is_error": result.is_error,
            "content": [
                {"type": c.type, "text": c.text}
                if c.type == "text"
                else {"type": c.type, "mime_type": c.mime_type, "data": c.data}
                for c in result.content
            ],
        }
        if result.structured_content is not None:
            payload["structured_content"] = result.structured_content
        print(json.dumps(payload, indent=2, sort_keys=True))
    else:
        from rich.console import Console

        console = Console()
        for item in result.content:
            if item.type == "text":
                console.print(
                    item.text, markup=False, highlight=False, style="red" if result.is_error else None
                )
            else:
                console.print(
                    f"[{item.type} {item.mime_type}, {len(item.data) * 3 // 4} bytes]", markup=False
                )
    if result.is_error:
        raise typer.Exit(3)


@app.command("config")
@with_options("roots", "only", "exclude", "config")
def client_config(
    client: Annotated[
        str | None,
        typer.Argument(help="claude, gemini, codex, cursor, vscode, zed, ... (`--list` names them all)."),
    ] = None,
    write: Annotated[
        bool, typer.Option("--write", help="Apply it to the client's file (a .bak copy is kept).")
    ] = False,
    scope: Annotated[
        str | None,
        typer.Option("--scope", help="project (files in the current directory) or user; default: project."),
    ] = None,
    trust: Annotated[
        str | None,
        typer.Option(
            "--trust",
            help="Let the client run tools without asking: read-only (Read, Glob, Grep, ...) or all.",
        ),
    ] = None,
    name: Annotated[str, typer.Option("--name", help="Server name in the client's config.")] = "awf",
    replace_native: Annotated[
        bool, typer.Option("--replace-native", help="Also switch off the client's own file and shell tools.")
    ] = False,
    restore_native: Annotated[
        bool, typer.Option("--restore-native", help="Remove exactly what --replace-native added, and stop.")
    ] = False,
    list_clients: Annotated[
        bool, typer.Option("--list", help="List every client with the file it would write, and stop.")
    ] = False,
    *,
    options: ServeOptions,
) -> None:
    """Print (or --write) the MCP configuration that makes CLIENT start `awf-mcp serve`.

    --root, --only, --exclude and --config are passed on to `serve`; paths become absolute.
    """
    from awf_mcp.cli.options import serve_argv
    from awf_mcp.ops import clientconfig

    if list_clients:
        print(clientconfig.list_clients(), end="")
        return
    if client is None:
        raise typer.BadParameter(
            "name a client (awf-mcp config CLIENT), or list them: awf-mcp config --list", param_hint="CLIENT"
        )
    clientconfig.check_options(client, scope, trust, name)
    if restore_native and replace_native:
        raise UserError("--replace-native and --restore-native undo each other; give one of them")
    if restore_native:
        print(clientconfig.restore_native_tools(client, scope=scope), end="")
        return

    if write and options.config:
        from pathlib import Path

        approve_at_users_command(Path(os.path.abspath(os.path.expanduser(options.config))))
    tools = served_tools(options)
    text = clientconfig.configure(
        client,
        write_files=write,
        scope=scope,
        trust=trust,
        server_name=name,
        tools=tools,
        serve_args=serve_argv(options),
        replace_native=replace_native,
    )
    print(text, end="" if text.endswith("\n") else "\n")


@plugins_app.command("list")
@with_options("config")
def plugins_list(json_output: JsonOpt = False, *, options: ServeOptions) -> None:
    """Show every plugin found: distribution, version, location, tools and status."""
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core import config
    from awf_mcp.core.plugins import load

    loaded = load(config.load(options), on_failure=lambda record: None)
    rows: list[dict[str, Any]] = [
        {
            "name": r.name,
            "distribution": r.distribution,
            "version": r.version,
            "location": r.location,
            "status": r.status,
            "tools": r.tool_names,
        }
        for r in loaded.records
    ]
    anyio.run(runtime.close_providers, loaded.providers)
    if json_output:
        print(json.dumps({"plugins": rows}, indent=2, sort_keys=True))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(rows)} plugins", title_justify="left")
    for column in ("name", "distribution", "version", "status", "tools", "location"):
        table.add_column(column)
    for row in rows:
        table.add_row(
            row["name"],
            row["distribution"],
            row["version"],
            row["status"],
            ", ".join(row["tools"]),
            row["location"],
        )
    Console().print(table)


plugin_app = typer.Typer(help="Write a new plugin.", no_args_is_help=True)
app.add_typer(plugin_app, name="plugin")


@plugin_app.command("init")
def plugin_init(
    name: Annotated[str, typer.Argument(help="Plugin name: lowercase letters, digits and '_'.")],
    directory: Annotated[str, typer.Option("--dir", help="Where to create awf-plugin-NAME/.")] = ".",
) -> None:
    """Scaffold a plugin distribution that installs with pip and passes its own test."""
    from pathlib import Path

    from awf_mcp.ops.scaffold import ScaffoldError, scaffold_plugin

    try:
        created = scaffold_plugin(name, Path(directory))
    except ScaffoldError as exc:
        raise UserError(str(exc)) from None
    print(created)
    print(f"next: pip install -e {created} && awf-mcp tools list", file=sys.stderr)


@plugins_app.command("install")
def plugins_install(
    spec: Annotated[
        str, typer.Argument(help="A requirement (awf-plugin-echo==1.0), a source directory or a wheel.")
    ],
    target: Annotated[
        str | None, typer.Option("--target", help="Plugin directory (default: the first one).")
    ] = None,
    find_links: Annotated[
        list[str] | None, typer.Option("--find-links", help="Extra place to look for wheels (repeatable).")
    ] = None,
) -> None:
    """Install a plugin into the plugin directory (what the single executable loads plugins from)."""
    from pathlib import Path

    from awf_mcp.ops import installer

    report = installer.install(spec, target=Path(target) if target else None, find_links=find_links or ())
    print(report.summary())


@plugins_app.command("uninstall")
def plugins_uninstall(
    name: Annotated[str, typer.Argument(help="Plugin or distribution name.")],
    target: Annotated[
        str | None, typer.Option("--target", help="Plugin directory (default: the first one).")
    ] = None,
) -> None:
    """Remove a plugin installed with `awf-mcp plugins install`, and what only it needed."""
    from pathlib import Path

    from awf_mcp.ops import installer

    removed = installer.uninstall(name, target=Path(target) if target else None)
    print("removed: " + ", ".join(removed))
