"""``awf-mcp servers import claude|gemini|codex [--write]``: an agent's MCP servers into awf-mcp.toml.

Contract
--------
* :func:`agent_servers` reads the agent's server file (the one ``awf-mcp config CLIENT``
  writes, :func:`awf_mcp.ops.clientconfig.target_files`, read by
  :func:`awf_mcp.ops.clientconfig.read_servers`) and returns each server as an
  awf-mcp ``[servers.NAME]`` table: ``command``/``args``/``env``/``cwd`` or ``url``/``headers``,
  and the timeouts and ``enabled`` flag where the agent has them (Gemini's ``timeout`` in
  ms, Codex's ``startup_timeout_sec``/``tool_timeout_sec``/``bearer_token_env_var``/
  ``http_headers``). Values are copied as written: ``${VAR}`` stays unexpanded. awf's own
  entry (named ``awf``, or running ``awf-mcp ... serve``) is skipped, and so is an SSE
  server (awf-mcp relays stdio and Streamable HTTP only), with a note.
* Names that awf-mcp cannot use (``_``, ``.``, over 32 characters) become a valid name,
  with a note.
* :func:`import_servers` without ``write`` only says what it would do and prints the
  tables. With ``write`` it appends them to ``awf-mcp.toml`` (servers already there are
  kept and not overwritten), then removes the imported servers from the agent's file and
  adds the single awf entry (``awf-mcp config CLIENT --write``). Every file that changes is
  first copied to ``<file>.bak``; nothing is written when a file cannot be parsed.

Standard library only.
"""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.ops import clientconfig
from awf_mcp.ops.clientprofiles import ServerEntry
from awf_mcp.ops.editors import (
    atomic_write,
    backup,
    parse_json,
    parse_toml,
    read,
    toml_key,
    toml_replace_table,
    toml_str,
)

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
    """An agent's entry as an awf-mcp table, or ``None`` and why it is skipped."""
    entry = server.table
    table: dict[str, Any] = {}
    kind = entry.get("type", entry.get("transport"))
    if kind == "sse" or (client == "gemini" and entry.get("url") and not entry.get("httpUrl")):
        return None, "it uses the SSE transport, which awf-mcp does not relay"
    if entry.get("command"):
        table["command"] = entry["command"]
        if entry.get("args"):
            table["args"] = list(entry["args"])
        if entry.get("env"):
            table["env"] = dict(entry["env"])
        if entry.get("cwd"):
            table["cwd"] = entry["cwd"]
    elif server.url:
        table["url"] = server.url
        headers = dict(entry.get("headers") or entry.get("http_headers") or {})
        if entry.get("bearer_token_env_var"):
            headers["Authorization"] = f"Bearer ${{{entry['bearer_token_env_var']}}}"
        if headers:
            table["headers"] = headers
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
    return table, ""


def agent_servers(
    client: str, *, scope: str, cwd: Path, home: Path, env: Mapping[str, str]
) -> tuple[Path, dict[str, tuple[str, dict[str, Any]]], list[str]]:
    """The agent's server file, its importable servers (``awf name -> (agent name, table)``), notes."""
    if client not in IMPORT_CLIENTS:
        raise UserError(f"cannot import from '{client}'; choose one of {', '.join(IMPORT_CLIENTS)}")
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
        imported[ours] = (name, table)
    return path, imported, notes


def toml_tables(servers: Mapping[str, tuple[str, Mapping[str, Any]]]) -> str:
    """``[servers.NAME]`` tables for ``servers``, values as written."""

    def value(item: Any) -> str:
        if isinstance(item, bool):
            return "true" if item else "false"
        if isinstance(item, int | float):
            return repr(item)
        if isinstance(item, list):
            return "[" + ", ".join(value(v) for v in item) + "]"
        if isinstance(item, dict):
            return "{ " + ", ".join(f"{toml_key(k)} = {value(v)}" for k, v in item.items()) + " }"
        return toml_str(str(item))

    blocks = []
    for name, (_, table) in servers.items():
        lines = [f"[servers.{toml_key(name)}]"] + [f"{key} = {value(v)}" for key, v in table.items()]
        blocks.append("\n".join(lines) + "\n")
    return "\n".join(blocks)


def _without(client: str, text: str, names: list[str], path: Path) -> str:
    if client == "codex":
        before = parse_toml(text, path)
        for name in names:
            header = f"[mcp_servers.{toml_key(name)}]\n"
            text = toml_replace_table(("mcp_servers", name), header)(text, path).replace(header, "", 1)
        expected = dict(before)
        expected["mcp_servers"] = {k: v for k, v in before["mcp_servers"].items() if k not in names}
        if not expected["mcp_servers"]:
            del expected["mcp_servers"]
        if parse_toml(text, path) != expected:
            raise UserError(f"{path}: could not remove the imported servers cleanly; not touching it")
        return text
    data = parse_json(text, path)
    for name in names:
        data["mcpServers"].pop(name, None)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def import_servers(
    client: str,
    *,
    write: bool = False,
    scope: str = "project",
    config: Path | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """What ``awf-mcp servers import CLIENT [--write]`` prints; see the module docstring."""
    cwd, home, env = clientconfig.locate(cwd, home, env)
    target = config or cwd / "awf-mcp.toml"
    if target.suffix != ".toml":
        raise UserError(f"servers are imported into a TOML file; {target} is not one (pass --config x.toml)")
    source, servers, notes = agent_servers(client, scope=scope, cwd=cwd, home=home, env=env)
    existing_text = read(target) or ""
    try:
        existing = tomllib.loads(existing_text).get("servers", {})
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{target} is not valid TOML ({exc}); not touching it: fix it and rerun") from None
    for name in [n for n in servers if n in existing]:
        notes.append(f"'{name}' is already in {target}; kept as it is there")
        del servers[name]
    tables = toml_tables(servers)
    out = [f"# from {source}", tables or "# (no servers to import)"] + [f"# note: {n}" for n in notes]
    if not write:
        if servers:
            out.append(
                f"# --write appends these to {target} and replaces them in {source} with the awf entry"
            )
        return "\n".join(out)
    if not servers:
        return "\n".join([*out, "nothing imported"])
    agent_text = read(source) or ""
    without = _without(client, agent_text, [agent for agent, _ in servers.values()], source)
    if existing_text:
        out.append(f"backed up {target} to {backup(target)}")
    joined = existing_text.rstrip("\n") + "\n\n" + tables if existing_text.strip() else tables
    tomllib.loads(joined)  # what is appended must parse with what is there
    atomic_write(target, joined)
    out.append(f"added {len(servers)} server(s) to {target}")
    out.append(f"backed up {source} to {backup(source)}")
    atomic_write(source, without)
    out.append(f"removed {', '.join(agent for agent, _ in servers.values())} from {source}")
    out.append(
        clientconfig.configure(
            client,
            write_files=True,
            scope=scope,
            serve_args=["--config", str(target.resolve())],
            cwd=cwd,
            home=home,
            env=env,
        )
    )
    return "\n".join(out)
