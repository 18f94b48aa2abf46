"""``awf-mcp config CLIENT``: the MCP configuration each agent needs, printed or written.

Clients and the files they read (``scope`` picks the column):

===========  ===========================  ==================================  ==============================
client       server entry (project)       server entry (user)                 trust (tool approval)
===========  ===========================  ==================================  ==============================
claude       ``.mcp.json``                ``~/.claude.json`` (``mcpServers``)  ``permissions.allow`` in
                                                                              ``.claude/settings.json`` /
                                                                              ``~/.claude/settings.json``
gemini       ``.gemini/settings.json``    ``~/.gemini/settings.json``         ``trust`` on the entry (all),
                                                                              ``tools.allowed`` (read-only)
codex        ``.codex/config.toml``       ``$CODEX_HOME/config.toml``         ``default_tools_approval_mode``
                                          (default ``~/.codex``)              / per-tool ``approval_mode``
json         printed only: a generic ``{"mcpServers": {...}}`` snippet
===========  ===========================  ==================================  ==============================

Writing is idempotent and conservative: JSON files keep their key order (and are
written with a 2-space indent), TOML files are edited as text — only the lines of the
``[mcp_servers.NAME]`` table and its sub-tables are replaced or appended — and the
result is parsed again before anything is written. A file that cannot be parsed is
refused untouched; every file that changes is first copied to ``<file>.bak``.

This module uses the standard library only; the CLI wires it to ``awf-mcp config``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.ports import TOOL_NAME_PATTERN, client_tool_name

CLIENTS = ("claude", "gemini", "codex", "json")
SCOPES = ("project", "user")
TRUST_LEVELS = ("read-only", "all")
DEFAULT_SERVER_NAME = "awf"
#: Used when the caller cannot say which tools are read-only (no annotations).
FALLBACK_READ_ONLY_TOOLS = ("Glob", "Grep", "Read")
#: Gemini CLI's default per-request timeout is 600 s; awf-mcp's own per-call limit is
#: 620 s, so give the client a little longer and let awf-mcp report the timeout itself.
GEMINI_TIMEOUT_MS = 630_000

_CLIENT_TITLES = {"claude": "Claude Code", "gemini": "Gemini CLI", "codex": "Codex CLI", "json": "generic"}
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")

JsonObject = dict[str, Any]


# --------------------------------------------------------------------------- command


def server_command(
    *,
    argv0: str | None = None,
    executable: str | None = None,
    frozen: bool | None = None,
) -> list[str]:
    """The argv that starts this awf-mcp, as an absolute path an agent can run from anywhere.

    The frozen single executable and the ``awf-mcp`` console script are named by their
    own absolute path; anything else (``python -m awf_mcp``) becomes
    ``[sys.executable, "-m", "awf_mcp"]``.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    executable = sys.executable if executable is None else executable
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if frozen:
        return [str(Path(executable).absolute())]
    name = Path(argv0).name.lower()
    if name in ("awf-mcp", "awf-mcp.exe", "awf-mcp-script.py"):
        path = Path(argv0)
        if not path.is_absolute() or not path.exists():
            found = shutil.which(argv0)
            if found:
                path = Path(found)
        if path.exists():
            resolved = path.resolve()
            if resolved.name.lower() == "awf-mcp-script.py":
                resolved = resolved.with_name("awf-mcp.exe")
            return [str(resolved)]
    return [str(Path(executable).absolute()), "-m", "awf_mcp"]


def serve_command(
    base: Sequence[str],
    *,
    roots: Iterable[str] = (),
    only: Iterable[str] = (),
    exclude: Iterable[str] = (),
    config: str | None = None,
    cwd: Path | None = None,
) -> list[str]:
    """``base + ["serve", ...]`` with the serve options an agent should pass.

    ``--root`` and ``--config`` are made absolute (against ``cwd``): the agent may start
    the server from another directory, and a user-scope entry applies everywhere.
    """
    here = Path.cwd() if cwd is None else cwd
    argv = [*base, "serve"]
    for root in roots:
        argv += ["--root", str((here / Path(root).expanduser()).absolute())]
    for pattern in only:
        argv += ["--only", pattern]
    for pattern in exclude:
        argv += ["--exclude", pattern]
    if config:
        argv += ["--config", str((here / Path(config).expanduser()).absolute())]
    return argv


def read_only_names(tools: Iterable[tuple[str, bool]] | None) -> list[str]:
    """Names of the read-only tools among ``(name, read_only)`` pairs, or the fallback list."""
    if tools is None:
        return sorted(FALLBACK_READ_ONLY_TOOLS)
    return sorted({name for name, read_only in tools if read_only})


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True)
class _Edit:
    """One change to one file: ``apply`` turns the old text (None: absent) into the new text."""

    path: Path
    fmt: str  # "json" or "toml"
    apply: Callable[[str | None, Path], str]
    describe: str


@dataclass
class WriteReport:
    """What ``write`` did: files changed (with their backups) and files already up to date."""

    changed: list[Path] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        lines = [f"updated {p}" for p in self.changed]
        lines += [f"backed up the previous version to {p}" for p in self.backups]
        lines += [f"{p} already up to date: nothing changed" for p in self.unchanged]
        lines += self.notes
        return "\n".join(lines)


def check_options(client: str, scope: str, trust: str | None, server_name: str) -> None:
    """Raise :class:`UserError` for an unknown client, scope or trust level, or an unusable name."""
    if client not in CLIENTS:
        raise UserError(f"unknown client '{client}'; use one of: {', '.join(CLIENTS)}")
    if scope not in SCOPES:
        raise UserError(f"unknown scope '{scope}'; use project or user")
    if trust is not None and trust not in TRUST_LEVELS:
        raise UserError(f"unknown trust level '{trust}'; use read-only or all")
    if not TOOL_NAME_PATTERN.match(server_name):
        raise UserError(
            f"server name '{server_name}' is not usable by every client; "
            "use letters, digits, '_' or '-' (at most 64 characters)"
        )


def claude_user_dir(home: Path, env: Mapping[str, str]) -> Path:
    """Claude Code's user configuration directory (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``)."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else home / ".claude"


def claude_user_file(home: Path, env: Mapping[str, str]) -> Path:
    """The file holding Claude Code's user-scope ``mcpServers`` (``~/.claude.json``)."""
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() / ".claude.json" if configured else home / ".claude.json"


def codex_home(home: Path, env: Mapping[str, str]) -> Path:
    """Codex's home directory (``$CODEX_HOME`` or ``~/.codex``)."""
    configured = env.get("CODEX_HOME")
    return Path(configured).expanduser() if configured else home / ".codex"


def target_files(
    client: str, scope: str, *, cwd: Path, home: Path, env: Mapping[str, str] | None = None
) -> dict[str, Path]:
    """The files ``write`` edits for CLIENT/SCOPE: ``{"servers": path, "trust": path}``."""
    env = os.environ if env is None else env
    if client == "claude":
        if scope == "project":
            return {"servers": cwd / ".mcp.json", "trust": cwd / ".claude" / "settings.json"}
        return {
            "servers": claude_user_file(home, env),
            "trust": claude_user_dir(home, env) / "settings.json",
        }
    if client == "gemini":
        base = cwd if scope == "project" else home
        path = base / ".gemini" / "settings.json"
        return {"servers": path, "trust": path}
    if client == "codex":
        path = cwd / ".codex" / "config.toml" if scope == "project" else codex_home(home, env) / "config.toml"
        return {"servers": path, "trust": path}
    raise UserError("the json client only prints a snippet; use claude, gemini or codex with --write")


def claude_permission_rules(server_name: str, trust: str, read_only_tools: Sequence[str]) -> list[str]:
    """Claude Code ``permissions.allow`` rules: one per read-only tool, or the whole server."""
    if trust == "all":
        return [client_tool_name(server_name)]
    return [client_tool_name(server_name, tool) for tool in read_only_tools]


def gemini_entry(command: Sequence[str], trust: str | None) -> JsonObject:
    entry: JsonObject = {"command": command[0], "args": list(command[1:]), "timeout": GEMINI_TIMEOUT_MS}
    if trust == "all":
        entry["trust"] = True
    return entry


def gemini_allowed(server_name: str, read_only_tools: Sequence[str]) -> list[str]:
    """Gemini CLI ``tools.allowed`` names (``mcp_SERVER_TOOL``) for the read-only tools."""
    return [f"mcp_{server_name}_{tool}" for tool in read_only_tools]


def codex_table(
    server_name: str, command: Sequence[str], trust: str | None, read_only_tools: Sequence[str]
) -> str:
    """The ``[mcp_servers.NAME]`` table (and per-tool sub-tables) as TOML text."""
    key = f"mcp_servers.{_toml_key(server_name)}"
    lines = [
        f"[{key}]",
        f"command = {_toml_str(command[0])}",
        "args = [" + ", ".join(_toml_str(a) for a in command[1:]) + "]",
        # Without it, `codex exec` sends its first request before the server is up.
        "required = true",
    ]
    if trust == "all":
        lines.append('default_tools_approval_mode = "approve"')
    elif trust == "read-only":
        for tool in read_only_tools:
            lines += ["", f"[{key}.tools.{_toml_key(tool)}]", 'approval_mode = "approve"']
    return "\n".join(lines) + "\n"


def mcp_json_entry(command: Sequence[str], *, typed: bool) -> JsonObject:
    entry: JsonObject = {"type": "stdio"} if typed else {}
    entry.update({"command": command[0], "args": list(command[1:])})
    return entry


def _plan(
    client: str,
    *,
    command: Sequence[str],
    read_only_tools: Sequence[str],
    trust: str | None,
    scope: str,
    server_name: str,
    cwd: Path,
    home: Path,
    env: Mapping[str, str],
) -> list[_Edit]:
    files = target_files(client, scope, cwd=cwd, home=home, env=env)
    edits: list[_Edit] = []
    if client == "claude":
        entry = mcp_json_entry(command, typed=True)
        edits.append(
            _Edit(
                files["servers"], "json", _json_edit(_set_path(("mcpServers", server_name), entry)), "server"
            )
        )
        if trust is not None:
            rules = claude_permission_rules(server_name, trust, read_only_tools)
            updates = [_add_to_list(("permissions", "allow"), rules)]
            if scope == "project":
                updates.append(_add_to_list(("enabledMcpjsonServers",), [server_name]))
            edits.append(_Edit(files["trust"], "json", _json_edit(*updates), "permissions"))
    elif client == "gemini":
        updates = [_set_path(("mcpServers", server_name), gemini_entry(command, trust))]
        if trust == "read-only":
            updates.append(_add_to_list(("tools", "allowed"), gemini_allowed(server_name, read_only_tools)))
        edits.append(_Edit(files["servers"], "json", _json_edit(*updates), "server"))
    elif client == "codex":
        table = codex_table(server_name, command, trust, read_only_tools)
        edits.append(
            _Edit(
                files["servers"],
                "toml",
                lambda old, path: _toml_replace_table(old, server_name, table, path),
                "server",
            )
        )
    return edits


# --------------------------------------------------------------------------- render


def render(
    client: str,
    *,
    command: Sequence[str],
    read_only_tools: Sequence[str],
    all_tools: Sequence[str] = (),
    trust: str | None,
    scope: str = "project",
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The configuration for CLIENT as text to print: the exact snippet, where it goes, and trust."""
    check_options(client, scope, trust, server_name)
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    env = os.environ if env is None else env
    read_only = list(read_only_tools)
    if client == "json":
        return _dump_json({"mcpServers": {server_name: mcp_json_entry(command, typed=True)}})
    files = target_files(client, scope, cwd=cwd, home=home, env=env)
    out: list[str] = []
    title = _CLIENT_TITLES[client]
    write_hint = f"awf-mcp config {client} --write" + (" --scope user" if scope == "user" else "")
    if trust:
        write_hint += f" --trust {trust}"
    if client == "claude":
        add = ["claude", "mcp", "add", "--scope", scope, server_name, "--", *command]
        out += [
            f"# {title}, {scope} scope: run",
            shlex.join(add),
            "",
            f"# or add this entry to {files['servers']}:",
            _dump_json({"mcpServers": {server_name: mcp_json_entry(command, typed=True)}}),
        ]
    elif client == "gemini":
        out += [
            f"# {title}, {scope} scope: add this entry to {files['servers']}:",
            _dump_json({"mcpServers": {server_name: gemini_entry(command, trust)}}),
        ]
        if trust == "read-only":
            out += [
                "",
                "# and let the read-only tools run without confirmation (same file):",
                _dump_json({"tools": {"allowed": gemini_allowed(server_name, read_only)}}),
            ]
    else:
        out += [
            f"# {title}, {scope} scope: add this table to {files['servers']}:",
            codex_table(server_name, command, trust, read_only).rstrip("\n"),
        ]
    out += ["", *_trust_notes(client, trust, scope, server_name, read_only, files)]
    out += ["", f"# `{write_hint}` applies this for you (idempotent, keeps a .bak of the old file)."]
    return "\n".join(out) + "\n"


def _trust_notes(
    client: str,
    trust: str | None,
    scope: str,
    server_name: str,
    read_only: Sequence[str],
    files: Mapping[str, Path],
) -> list[str]:
    ro = ", ".join(read_only) if read_only else "(none)"
    notes = [
        "# Trust: non-interactive runs refuse tools nobody approved. "
        + {
            "claude": "`claude -p` cannot ask, so unapproved awf tools are denied.",
            "gemini": "`gemini -p` cannot ask, so tools needing confirmation are refused.",
            "codex": "`codex exec` cannot ask, so tools that need approval are refused.",
        }[client]
    ]
    if client == "claude":
        if trust is None:
            notes += [
                f"# --trust read-only adds {client_tool_name(server_name, '<tool>')} for {ro}",
                f"# to permissions.allow in {files['trust']}; --trust all adds "
                f"{client_tool_name(server_name)} (every tool of the server).",
            ]
        else:
            rules = claude_permission_rules(server_name, trust, read_only)
            notes += [f"# Add to {files['trust']}:", _dump_json({"permissions": {"allow": rules}})]
        if scope == "project":
            notes += [
                "# Project servers in .mcp.json also need approval once: with --trust, awf-mcp adds",
                f'# "enabledMcpjsonServers": ["{server_name}"] to that settings file. Claude Code applies',
                "# project permissions only in a trusted workspace: run `claude` here once and accept",
                "# the trust dialog (or use --scope user).",
            ]
        notes += [
            "# `claude -p` connects MCP servers in the background; set MCP_CONNECTION_NONBLOCKING=false",
            "# so the first turn already has the awf tools.",
        ]
    elif client == "gemini":
        if trust is None:
            notes += [
                f'# --trust all sets "trust": true on the entry; --trust read-only lists {ro}',
                f"# in tools.allowed as mcp_{server_name}_<tool>.",
            ]
        notes += [
            "# Folder trust: when security.folderTrust.enabled is on, Gemini CLI ignores project",
            "# settings (and their MCP servers) in an untrusted folder. Trust it with `gemini trust`",
            "# (saved in ~/.gemini/trustedFolders.json); in CI set GEMINI_CLI_TRUST_WORKSPACE=true.",
        ]
    else:
        if trust is None:
            notes += [
                "# Codex runs tools annotated read-only by itself; --trust all sets",
                '# default_tools_approval_mode = "approve" (every tool runs), --trust read-only sets',
                f'# approval_mode = "approve" for {ro} only.',
            ]
        if scope == "project":
            notes += [
                "# Codex reads .codex/config.toml only in a trusted project: mark it with",
                '# [projects."<path>"] trust_level = "trusted" in ~/.codex/config.toml',
                "# (Codex asks on the first interactive run).",
            ]
    return notes


# --------------------------------------------------------------------------- write


def write(
    client: str,
    *,
    command: Sequence[str],
    read_only_tools: Sequence[str],
    all_tools: Sequence[str] = (),
    trust: str | None,
    scope: str = "project",
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
) -> WriteReport:
    """Apply CLIENT's configuration to its SCOPE files; idempotent, with backups.

    Every file is read and parsed first; if any cannot be parsed, nothing is written.
    """
    check_options(client, scope, trust, server_name)
    if client == "json":
        raise UserError("the json client only prints a snippet; use claude, gemini or codex with --write")
    env = os.environ if env is None else env
    edits = _plan(
        client,
        command=command,
        read_only_tools=list(read_only_tools),
        trust=trust,
        scope=scope,
        server_name=server_name,
        cwd=cwd,
        home=home,
        env=env,
    )
    # Merge edits to the same file, then compute every result before touching anything.
    by_path: dict[Path, list[_Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    results: list[tuple[Path, str | None, str, str]] = []
    for path, group in by_path.items():
        old = _read(path)
        new = group[0].apply(old, path)
        for edit in group[1:]:
            new = edit.apply(new, path)
        results.append((path, old, new, group[0].fmt))
    report = WriteReport()
    for path, old, new, fmt in results:
        if old is not None and _same(old, new, fmt):
            report.unchanged.append(path)
            continue
        if old is not None:
            report.backups.append(_backup(path))
        _atomic_write(path, new)
        report.changed.append(path)
    if client == "gemini":
        report.notes.append(
            "note: if Gemini CLI's folder trust is on, trust this folder (`gemini trust`) "
            "or project settings are ignored"
        )
    if client == "codex" and scope == "project":
        report.notes.append(
            "note: Codex reads .codex/config.toml only in a trusted project "
            '([projects."<path>"] trust_level = "trusted" in ~/.codex/config.toml)'
        )
    return report


def configure(
    client: str,
    *,
    write_files: bool = False,
    scope: str = "project",
    trust: str | None = None,
    roots: Sequence[str] = (),
    only: Sequence[str] = (),
    exclude: Sequence[str] = (),
    config: str | None = None,
    server_name: str = DEFAULT_SERVER_NAME,
    tools: Sequence[tuple[str, bool]] | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    base_command: Sequence[str] | None = None,
) -> str:
    """What ``awf-mcp config CLIENT [...]`` prints: the rendered configuration, plus what
    ``--write`` changed. ``tools`` is ``(name, read_only)`` for every served tool (from the
    registry's annotations); ``None`` falls back to Read, Glob and Grep."""
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    env = os.environ if env is None else env
    base = list(base_command) if base_command is not None else server_command()
    command = serve_command(base, roots=roots, only=only, exclude=exclude, config=config, cwd=cwd)
    read_only = read_only_names(tools)
    all_tools = sorted(name for name, _ in tools) if tools is not None else []
    common: dict[str, Any] = {
        "command": command,
        "read_only_tools": read_only,
        "all_tools": all_tools,
        "trust": trust,
        "scope": scope,
        "server_name": server_name,
    }
    text = render(client, cwd=cwd, home=home, env=env, **common)
    if not write_files:
        return text
    report = write(client, cwd=cwd, home=home, env=env, **common)
    return text + "\n" + report.summary() + "\n"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise UserError(f"{path} is not UTF-8 text; not touching it: fix or move it and rerun") from None
    except OSError as exc:
        raise UserError(f"cannot read {path}: {exc.strerror or exc}") from None


def _same(old: str, new: str, fmt: str) -> bool:
    if old == new:
        return True
    if fmt == "json":
        return bool(old.strip()) and bool(json.loads(old) == json.loads(new))
    return False


def _backup(path: Path) -> Path:
    backup = path.with_name(path.name + ".bak")
    if backup.exists():
        backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}.bak")
        counter = 1
        while backup.exists():
            backup = path.with_name(f"{path.name}.{time.strftime('%Y%m%d-%H%M%S')}-{counter}.bak")
            counter += 1
    try:
        shutil.copy2(path, backup)
    except OSError as exc:
        raise UserError(f"cannot back up {path} to {backup}: {exc.strerror or exc}") from None
    return backup


def _atomic_write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
                handle.write(text)
            if mode is not None:
                os.chmod(tmp, mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- JSON


def _dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False)


JsonUpdate = Callable[[JsonObject, Path], None]


def _json_edit(*updates: JsonUpdate) -> Callable[[str | None, Path], str]:
    def apply(old: str | None, path: Path) -> str:
        data: JsonObject = {}
        if old is not None and old.strip():
            data = _parse_json(old, path)
        for update in updates:
            update(data, path)
        return _dump_json(data) + "\n"

    return apply


def _parse_json(text: str, path: Path) -> JsonObject:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); "
            "not touching it: fix it, or add the entry by hand from the snippet above"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{path} does not hold a JSON object; not touching it: fix or move it and rerun")
    return data


def _container(data: JsonObject, keys: Sequence[str], path: Path) -> JsonObject:
    node = data
    for i, key in enumerate(keys):
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            dotted = ".".join(keys[: i + 1])
            raise UserError(
                f"{path}: '{dotted}' is not a JSON object; not touching the file: fix it and rerun"
            )
        node = child
    return node


def _set_path(keys: Sequence[str], value: JsonObject) -> JsonUpdate:
    def update(data: JsonObject, path: Path) -> None:
        parent = _container(data, keys[:-1], path)
        current = parent.get(keys[-1])
        if isinstance(current, dict):
            # Keep settings the user added to the entry (env, cwd, includeTools ...);
            # replace the ones this command owns, in place so key order survives.
            merged = dict(current)
            merged.update(value)
            if "trust" not in value and "trust" in merged:
                del merged["trust"]
            parent[keys[-1]] = merged
        else:
            parent[keys[-1]] = value

    return update


def _add_to_list(keys: Sequence[str], items: Sequence[str]) -> JsonUpdate:
    def update(data: JsonObject, path: Path) -> None:
        parent = _container(data, keys[:-1], path)
        current = parent.get(keys[-1])
        if current is None:
            current = parent[keys[-1]] = []
        if not isinstance(current, list):
            dotted = ".".join(keys)
            raise UserError(f"{path}: '{dotted}' is not a JSON list; not touching the file: fix it and rerun")
        for item in items:
            if item not in current:
                current.append(item)

    return update


# --------------------------------------------------------------------------- TOML


def _toml_str(value: str) -> str:
    # JSON string escapes (\" \\ \n \t \uXXXX) are valid TOML basic-string escapes.
    return json.dumps(value, ensure_ascii=False)


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _toml_str(key)


_HEADER = re.compile(r"^\s*(\[\[?)(.*?)(\]\]?)\s*(#.*)?$")
_KEY_PART = re.compile(r'\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|\'([^\']*)\')\s*')


def _header_path(line: str) -> tuple[str, ...] | None:
    """The dotted key path of a ``[table]`` / ``[[array]]`` header line, or None."""
    match = _HEADER.match(line)
    if not match or (match.group(1) == "[[") != (match.group(3) == "]]"):
        return None
    inner = match.group(2)
    parts: list[str] = []
    pos = 0
    while True:
        part = _KEY_PART.match(inner, pos)
        if not part or part.end() == pos:
            return None
        bare, basic, literal = part.groups()
        if basic is not None:
            try:
                parts.append(json.loads(f'"{basic}"'))
            except json.JSONDecodeError:
                return None
        else:
            parts.append(bare if bare is not None else literal)
        pos = part.end()
        if pos == len(inner):
            return tuple(parts)
        if inner[pos] != ".":
            return None
        pos += 1


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(
            f"{path} is not valid TOML ({exc}); not touching it: fix it, "
            "or add the table by hand from the snippet above"
        ) from None


def _toml_replace_table(old: str | None, server_name: str, table: str, path: Path | None = None) -> str:
    """OLD with the ``[mcp_servers.NAME]`` table (and sub-tables) replaced by TABLE, or appended.

    Only those lines change; comments and every other table stay byte for byte. The
    result is parsed again and compared with the original before it is accepted.
    """
    where = path or Path("config.toml")
    text = old or ""
    before = _parse_toml(text, where)
    lines = text.splitlines(keepends=True)
    owned_prefix = ("mcp_servers", server_name)
    # Mark every line that belongs to an owned table (header up to the next header).
    owned = [False] * len(lines)
    in_owned = False
    first_owned: int | None = None
    multiline: str | None = None
    for i, line in enumerate(lines):
        if multiline is None:
            header = _header_path(line)
            if header is not None:
                in_owned = header[:2] == owned_prefix
                if in_owned and first_owned is None:
                    first_owned = i
        owned[i] = in_owned
        multiline = _track_multiline(line, multiline)
    servers = before.get("mcp_servers")
    if first_owned is None and isinstance(servers, dict) and server_name in servers:
        raise UserError(
            f"{where} defines mcp_servers.{server_name} without a [mcp_servers.{server_name}] table "
            "(inline or dotted keys); not touching it: rewrite it as a table or remove it, and rerun"
        )
    if first_owned is None:
        prefix = text
        if prefix and not prefix.endswith("\n"):
            prefix += "\n"
        if prefix.strip():
            prefix = prefix.rstrip("\n") + "\n\n"
        new = prefix + table
    else:
        kept: list[str] = []
        inserted = False
        i = 0
        while i < len(lines):
            if owned[i]:
                j = i
                while j < len(lines) and owned[j]:
                    j += 1
                block = lines[i:j]
                # Keep the blank lines and comments that trail the block (they lead the next table).
                tail: list[str] = []
                while block and (not block[-1].strip() or block[-1].lstrip().startswith("#")):
                    tail.insert(0, block.pop())
                if j == len(lines):
                    tail = [t for t in tail if t.strip()]
                if not inserted:
                    kept.append(table)
                    inserted = True
                    if j < len(lines) and not tail:
                        tail = ["\n"]
                kept.extend(tail)
                i = j
            else:
                kept.append(lines[i])
                i += 1
        new = "".join(kept)
    after = _parse_toml(new, where)
    expected = dict(before)
    expected_servers = dict(expected.get("mcp_servers") or {})
    expected_servers[server_name] = tomllib.loads(table)["mcp_servers"][server_name]
    expected["mcp_servers"] = expected_servers
    if after != expected:
        raise UserError(
            f"cannot edit {where} safely (its [mcp_servers.{server_name}] table is split or nested "
            "in a way this editor does not handle); not touching it: add the table by hand"
        )
    return new


def _track_multiline(line: str, state: str | None) -> str | None:
    """Whether a multi-line string (``\"\"\"`` or ``'''``) is still open after LINE."""
    pos = 0
    while True:
        if state is not None:
            end = line.find(state, pos)
            if end < 0:
                return state
            pos = end + 3
            state = None
        starts = [(line.find(q, pos), q) for q in ('"""', "'''")]
        starts = [(i, q) for i, q in starts if i >= 0]
        if not starts:
            return None
        hash_at = line.find("#", pos)
        i, quote = min(starts)
        if 0 <= hash_at < i:
            return None
        state = quote
        pos = i + 3
