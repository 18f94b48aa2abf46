"""``awf-mcp servers list [--json]``, ``servers approve NAME [--yes]``, ``servers login NAME``,
``servers logout NAME`` and ``servers import claude|gemini|codex [--write]``.

``servers login NAME [--no-browser] [--timeout S]`` signs in to an ``auth = "oauth"`` server
(:func:`awf_mcp.wire.oauthsignin.sign_in`): the URL to open is printed on stdout, on a line of its
own (and opened in the browser unless ``--no-browser``); exit 0 once signed in, 1 with one
sentence on a denial, a timeout or a state mismatch. ``servers logout NAME`` forgets the
tokens and revokes them where the server supports it (:func:`awf_mcp.wire.oauth.sign_out`).

``servers import`` is :func:`awf_mcp.clients.serverimport.import_servers`. ``servers list``
shows the configured upstream MCP servers, their state and tools:

Every enabled server is started exactly as ``awf-mcp serve`` starts it (concurrently,
each bounded by its ``startup_timeout_seconds``), asked for its tools, and stopped.
A server shows as ``running`` (with its tools, under their served names, and a sentence for
each tool or ``instructions`` left out for passing a byte bound, and what it offers besides:
how many prompts, resources and templates are served of it), ``failed`` (with the reason)
or ``disabled``. Nothing secret is shown: ``env`` and ``headers`` by
key only, ``args`` and ``url`` as written in the file, before ``${VAR}`` expansion.

A tool held back (its definition changed since the user approved it, or it is new; see
:mod:`awf_mcp.core.pins`) is not among a server's tools; it is listed under ``held``, with
what changed and the command that approves it. Text from the servers is printed inert
(:func:`~awf_mcp.cli.terminal.shown`).

``--json`` prints ``{"servers": [{"name", "transport", "enabled", "pin", "state", "reason",
"tools", "offers": {"prompts", "resources", "resource_templates", "completions", "logging",
"subscriptions"} (``{}`` when not running), "left_out", "held": [{"item", "name", "changes",
"summary"}], "approve", "command",
"args", "env", "cwd" | "url", "headers"}]}`` (``approve``: the command, or ``null`` when nothing
is held), plus ``"ignored_config": {"path", "approval", "would", "fix"}`` when a project's
config file was not used because the user has not approved it (:mod:`awf_mcp.core.trust`).

``servers approve NAME`` starts that server as ``serve`` would, shows each held item and what
changed, and on the user's yes (a terminal, or ``--yes``) pins them as they are now
(:func:`awf_mcp.core.pins.approve`).

Each row also has ``"sign_in"``, ``"expires_at"`` and ``"fix"`` (:func:`sign_in_state`), and an
``auth = "oauth"`` server's public description its ``"auth"``: ``signed in`` (the access token's
expiry, which awf-mcp refreshes), ``needs sign-in`` (then ``state`` is ``needs sign-in`` too and
``fix`` the ``servers login`` command), ``refused`` (the token store was refused; ``reason`` says
why) or ``null``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions, Settings

if TYPE_CHECKING:
    from awf_mcp.core.servers import ServerSpec

servers_app = typer.Typer(help="Inspect the upstream MCP servers awf-mcp serves.", no_args_is_help=True)


def _held_rows(spec: ServerSpec) -> list[dict[str, Any]]:
    from awf_mcp.core import pins

    return [
        {"item": hold.kind, "name": hold.name, "changes": dict(hold.changes), "summary": hold.summary}
        for hold in pins.held(spec)
    ]


def offers_of(record: Any) -> dict[str, Any]:
    """What a running server offers besides tools: how many prompts, resources and templates are
    served of it, and whether it completes, logs and takes subscriptions."""
    from awf_mcp.core.upstream import UpstreamProvider

    for entry in record.providers:
        provider = entry.provider
        if isinstance(provider, UpstreamProvider):
            return {
                "prompts": len(provider.list_prompts()),
                "resources": len(provider.list_resources()),
                "resource_templates": len(provider.list_resource_templates()),
                "completions": "completions" in provider.offers,
                "logging": "logging" in provider.offers,
                "subscriptions": "subscribe" in provider.offers,
            }
    return {}


def offered(offers: dict[str, Any]) -> str:
    """``4 prompts, 7 resources, 2 templates`` (what there is of them), or ``""``."""
    counts = [(offers.get("prompts", 0), "prompts"), (offers.get("resources", 0), "resources")]
    counts.append((offers.get("resource_templates", 0), "templates"))
    return ", ".join(f"{count} {what}" for count, what in counts if count)


def _states(settings: Settings) -> list[dict[str, Any]]:
    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.core import pins
    from awf_mcp.core.upstream import UpstreamProvider

    specs: dict[str, ServerSpec] = {spec.name: spec for spec in settings.servers}
    runtime.announce_servers(settings)

    async def collect() -> list[dict[str, Any]]:
        records = await runtime.start_servers(settings)
        try:
            rows = []
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
                row["offers"] = offers_of(record)
                row["held"] = _held_rows(specs[record.name])
                row["approve"] = pins.approve_command(record.name) if row["held"] else None
                rows.append(row)
            return rows
        finally:
            await runtime.close_providers([entry.provider for r in records for entry in r.providers])

    return [_with_sign_in(row, specs[row["name"]]) for row in anyio.run(collect)]


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
        listing: dict[str, Any] = {"servers": rows}
        if ignored is not None:
            listing["ignored_config"] = {
                "path": str(ignored.path),
                "approval": ignored.verdict.state,
                "would": list(ignored.would),
                "fix": ignored.fix,
            }
        print(json.dumps(listing, indent=2))
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

    from awf_mcp.cli.terminal import print_table, shown

    cells = []
    for row in rows:
        if row["state"] == "needs sign-in":
            lines = [f"needs sign-in: run {row['fix']}"]
        else:
            lines = [row["state"] + (f": {row['reason']}" if row["reason"] else "")]
            if row["sign_in"] == "signed in":
                lines.append(f"signed in (token expires {row['expires_at'] or 'never'}; refreshed as needed)")
            elif row["fix"]:
                lines.append(f"to sign in again: {row['fix']}")
        lines += row["left_out"]
        tools = [", ".join(row["tools"]) if row["tools"] else "-"]
        if offered(row["offers"]):
            tools.append(f"+ {offered(row['offers'])}")
        held = ", ".join(hold["name"] for hold in row["held"]) if row["held"] else "-"
        cells.append([row["name"], row["transport"], lines, tools, held])
    print_table(None, ["server", "transport", "state", "tools", "held"], cells)
    console = Console(highlight=False, soft_wrap=True)
    for row in rows:
        for hold in row["held"]:
            console.print(
                shown(f"server '{row['name']}': {hold['item']} '{hold['name']}' held: {hold['summary']}")
            )
        if row["approve"]:
            console.print(shown(f"  review and approve: {row['approve']}"))
    if failed:
        raise typer.Exit(1)


def _configured(settings: Settings, name: str) -> ServerSpec:
    """The configured server NAME, or a :class:`UserError` naming those there are."""
    from awf_mcp.errors import UserError

    spec = next((s for s in settings.servers if s.name == name), None)
    if spec is None:
        known = ", ".join(s.name for s in settings.servers) or "none"
        raise UserError(f"no server '{name}' in the configuration (configured: {known})")
    return spec


def _signing_in(settings: Settings, name: str) -> ServerSpec:
    """The configured server NAME if it signs in with OAuth, or a :class:`UserError` saying why not."""
    from awf_mcp.core.servers import may_sign_in, record_oauth
    from awf_mcp.errors import UserError

    spec = _configured(settings, name)
    if spec.auth != "oauth" and may_sign_in(spec) and not spec.problem:
        import anyio

        from awf_mcp.wire.clienthttp import probe_oauth

        answered = anyio.run(probe_oauth, spec)
        if answered is None:  # its 401 asked for OAuth: it signs in from now on
            record_oauth(spec.url)
            spec = replace(spec, auth="oauth")
        else:
            raise UserError(f"server '{name}' cannot be signed in to: {answered}")
    if spec.auth != "oauth":
        kind = "a stdio server" if not spec.url else "a url server with an Authorization header of its own"
        raise UserError(f"server '{name}' is {kind}: there is nothing to sign in to")
    if spec.problem:
        raise UserError(f"server '{name}' cannot be reached: {spec.problem}")
    return spec


def sign_in_state(spec: ServerSpec, state: str, reason: str) -> dict[str, Any]:
    """``sign_in``: ``needs sign-in`` (the server asked for a token awf-mcp does not hold),
    ``refused`` (the token store was refused), ``signed in``, or ``null`` (no ``auth = "oauth"``,
    or none stored and none asked for); ``expires_at`` (ISO 8601 UTC, or ``null``) and ``fix``
    (the command, or ``null``)."""
    from datetime import UTC, datetime

    from awf_mcp.wire import oauth

    if oauth.needs_sign_in(spec.name) in reason:  # an entry without auth too, when its 401 asked
        return {"sign_in": "needs sign-in", "expires_at": None, "fix": oauth.login_command(spec.name)}
    if spec.auth != "oauth":
        return {"sign_in": None, "expires_at": None, "fix": None}
    stored = oauth.state(spec)
    expires = (
        datetime.fromtimestamp(stored.expires_at, UTC).isoformat(timespec="seconds")
        if stored.expires_at is not None
        else None
    )
    if stored.problem:
        return {"sign_in": "refused", "expires_at": None, "fix": oauth.login_command(spec.name)}
    if stored.signed_in:
        return {"sign_in": "signed in", "expires_at": expires, "fix": None}
    return {"sign_in": None, "expires_at": None, "fix": None}  # asked for no token, or not reached


def _with_sign_in(row: dict[str, Any], spec: ServerSpec) -> dict[str, Any]:
    """ROW with its sign-in (:func:`sign_in_state`); a server that needs sign-in is in that state."""
    row.update(sign_in_state(spec, row["state"], row["reason"]))
    if row["sign_in"] == "needs sign-in":
        row["state"] = "needs sign-in"
    return row


@servers_app.command("login")
@with_options("config")
def servers_login(
    name: Annotated[str, typer.Argument(help='The server (auth = "oauth") to sign in to.')],
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Only print the URL to open; do not open a browser.")
    ] = False,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1, help="Seconds to wait for the browser's answer.")
    ] = 300,
    *,
    options: ServeOptions,
) -> None:
    """Sign in to a server with OAuth in the browser; awf-mcp keeps and refreshes the tokens."""
    import anyio

    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.errors import UserError
    from awf_mcp.state import tokenstore
    from awf_mcp.wire import oauth, oauthsignin

    configure_logging("ERROR")
    spec = _signing_in(config.load(options), name)

    def show(url: str) -> None:
        print(f"Open this URL to sign in to server '{name}':", file=sys.stderr)
        print(url, flush=True)

    try:
        signed = anyio.run(
            lambda: oauthsignin.sign_in(spec, show=show, open_browser=not no_browser, timeout=timeout)
        )
    except oauth.SignInFailed as exc:
        raise UserError(f"not signed in to server '{name}': {exc}") from None
    if not signed:
        print(f"server '{name}' asks for no sign-in: awf-mcp serves it without one")
        return
    print(f"signed in to server '{name}'; the tokens are kept in {tokenstore.location()}")


@servers_app.command("logout")
@with_options("config")
def servers_logout(
    name: Annotated[str, typer.Argument(help="The server whose sign-in to forget.")],
    *,
    options: ServeOptions,
) -> None:
    """Forget a server's tokens, and revoke them where the server supports it."""
    import anyio

    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.wire import oauth

    configure_logging("ERROR")
    spec = _signing_in(config.load(options), name)
    print(anyio.run(oauth.sign_out, spec))


@servers_app.command("approve")
@with_options("config")
def servers_approve(
    name: Annotated[str, typer.Argument(help="The server whose held tools to review and approve.")],
    yes: Annotated[
        bool, typer.Option("--yes", help="Approve without asking (for scripts): read the changes first.")
    ] = False,
    *,
    options: ServeOptions,
) -> None:
    """Show what changed in a server's held tools since you approved them; approve them as they are now."""
    import sys

    import anyio

    from awf_mcp.cli import runtime
    from awf_mcp.cli.terminal import shown
    from awf_mcp.core import config, pins
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.errors import UserError
    from awf_mcp.ports import inert_text

    configure_logging("ERROR")
    settings = config.load(options)
    spec = _configured(settings, name)
    if not spec.pin:
        print(f"server '{name}' is not pinned (pin = false): its tools are served as it lists them")
        return

    async def refresh() -> str:
        """Start the server as serve would: its listing is checked against the pins again."""
        records = await runtime.start_servers(replace(settings, servers=(spec,)))
        try:
            return records[0].status.removeprefix("failed: ") if records and not records[0].ok else ""
        finally:
            await runtime.close_providers([entry.provider for r in records for entry in r.providers])

    problem = anyio.run(refresh)
    if problem:
        warning = f"server '{name}' did not start ({problem}); what was recorded of it is shown"
        print(f"awf-mcp: warning: {inert_text(warning)}", file=sys.stderr)
    holds = pins.held(spec)
    if not holds:
        print(f"nothing of server '{name}' is held: every tool it lists is as approved")
        return
    from rich.console import Console

    console = Console(highlight=False)
    console.print(shown(f"server '{name}' ({pins.runs(spec)}): {len(holds)} held"))
    for hold in holds:
        console.print(shown(f"  {hold.kind} '{hold.name}': {hold.summary}"))
    if not yes:
        if not sys.stdin.isatty():
            raise UserError(
                "not approved: there is no terminal to ask on; read the changes above, then rerun with --yes"
            )
        if not typer.confirm(f"Approve these {len(holds)} and serve them?", default=False):
            raise UserError("not approved: nothing changed")
    approved = pins.approve(spec, holds)
    print(f"approved {len(approved)} of server '{name}'; awf-mcp serves them from its next start")
    if len(approved) < len(holds):
        print(f"{len(holds) - len(approved)} changed again meanwhile and stay held: rerun to review them")


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
    from awf_mcp.clients.serverimport import import_servers
    from awf_mcp.core import trust
    from awf_mcp.core.config import DEFAULT_CONFIG_NAME, parse_settings

    def served() -> list[tuple[str, bool]]:
        # The awf entry's trust hint names the tools `config` names in this directory.
        from awf_mcp.cli.runtime import served_tools

        return served_tools(ServeOptions(config=config if config and Path(config).is_file() else None))

    target = Path(os.path.abspath(os.path.expanduser(config))) if config else Path.cwd() / DEFAULT_CONFIG_NAME
    # A file that was the project's and unapproved stays so: appending to it approves nothing.
    before = trust.read_bounded(target) if target.is_file() else None
    trusted_before = before is None or trust.verdict(target, before, named=True, cwd=Path.cwd()).trusted

    def signed_in(name: str, table: Mapping[str, Any]) -> bool:
        from awf_mcp.core.servers import parse_one
        from awf_mcp.errors import ConfigError
        from awf_mcp.wire import oauth

        try:
            state = oauth.state(parse_one(name, dict(table), f"[servers.{name}]"))
        except ConfigError:
            return False
        return state.signed_in or state.asked_for_none

    text = import_servers(
        client,
        write=write,
        scope=scope,
        config=Path(config) if config else None,
        check=parse_settings,
        tools=served,
        signed_in=signed_in,
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
