"""``awf-mcp servers list [--json]`` and ``awf-mcp servers import claude|gemini|codex [--write]``.

``servers import`` is :func:`awf_mcp.ops.serverimport.import_servers`. ``servers list``
shows the configured upstream MCP servers, their state and tools:

Every enabled server is started exactly as ``awf-mcp serve`` starts it (concurrently,
each bounded by its ``startup_timeout_seconds``), asked for its tools, and stopped.
A server shows as ``running`` (with its tools, under their served names), ``failed``
(with the reason) or ``disabled``. Nothing secret is shown: ``env`` and ``headers`` by
key only, ``args`` and ``url`` as written in the file, before ``${VAR}`` expansion.

``--json`` prints ``{"servers": [{"name", "transport", "enabled", "state", "reason",
"tools", "command", "args", "env", "cwd" | "url", "headers"}]}``.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions

servers_app = typer.Typer(help="Inspect the upstream MCP servers awf-mcp serves.", no_args_is_help=True)


def _states(options: ServeOptions) -> list[dict[str, Any]]:
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core import config
    from awf_mcp.core.servers import ServerSpec

    settings = config.load(options)
    specs: dict[str, ServerSpec] = {spec.name: spec for spec in settings.servers}
    runtime.announce_servers(settings)

    async def collect() -> list[dict[str, Any]]:
        records = await runtime.start_servers(settings)
        try:
            shown = []
            for record in records:
                row = specs[record.name].public()
                state, _, reason = record.status.partition(": ")
                row["state"] = "running" if record.ok else state
                row["reason"] = reason
                row["tools"] = record.tool_names
                shown.append(row)
            return shown
        finally:
            await runtime.close_providers([entry.provider for r in records for entry in r.providers])

    return anyio.run(collect)


@servers_app.command("list")
@with_options("config")
def servers_list(
    json_output: Annotated[bool, typer.Option("--json", help="Print stable JSON for scripts.")] = False,
    *,
    options: ServeOptions,
) -> None:
    """Start each configured server, show its state and tools, and stop it."""
    from awf_mcp.core.observability import configure_logging

    configure_logging("ERROR")
    rows = _states(options)
    if json_output:
        print(json.dumps({"servers": rows}, indent=2))
        return
    if not rows:
        print("no servers configured: add [servers.NAME] tables to awf-mcp.toml (see docs/upstreams.md)")
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("server", "transport", "state", "tools")
    for row in rows:
        state = row["state"] + (f": {row['reason']}" if row["reason"] else "")
        tools = ", ".join(row["tools"]) if row["tools"] else "-"
        table.add_row(row["name"], row["transport"], state, tools)
    Console().print(table)


@servers_app.command("import")
def servers_import(
    client: Annotated[
        str, typer.Argument(help="The agent whose MCP servers to import: claude, gemini or codex.")
    ],
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Append them to awf-mcp.toml; swap them for the awf entry in the agent's file (.bak kept).",
        ),
    ] = False,
    scope: Annotated[
        str, typer.Option("--scope", help="project or user: which of the agent's files.")
    ] = "project",
    config: Annotated[
        str | None, typer.Option("--config", help="The awf-mcp TOML file (default: ./awf-mcp.toml).")
    ] = None,
) -> None:
    """Copy an agent's MCP servers into awf-mcp.toml (print only, unless --write)."""
    from pathlib import Path

    from awf_mcp.ops.serverimport import import_servers

    print(import_servers(client, write=write, scope=scope, config=Path(config) if config else None))
