"""``awf-mcp servers list [--json]`` and ``awf-mcp servers import claude|gemini|codex [--write]``.

``servers import`` is :func:`awf_mcp.ops.serverimport.import_servers`. ``servers list``
shows the configured upstream MCP servers, their state and tools:

Every enabled server is started exactly as ``awf-mcp serve`` starts it (concurrently,
each bounded by its ``startup_timeout_seconds``), asked for its tools, and stopped.
A server shows as ``running`` (with its tools, under their served names, and a sentence for
each tool or ``instructions`` left out for passing a byte bound), ``failed`` (with the reason)
or ``disabled``. Nothing secret is shown: ``env`` and ``headers`` by
key only, ``args`` and ``url`` as written in the file, before ``${VAR}`` expansion.

``--json`` prints ``{"servers": [{"name", "transport", "enabled", "state", "reason",
"tools", "left_out", "command", "args", "env", "cwd" | "url", "headers"}]}``, plus
``"ignored_config": {"path", "approval", "would", "fix"}`` when a project's config file was
not used because the user has not approved it (:mod:`awf_mcp.core.trust`).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer

from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions, Settings

servers_app = typer.Typer(help="Inspect the upstream MCP servers awf-mcp serves.", no_args_is_help=True)


def _states(settings: Settings) -> list[dict[str, Any]]:
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core.servers import ServerSpec
    from awf_mcp.core.upstream import UpstreamProvider

    specs: dict[str, ServerSpec] = {spec.name: spec for spec in settings.servers}

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
                row["left_out"] = [
                    sentence
                    for entry in record.providers
                    if isinstance(entry.provider, UpstreamProvider)
                    for sentence in entry.provider.left_out
                ]
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
    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging

    configure_logging("ERROR")
    settings = config.load(options)
    rows = _states(settings)
    ignored = settings.ignored_config
    # As doctor does: 1 when an enabled server failed to start, for scripts that check.
    failed = any(row["enabled"] and row["state"] not in ("running", "disabled") for row in rows)
    if json_output:
        shown: dict[str, Any] = {"servers": rows}
        if ignored is not None:
            shown["ignored_config"] = {
                "path": str(ignored.path),
                "approval": ignored.verdict.state,
                "would": list(ignored.would),
                "fix": ignored.fix,
            }
        print(json.dumps(shown, indent=2))
        if failed:
            raise typer.Exit(1)
        return
    if not rows:
        if ignored is None:
            print("no servers configured: add [servers.NAME] tables to awf-mcp.toml (see docs/upstreams.md)")
        else:
            print(
                f"no servers started: {ignored.path} is not approved; to review and approve it: {ignored.fix}"
            )
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("server", "transport", "state", "tools")
    for row in rows:
        state = row["state"] + (f": {row['reason']}" if row["reason"] else "")
        state += "".join(f"\n{sentence}" for sentence in row["left_out"])
        tools = ", ".join(row["tools"]) if row["tools"] else "-"
        table.add_row(row["name"], row["transport"], state, tools)
    Console().print(table)
    if failed:
        raise typer.Exit(1)


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

    from awf_mcp.cli.trust import approve_at_users_command
    from awf_mcp.core import trust
    from awf_mcp.core.config import DEFAULT_CONFIG_NAME, parse_settings
    from awf_mcp.ops.serverimport import import_servers

    def served() -> list[tuple[str, bool]]:
        # The awf entry's trust hint names the tools `config` names in this directory.
        from awf_mcp.cli.commands import served_tools

        return served_tools(ServeOptions(config=config if config and Path(config).is_file() else None))

    target = Path(os.path.abspath(os.path.expanduser(config))) if config else Path.cwd() / DEFAULT_CONFIG_NAME
    # A file that was the project's and unapproved stays so: appending to it approves nothing.
    before = trust.read_bounded(target) if target.is_file() else None
    trusted_before = before is None or trust.verdict(target, before, named=True, cwd=Path.cwd()).trusted
    text = import_servers(
        client,
        write=write,
        scope=scope,
        config=Path(config) if config else None,
        check=parse_settings,
        tools=served,
    )
    print(text)
    if write and target.is_file() and trust.read_bounded(target) != before:
        if trusted_before:
            approve_at_users_command(target)
        else:
            print(
                f"awf-mcp: {target} was not approved before this import, so it still is not; "
                f"review it with: awf-mcp trust {target}",
                file=sys.stderr,
            )
