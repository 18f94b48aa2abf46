"""The ``awf-mcp`` command line (Typer).

Commands: ``serve``, ``tools list``, ``tools call``, ``config CLIENT``, ``plugins
list|install|uninstall``, ``plugin init`` and ``--version``. This module parses
arguments, prints (rich tables for people, stable JSON for scripts) and maps
:class:`~awf_mcp.errors.AwfError` to exit codes (see :mod:`awf_mcp.errors`); the
work is done by :mod:`awf_mcp.cli.runtime` (and :mod:`awf_mcp.ops.clientconfig`,
:mod:`awf_mcp.ops.installer`, :mod:`awf_mcp.ops.scaffold`).

``serve`` is parsed and run by :mod:`awf_mcp.cli.main`, which the entry point calls
without importing this module: start-up time is paid by every agent session.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from awf_mcp import __version__
from awf_mcp.cli import main as launch
from awf_mcp.cli.servers import servers_app
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

RootOpt = Annotated[
    list[str] | None,
    typer.Option("--root", help="Directory the built-in tools are confined to (repeatable; default: cwd)."),
]
NoBuiltinsOpt = Annotated[bool, typer.Option("--no-builtins", help="Serve plugin tools only.")]
OnlyOpt = Annotated[
    list[str] | None, typer.Option("--only", help="Serve only tools matching NAME or GLOB (repeatable).")
]
ExcludeOpt = Annotated[
    list[str] | None, typer.Option("--exclude", help="Do not serve tools matching NAME or GLOB (repeatable).")
]
ConfigOpt = Annotated[
    str | None,
    typer.Option("--config", help="Config file: AWF proxy JSON or TOML (default: ./awf-mcp.toml)."),
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Make any plugin failure fatal.")]
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
    help=launch.SERVE_DESCRIPTION + " Options: `awf-mcp serve --help`.",
    add_help_option=False,
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def serve(ctx: typer.Context) -> None:
    """Forwarded to :func:`awf_mcp.cli.main.serve`, which defines and parses the options."""
    launch.serve(ctx.args)


def _start(**options: Any) -> Any:
    import anyio

    from awf_mcp.cli import runtime

    launch.configure_logging("WARNING")
    settings = launch.load_settings(**options)
    return anyio.run(runtime.start, settings)


def _close(rt: Any) -> None:
    import anyio

    from awf_mcp.cli import runtime

    anyio.run(runtime.close, rt)


@tools_app.command("list")
def tools_list(
    json_output: JsonOpt = False,
    schema: Annotated[bool, typer.Option("--schema", help="Include each tool's input schema.")] = False,
    root: RootOpt = None,
    no_builtins: NoBuiltinsOpt = False,
    only: OnlyOpt = None,
    exclude: ExcludeOpt = None,
    config: ConfigOpt = None,
    strict: StrictOpt = False,
) -> None:
    """List the tools an agent will get, in tools/list order."""
    from awf_mcp.core.registry import long_names

    rt = launch.guarded(
        lambda: _start(
            root=root, no_builtins=no_builtins, only=only, exclude=exclude, config=config, strict=strict
        )
    )
    try:
        definitions = rt.registry.definitions()
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

            report = {
                "tools": rows,
                "warnings": warnings,
                "output_budget": budget.rules(rt.settings.output_budget),
            }
            print(json.dumps(report, indent=2, sort_keys=True))
        else:
            from rich.console import Console
            from rich.table import Table

            table = Table(title=f"{len(definitions)} tools", title_justify="left")
            table.add_column("name", style="bold")
            table.add_column("source")
            table.add_column("description")
            for d in definitions:
                summary = d.description.strip().splitlines()[0] if d.description.strip() else ""
                table.add_row(d.name, d.source, summary)
                if schema:
                    table.add_row("", "", json.dumps(d.input_schema, indent=2))
            Console().print(table)
            for warning in warnings:
                print(f"awf-mcp: warning: {warning}", file=sys.stderr)
    finally:
        _close(rt)


@tools_app.command("call")
def tools_call(
    name: Annotated[str, typer.Argument(help="Tool name, as in `awf-mcp tools list`.")],
    arguments: Annotated[str, typer.Argument(help="Arguments as a JSON object.")] = "{}",
    json_output: JsonOpt = False,
    root: RootOpt = None,
    no_builtins: NoBuiltinsOpt = False,
    config: ConfigOpt = None,
    strict: StrictOpt = False,
    call_timeout: Annotated[
        float | None, typer.Option("--call-timeout", help="Time limit in seconds.")
    ] = None,
    output_budget: Annotated[
        int | None,
        typer.Option("--output-budget", help="UTF-8 bytes of result text (default 10,000, as for Codex)."),
    ] = None,
) -> None:
    """Run one tool through the same registry and call path as the server, and print the result."""
    import anyio

    try:
        parsed = json.loads(arguments)
    except json.JSONDecodeError as exc:
        launch.fail(UserError(f"arguments are not valid JSON ({exc.msg} at column {exc.colno}): {arguments}"))
    rt = launch.guarded(
        lambda: _start(
            root=root,
            no_builtins=no_builtins,
            config=config,
            strict=strict,
            call_timeout=call_timeout,
            output_budget=output_budget,
        )
    )
    try:
        result = launch.guarded(lambda: anyio.run(rt.invoker.call, name, parsed))
    finally:
        _close(rt)
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
    root: RootOpt = None,
    only: OnlyOpt = None,
    exclude: ExcludeOpt = None,
    config: ConfigOpt = None,
    replace_native: Annotated[
        bool, typer.Option("--replace-native", help="Also switch off the client's own file and shell tools.")
    ] = False,
    restore_native: Annotated[
        bool, typer.Option("--restore-native", help="Remove exactly what --replace-native added, and stop.")
    ] = False,
    list_clients: Annotated[
        bool, typer.Option("--list", help="List every client with the file it would write, and stop.")
    ] = False,
) -> None:
    """Print (or --write) the MCP configuration that makes CLIENT start `awf-mcp serve`.

    --root, --only, --exclude and --config are passed on to `serve`; paths become absolute.
    """
    from awf_mcp.ops import clientconfig

    if list_clients:
        print(launch.guarded(clientconfig.list_clients), end="")
        return
    if client is None:
        launch.fail(UserError("name a client (awf-mcp config CLIENT), or list them: awf-mcp config --list"))
    launch.guarded(lambda: clientconfig.check_options(client, scope, trust, name))
    if restore_native and replace_native:
        launch.fail(UserError("--replace-native and --restore-native undo each other; give one of them"))
    if restore_native:
        print(launch.guarded(lambda: clientconfig.restore_native_tools(client, scope=scope)), end="")
        return
    # The tools the entry would serve, so that --trust read-only names the right ones.
    rt = launch.guarded(lambda: _start(root=root, only=only, exclude=exclude, config=config))
    try:
        tools = [
            (d.name, bool(d.annotations is not None and d.annotations.read_only))
            for d in rt.registry.definitions()
        ]
    finally:
        _close(rt)
    from pathlib import Path

    serve_args: list[str] = []
    for path in root or ():
        serve_args += ["--root", str(Path(path).expanduser().absolute())]
    for pattern in only or ():
        serve_args += ["--only", pattern]
    for pattern in exclude or ():
        serve_args += ["--exclude", pattern]
    if config:
        serve_args += ["--config", str(Path(config).expanduser().absolute())]
    text = launch.guarded(
        lambda: clientconfig.configure(
            client,
            write_files=write,
            scope=scope,
            trust=trust,
            server_name=name,
            tools=tools,
            serve_args=serve_args,
            replace_native=replace_native,
        )
    )
    print(text, end="" if text.endswith("\n") else "\n")


@plugins_app.command("list")
def plugins_list(json_output: JsonOpt = False, config: ConfigOpt = None) -> None:
    """Show every plugin found: distribution, version, location, tools and status."""
    failures: list[Any] = []
    import anyio

    from awf_mcp.cli import runtime

    settings = launch.guarded(lambda: launch.load_settings(config=config))
    from awf_mcp.core.plugins import load

    loaded = launch.guarded(lambda: load(settings, on_failure=failures.append))
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
        launch.fail(UserError(str(exc)))
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

    report = launch.guarded(
        lambda: installer.install(spec, target=Path(target) if target else None, find_links=find_links or ())
    )
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

    removed = launch.guarded(lambda: installer.uninstall(name, target=Path(target) if target else None))
    print("removed: " + ", ".join(removed))
