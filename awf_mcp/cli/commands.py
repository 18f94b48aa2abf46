"""The ``awf-mcp`` command line (Typer).

Commands: ``serve`` (its help only), ``tools list``, ``tools call``, ``prompts list|get``,
``resources list|read`` (:mod:`awf_mcp.cli.offerings`), ``config CLIENT``, ``trust``,
``plugins list|install|uninstall|init`` (``plugin init``, the old name, is a hidden alias),
``servers list|import``, ``daemon status|stop`` (:mod:`awf_mcp.cli.daemon`), ``doctor``,
``--version`` and shell completion. :func:`run` shows
every help as git or gh do (no Python type labels, ``-h`` too).

A command starts only the upstream servers it needs (:func:`awf_mcp.cli.runtime.run_command`):
``tools call`` the ones that may serve its tool (:func:`awf_mcp.core.registry.serving`),
``config`` none unless ``--trust read-only`` needs their annotations; starting them is
announced on stderr.
This module parses arguments and prints (rich tables for people, stable JSON for
scripts); the work is done by :mod:`awf_mcp.cli.runtime` (and
:mod:`awf_mcp.clients.clientconfig`, :mod:`awf_mcp.install.installer`,
:mod:`awf_mcp.install.scaffold`). The options a command shares with ``serve`` come from
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
from typing import Annotated, Any

import typer
import typer.main
from typer.core import TyperArgument, TyperOption

from awf_mcp import __version__
from awf_mcp.cli.daemon import daemon_app
from awf_mcp.cli.doctor import doctor_command
from awf_mcp.cli.offerings import prompts_app, resources_app
from awf_mcp.cli.options import SERVE_DESCRIPTION, with_options, with_serve_options
from awf_mcp.cli.servers import servers_app
from awf_mcp.cli.trust import approve_at_users_command, trust_command
from awf_mcp.core.config import ServeOptions
from awf_mcp.errors import UserError
from awf_mcp.ports import MAX_TOOL_NAME_LENGTH, client_tool_name

HELP_OPTIONS = ["-h", "--help"]

app = typer.Typer(
    name="awf-mcp",
    help="A plugin-driven MCP tool server for AI coding agents.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_OPTIONS},
)
tools_app = typer.Typer(help="Inspect and run the tools an agent will get.", no_args_is_help=True)
plugins_app = typer.Typer(help="List, install and uninstall plugins.", no_args_is_help=True)
app.add_typer(tools_app, name="tools")
app.add_typer(plugins_app, name="plugins")
app.add_typer(servers_app, name="servers")
app.add_typer(prompts_app, name="prompts")
app.add_typer(resources_app, name="resources")
app.add_typer(daemon_app, name="daemon")
app.command("doctor")(doctor_command)
app.command("trust")(trust_command)

JsonOpt = Annotated[bool, typer.Option("--json", help="Print stable JSON for scripts.")]


def version_report() -> str:
    """What ``--version`` prints: awf-mcp's version first (alone on its line), then what it runs on."""
    import platform
    from importlib import metadata
    from pathlib import Path

    import awf_mcp

    try:
        sdk = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        sdk = "unknown"
    from awf_mcp.install.buildinfo import build_record
    from awf_mcp.processes.childenv import launched_executable

    frozen = getattr(sys, "frozen", False)
    lines = [
        f"awf-mcp {__version__}",
        f"MCP Python SDK (mcp) {sdk}",
        f"Python {platform.python_version()} ({'bundled' if frozen else sys.executable})",
        f"installed in {launched_executable() if frozen else Path(awf_mcp.__file__).parent}",
    ]
    if frozen:
        # The portable one file is a one-directory build that staticx unpacks at each start.
        kind = (
            "one-directory"
            if Path(awf_mcp.__file__).is_relative_to(Path(sys.executable).parent)
            and launched_executable() == sys.executable
            else "one-file"
        )
        record = build_record()
        carried = f", {record.get('libc', 'unknown')} carried" if record.get("portable") else ""
        commit = record.get("commit", "unknown")
        lines.append(
            f"build: {kind} single executable (PyInstaller){carried}, commit {commit}, "
            f"{platform.system()} {platform.machine()}"
        )
    return "\n".join(lines)


def _version_callback(value: bool) -> None:
    if value:
        print(version_report())
        raise typer.Exit(0)


@app.callback()
def root_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_version_callback,
            is_eager=True,
            help="Print the version, the MCP SDK's and Python's, and where awf-mcp is installed.",
        ),
    ] = False,
) -> None:
    """A plugin-driven MCP tool server for AI coding agents."""


@app.command("serve", help=SERVE_DESCRIPTION)
@with_serve_options
def serve() -> None:
    """Its help only: :func:`awf_mcp.cli.main.main` runs ``serve`` itself, without Typer, and hands
    ``serve --help`` here, so that the help looks like every other command's."""
    raise UserError("serve runs from the awf-mcp entry point: awf-mcp serve [OPTIONS]")


CLIENT_NAMES = {"claude": "claude-code", "codex": "codex-mcp-client", "gemini": "gemini-cli-mcp-client"}
"""The ``clientInfo.name`` each client sends, by the name ``--client`` takes."""


@tools_app.command("list")
@with_options("roots", "no_builtins", "only", "exclude", "config", "strict")
def tools_list(
    json_output: JsonOpt = False,
    schema: Annotated[bool, typer.Option("--schema", help="Include each tool's input schema.")] = False,
    client: Annotated[
        str | None,
        typer.Option(
            "--client",
            metavar="NAME",
            help="What this client is offered: claude or codex (every tool), gemini or any other name "
            "(past [discovery] threshold: the built-ins and a search).",
        ),
    ] = None,
    *,
    options: ServeOptions,
) -> None:
    """List the tools an agent will get, in tools/list order."""
    from awf_mcp.cli.runtime import run_command
    from awf_mcp.core import discovery
    from awf_mcp.core.registry import long_names

    async def listing(rt: Any) -> tuple[list[Any], int | None, Any]:
        return rt.registry.definitions(), rt.settings.output_budget, rt.settings.discovery

    definitions, output_budget, chosen = run_command(options, listing)
    if client is not None:
        named = CLIENT_NAMES.get(client.strip().lower(), client)
        definitions, _searching = discovery.offered(definitions, named, chosen)
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
    from awf_mcp.cli.terminal import Cell, print_table

    columns = ["name", "source", "description"] + (["input schema"] if schema else [])
    cells: list[list[Cell]] = []
    for d in definitions:
        summary = d.description.strip().splitlines()[0] if d.description.strip() else ""
        cells.append([d.name, d.source, summary])  # an upstream's text, made inert by print_table
        if schema:
            shown_schema = json.dumps(d.input_schema, indent=2 if sys.stdout.isatty() else None)
            cells[-1].append(shown_schema.splitlines())
    print_table(f"{len(definitions)} tools", columns, cells)
    for warning in warnings:
        print(f"awf-mcp: warning: {warning}", file=sys.stderr)


@tools_app.command("call")
@with_options(
    "roots", "no_builtins", "only", "exclude", "config", "strict", "call_timeout_seconds", "output_budget"
)
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

    from awf_mcp.cli.runtime import run_command

    async def call(rt: Any) -> Any:
        return await rt.invoker.call(name, parsed)

    result = run_command(options, call, for_tool=name)
    if json_output:
        payload: dict[str, Any] = {  # the field names of MCP's CallToolResult
            "isError": result.is_error,
            "content": [
                {"type": c.type, "text": c.text}
                if c.type == "text"
                else {"type": c.type, "mimeType": c.mime_type, "data": c.data}
                for c in result.content
            ],
        }
        if result.structured_content is not None:
            payload["structuredContent"] = result.structured_content
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
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            help="Reach a team gateway (serve --transport http) at this URL instead of starting a server.",
        ),
    ] = None,
    token_env: Annotated[
        str | None,
        typer.Option(
            "--token-env",
            help="With --url: the environment variable that holds the gateway's token (the file names it).",
        ),
    ] = None,
    *,
    options: ServeOptions,
) -> None:
    """Print (or --write) the MCP configuration that makes CLIENT start `awf-mcp serve`.

    --root, --only, --exclude and --config are passed on to `serve`; paths become absolute.
    With --url the entry names a remote awf-mcp instead (claude, gemini, codex), and
    --token-env the variable its bearer token is read from; without it the client signs in.
    """
    from awf_mcp.cli.options import serve_argv
    from awf_mcp.clients import clientconfig

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

    gateway = clientconfig.parse_gateway(url, token_env) if url is not None or token_env is not None else None
    if write and options.config and gateway is None:
        from pathlib import Path

        approve_at_users_command(Path(os.path.abspath(os.path.expanduser(options.config))))
    # Only --trust read-only needs the upstreams' annotations; else none is started. A
    # gateway's tools are its own: the read-only built-ins stand for them.
    tools = None
    if gateway is None:
        from awf_mcp.cli.runtime import EVERY_SERVER, served_tools

        tools = served_tools(options, for_tool=EVERY_SERVER if trust == "read-only" else None)
    text = clientconfig.configure(
        client,
        write_files=write,
        scope=scope,
        trust=trust,
        server_name=name,
        tools=tools,
        serve_args=serve_argv(options),
        replace_native=replace_native,
        gateway=gateway,
    )
    print(text, end="" if text.endswith("\n") else "\n")


@plugins_app.command("list")
@with_options("config")
def plugins_list(json_output: JsonOpt = False, *, options: ServeOptions) -> None:
    """Show every plugin found: distribution, version, location, tools, prompts, resources and status."""
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core import config
    from awf_mcp.core.catalog import offerings_of
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
            **offerings_of(r),
        }
        for r in loaded.records
    ]
    anyio.run(runtime.close_providers, loaded.providers)
    if json_output:
        print(json.dumps({"plugins": rows}, indent=2, sort_keys=True))
        return
    from awf_mcp.cli.terminal import print_table

    columns = ["name", "distribution", "version", "status", "tools", "prompts", "resources", "location"]
    cells = [
        [
            row["name"],
            row["distribution"],
            row["version"],
            row["status"],
            ", ".join(row["tools"]),
            ", ".join(row["prompts"]),
            ", ".join(row["resources"] + row["templates"]),
            row["location"],
        ]
        for row in rows
    ]
    print_table(f"{len(rows)} plugins", columns, cells)


PluginName = Annotated[str, typer.Argument(help="Plugin name: lowercase letters, digits and '_'.")]
PluginDir = Annotated[str, typer.Option("--dir", metavar="DIR", help="Where to create awf-plugin-NAME/.")]


@plugins_app.command("init")
def plugins_init(name: PluginName, directory: PluginDir = ".") -> None:
    """Scaffold a plugin distribution that installs with pip and passes its own test."""
    import shlex
    from pathlib import Path

    from awf_mcp.install.scaffold import ScaffoldError, scaffold_plugin

    try:
        created = scaffold_plugin(name, Path(directory))
    except ScaffoldError as exc:
        raise UserError(str(exc)) from None
    print(created)
    # The pip of the Python awf-mcp runs on (a bare `pip` may be another Python's); the single
    # executable has no pip, and loads plugins from its plugin directory.
    path = str(created.absolute())
    if getattr(sys, "frozen", False):
        install = shlex.join([sys.executable, "plugins", "install", path])
    else:
        install = shlex.join([sys.executable, "-m", "pip", "install", "-e", path])
    print(f"next: {install} && awf-mcp tools list", file=sys.stderr)


plugin_app = typer.Typer(help="The old name of `plugins init`.", no_args_is_help=True)
app.add_typer(plugin_app, name="plugin", hidden=True)


@plugin_app.command("init")
def plugin_init(name: PluginName, directory: PluginDir = ".") -> None:
    """The old name of `awf-mcp plugins init`; it still works."""
    print("awf-mcp: `plugin init` is now `plugins init`", file=sys.stderr)
    plugins_init(name, directory)


@plugins_app.command("install")
def plugins_install(
    spec: Annotated[
        str, typer.Argument(help="A requirement (awf-plugin-echo==1.0), a source directory or a wheel.")
    ],
    target: Annotated[
        str | None, typer.Option("--target", metavar="DIR", help="Plugin directory (default: the first one).")
    ] = None,
    find_links: Annotated[
        list[str] | None,
        typer.Option("--find-links", metavar="URL|DIR", help="Extra place to look for wheels (repeatable)."),
    ] = None,
) -> None:
    """Install a plugin into the plugin directory (what the single executable loads plugins from)."""
    from pathlib import Path

    from awf_mcp.cli.runtime import say
    from awf_mcp.install import installer

    report = installer.install(
        spec, target=Path(target) if target else None, find_links=find_links or (), progress=say
    )
    print(report.summary())


@plugins_app.command("uninstall")
def plugins_uninstall(
    name: Annotated[str, typer.Argument(help="Plugin or distribution name.")],
    target: Annotated[
        str | None, typer.Option("--target", metavar="DIR", help="Plugin directory (default: the first one).")
    ] = None,
) -> None:
    """Remove a plugin installed with `awf-mcp plugins install`, and what only it needed."""
    from pathlib import Path

    from awf_mcp.install import installer

    removed = installer.uninstall(name, target=Path(target) if target else None)
    print("removed: " + ", ".join(removed))


class _PlainArgument(TyperArgument):
    """An argument shown as ``NAME`` (``[NAME]`` when optional), without a type label."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None

    def get_usage_pieces(self, ctx: Any) -> list[str]:
        return [self.display_name_raw if self.required else f"[{self.display_name_raw}]"]


def _plain_help(command: Any) -> None:
    """Show the help as git, pip or gh do: ``--json``, ``--target DIR``, ``NAME``.

    Typer labels every parameter with its Python type (``<bool>``, ``<list[str]>``,
    ``{name}``). A switch gets no label; an option without a metavar is labelled with
    its name in capitals; an argument is named in capitals, without a type.
    """
    help_option = command.get_help_option(typer.Context(command, help_option_names=HELP_OPTIONS))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or param.name.upper()
            param.__class__ = _PlainArgument
        elif isinstance(param, TyperOption) and param.metavar is None:
            param.metavar = "" if param.is_flag else param.name.upper()
    for sub in getattr(command, "commands", {}).values():
        _plain_help(sub)


def run(args: list[str]) -> None:
    """Run the command line ``awf-mcp ARGS...`` (``serve`` only for its ``--help``)."""
    command = typer.main.get_command(app)
    _plain_help(command)
    command(args=args, prog_name="awf-mcp")
