"""``awf-mcp servers import claude|gemini|codex [--write]``: an agent's MCP servers into awf-mcp.toml.

Contract
--------
* :func:`agent_servers` reads the agent's server file (the one ``awf-mcp config CLIENT``
  writes, :func:`awf_mcp.clients.clientconfig.target_files`, read by
  :func:`awf_mcp.clients.clientconfig.read_servers`) and returns each server as an
  awf-mcp ``[servers.NAME]`` table: ``command``/``args``/``env``/``cwd`` or ``url``/``headers``,
  and the timeouts and ``enabled`` flag where the agent has them (Gemini's ``timeout`` in
  ms, Codex's ``startup_timeout_sec``/``tool_timeout_sec``/``bearer_token_env_var``/
  ``http_headers``). Values are copied as written: ``${VAR}`` stays unexpanded. awf's own
  entry (named ``awf``, or running ``awf-mcp ... serve``) is skipped.
* An SSE server (Claude Code's ``"type": "sse"``, Gemini CLI's ``url`` as opposed to its
  ``httpUrl``) gets ``type = "sse"``. A remote server with no ``Authorization`` header of its
  own (nor Codex's ``bearer_token_env_var``), unless Gemini's ``oauth.enabled`` is false, gets
  ``auth = "oauth"`` (Gemini's ``oauth.clientId`` as ``client_id``): it signs in when the
  server asks for it, and the import notes ``awf-mcp servers login NAME`` for each one.
* With ``write``, the agent's file loses a server only once awf-mcp can serve it: an
  ``auth = "oauth"`` server that awf-mcp holds no sign-in for (``signed_in``) is appended to
  ``awf-mcp.toml`` but stays in the agent's file, with a note; the same import run again
  after ``servers login`` removes it from the agent's file.
* Names that awf-mcp cannot use (``_``, ``.``, over 32 characters) become a valid name,
  with a note.
* Each table is checked before it is offered: it must be writable as TOML, read back
  as the same values, and pass ``check`` (the CLI passes
  :func:`awf_mcp.core.config.parse_settings`, what ``serve`` applies to its file). An
  entry that fails is skipped, with one sentence naming it (``args`` holding ``null``,
  a number, a lone surrogate...).
* :func:`import_servers` without ``write`` only says what it would do and prints the
  tables. With ``write`` it appends them to ``awf-mcp.toml`` (servers already there are
  kept and not overwritten), removes the imported servers from the agent's file and adds
  the single awf entry (what ``awf-mcp config CLIENT --write`` adds), all in one
  :func:`~awf_mcp.clients.editors.apply_edits`: the whole new ``awf-mcp.toml`` must pass
  ``check`` first, or nothing is written and the agent's file keeps its servers. Each
  file that changes gets one backup, of what it held before the command. The agent's
  project file, and ``./awf-mcp.toml`` when no ``--config`` names it, are project files:
  one that is a symbolic link is refused (see :func:`awf_mcp.clients.editors.writable_target`).

TOML is written through ``tomlkit`` (:mod:`.tomledit`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from awf_mcp.clients import clientconfig
from awf_mcp.clients.clientprofiles import ServerEntry
from awf_mcp.clients.editors import Edit, TextEdit, apply_edits, lookup, read, writable_target
from awf_mcp.clients.jsonedit import dump_json, parse_json
from awf_mcp.clients.tomledit import toml_add_tables, toml_remove_tables, toml_table
from awf_mcp.errors import UserError

IMPORT_CLIENTS = ("claude", "gemini", "codex")
_NAME = re.compile(r"^[A-Za-z0-9-]{1,32}$")


def _valid_name(name: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-")[:32] or "server"
    candidate, counter = base, 2
    while candidate in taken:
        candidate = f"{base[:29]}-{counter}"
        counter += 1
    return candidate


def _convert(client: str, server: ServerEntry) -> tuple[dict[str, Any] | None, str]:
    """An agent's entry as an awf-mcp table and a note for the user, or ``None`` and why it is skipped."""
    entry = server.table
    table: dict[str, Any] = {}
    note = ""
    kind = entry.get("type", entry.get("transport"))
    if entry.get("command"):
        table["command"] = entry["command"]
        if entry.get("args"):
            table["args"] = list(entry["args"])
        if entry.get("env"):
            table["env"] = dict(entry["env"])
        if entry.get("cwd"):
            table["cwd"] = entry["cwd"]
    elif server.url:
        # Gemini CLI's `url` (beside no `httpUrl`) is its SSE transport.
        if kind == "sse" or (client == "gemini" and entry.get("url") and not entry.get("httpUrl")):
            table["type"] = "sse"
        table["url"] = server.url
        headers = dict(entry.get("headers") or entry.get("http_headers") or {})
        if entry.get("bearer_token_env_var"):
            headers["Authorization"] = f"Bearer ${{{entry['bearer_token_env_var']}}}"
        if headers:
            table["headers"] = headers
        found = entry.get("oauth")
        oauth: dict[str, Any] = found if isinstance(found, dict) else {}
        if oauth.get("enabled", True) is not False and not any(k.lower() == "authorization" for k in headers):
            # No credentials of its own: it signs in with OAuth if the server asks for it.
            table["auth"] = "oauth"
            if isinstance(oauth.get("clientId"), str) and oauth["clientId"]:
                table["client_id"] = oauth["clientId"]
            note = "sign-in"
    else:
        return None, "it has neither a command nor a URL"
    if client == "gemini" and isinstance(entry.get("timeout"), int | float):
        table["timeout_seconds"] = entry["timeout"] / 1000
    for theirs, ours in (
        ("tool_timeout_sec", "timeout_seconds"),
        ("startup_timeout_sec", "startup_timeout_seconds"),
    ):
        if isinstance(entry.get(theirs), int | float):
            table[ours] = entry[theirs]
    if server.disabled:
        table["enabled"] = False
    return table, note


def _check_client(client: str) -> None:
    if client not in IMPORT_CLIENTS:
        raise UserError(f"cannot import from '{client}'; choose one of {', '.join(IMPORT_CLIENTS)}")


def agent_servers(
    client: str, *, scope: str, cwd: Path, home: Path, env: Mapping[str, str]
) -> tuple[Path, dict[str, tuple[str, dict[str, Any]]], list[str]]:
    """The agent's server file, its importable servers (``awf name -> (agent name, table)``), notes."""
    _check_client(client)
    path = clientconfig.target_files(client, scope, cwd=cwd, home=home, env=env)["servers"]
    found = clientconfig.read_servers(client, path, scopes=(scope,), to_rewrite=True)
    if found.problem:
        raise UserError(f"{path} {found.problem}; not touching it: fix it and rerun")
    if not found.servers:
        return path, {}, [f"{path} does not exist or names no MCP servers: nothing to import"]
    imported: dict[str, tuple[str, dict[str, Any]]] = {}
    notes: list[str] = []
    for server in found.servers:
        if server.is_awf:
            continue
        name = server.name
        table, why = _convert(client, server)
        if table is None:
            notes.append(f"skipped '{name}': {why}")
            continue
        ours = name if _NAME.match(name) and name not in imported else _valid_name(name, set(imported))
        if ours != name:
            notes.append(f"'{name}' becomes '{ours}' (server names are letters, digits and '-')")
        if why == "sign-in":
            notes.append(
                f"'{ours}' signs in with OAuth when the server asks for it (auth = \"oauth\"): "
                f"run awf-mcp servers login {ours} once"
            )
        imported[ours] = (name, table)
    return path, imported, notes


SignedIn = Callable[[str, Mapping[str, Any]], bool]
"""Whether awf-mcp can serve the ``auth = "oauth"`` server NAME with TABLE now (signed in)."""

SettingsCheck = Callable[[Mapping[str, Any], Path], object]
"""Raises :class:`UserError` when parsed config content (for the file at PATH) would not load."""


def _refusal(name: str, table: Mapping[str, Any], target: Path, check: SettingsCheck | None) -> str:
    """Why TABLE, the server NAME, cannot be written to TARGET as it is; empty when it can."""
    if check is not None:
        try:
            check({"servers": {name: table}}, target)
        except UserError as exc:
            return exc.message
    try:
        text = toml_table(("servers", name), table)
    except (TypeError, ValueError) as exc:
        return f"its settings cannot be written as TOML ({exc})"
    try:
        back = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return f"its settings would not read back as TOML ({exc})"
    if lookup(back, ("servers", name)) != table:
        return "its settings would not read back as written"
    return ""


def toml_tables(servers: Mapping[str, tuple[str, Mapping[str, Any]]]) -> str:
    """``[servers.NAME]`` tables for ``servers``, values as written."""
    return "\n".join(toml_table(("servers", name), table) for name, (_, table) in servers.items())


def _without(client: str, names: list[str]) -> TextEdit:
    """An edit of CLIENT's server file that removes the servers NAMES."""

    if client == "codex":
        return toml_remove_tables(("mcp_servers",), names)

    def apply(old: str | None, path: Path) -> str:
        data = parse_json(old or "", path)
        for name in names:
            data["mcpServers"].pop(name, None)
        return dump_json(data) + "\n"

    return apply


def _appended(servers: Mapping[str, tuple[str, Mapping[str, Any]]], check: SettingsCheck | None) -> TextEdit:
    """An edit that appends the ``[servers.NAME]`` tables of SERVERS to an awf-mcp TOML file,
    refused unless the result loads."""
    add = toml_add_tables(("servers",), {name: table for name, (_, table) in servers.items()})

    def apply(old: str | None, path: Path) -> str:
        new = add(old, path)
        data = tomllib.loads(new)
        if check is not None:
            try:
                check(data, path)
            except UserError as exc:
                raise UserError(
                    f"the import would leave {path} unloadable: {exc.message}; nothing written"
                ) from None
        return new

    return apply


def import_servers(
    client: str,
    *,
    write: bool = False,
    scope: str = "project",
    config: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    check: SettingsCheck | None = None,
    tools: Callable[[], Sequence[tuple[str, bool]]] | None = None,
    signed_in: SignedIn | None = None,
) -> str:
    """What ``awf-mcp servers import CLIENT [--write]`` prints; see the module docstring.

    CONFIG: the awf-mcp TOML file the user named (None: ``./awf-mcp.toml``, a project
    file). CHECK: what ``serve`` applies to that file's content. TOOLS: returns ``(name,
    read_only)`` of every tool awf-mcp serves here, for the trust hint printed with the
    awf entry (as :func:`awf_mcp.clients.clientconfig.configure` takes them); called only
    with ``write``, once the new ``awf-mcp.toml`` has passed CHECK. SIGNED_IN: whether awf-mcp
    holds a sign-in for the ``auth = "oauth"`` server NAME with TABLE (or knows it needs none);
    without it, every such server stays in the agent's file.
    """
    cwd, home, env = clientconfig.locate(cwd, home, env)
    target = config or cwd / "awf-mcp.toml"
    target_project = None if config is not None else cwd
    if target.suffix != ".toml":
        raise UserError(f"servers are imported into a TOML file; {target} is not one (pass --config x.toml)")
    _check_client(client)
    agent_project = clientconfig.project_of(scope, cwd)
    # Links are refused before anything is read through them.
    writable_target(
        clientconfig.target_files(client, scope, cwd=cwd, home=home, env=env)["servers"], agent_project
    )
    writable_target(target, target_project)
    source, servers, notes = agent_servers(client, scope=scope, cwd=cwd, home=home, env=env)
    existing_text = read(target) or ""
    try:
        parsed = tomllib.loads(existing_text)
        existing = {**parsed.get("mcpServers", {}), **parsed.get("servers", {})}
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{target} is not valid TOML ({exc}); not touching it: fix it and rerun") from None

    def servable(name: str, table: Any) -> bool:
        """Whether awf-mcp can serve NAME now: it needs no sign-in, or holds one."""
        if not isinstance(table, Mapping) or table.get("auth") != "oauth":
            return True
        return signed_in is not None and signed_in(name, table)

    # Servers an earlier import left in the agent's file until they were signed in.
    moved: list[str] = []
    for name in [n for n in servers if n in existing]:
        there = existing[name]
        if isinstance(there, Mapping) and there.get("auth") == "oauth" and servable(name, there):
            notes.append(f"'{name}' is already in {target} and awf-mcp can serve it: it leaves {source}")
            moved.append(servers[name][0])
        else:
            notes.append(f"'{name}' is already in {target}; kept as it is there")
        del servers[name]
    for name, (agent_name, table) in list(servers.items()):
        refusal = _refusal(name, table, target, check)
        if refusal:
            notes.append(f"skipped '{agent_name}': {refusal}")
            del servers[name]
    waiting = [name for name, (_, table) in servers.items() if not servable(name, table)]
    for name in waiting:
        notes.append(
            f"'{servers[name][0]}' stays in {source} until awf-mcp can serve it: "
            f"run awf-mcp servers login {name}, then this import again"
        )
    tables = toml_tables(servers)
    out = [f"# from {source}", tables or "# (no servers to import)"] + [f"# note: {n}" for n in notes]
    if not write:
        if servers:
            out.append(
                f"# --write appends these to {target} and replaces them in {source} with the awf entry"
            )
        return "\n".join(out)
    if not servers and not moved:
        return "\n".join([*out, "nothing imported"])
    imported = [agent for name, (agent, _) in servers.items() if name not in waiting] + moved
    appended = _appended(servers, check)
    if servers:
        appended(existing_text or None, target)  # refused here, before TOOLS starts anything
    agent_format = clientconfig.PROFILES[client].format
    entry: dict[str, Any] = {
        "command": [*clientconfig.server_command(), "serve", "--config", str(target.resolve())],
        "read_only_tools": clientconfig.read_only_names(tools() if tools is not None else None),
        "trust": None,
        "scope": scope,
        "cwd": cwd,
        "home": home,
        "env": env,
    }
    edits = [Edit(target, "toml", appended, target_project)] if servers else []
    if imported:
        edits.append(Edit(source, agent_format, _without(client, imported), agent_project))
    report = apply_edits([*edits, *clientconfig.plan_write(client, **entry)])
    if servers:
        out.append(f"added {len(servers)} server(s) to {target}")
    if imported:
        out.append(f"removed {', '.join(imported)} from {source} and added the awf entry")
    else:
        out.append(f"added the awf entry to {source}")
    out.append(clientconfig.render(client, **entry))
    out.append(report.summary())
    return "\n".join(out)
