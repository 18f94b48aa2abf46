"""``awf-mcp config CLIENT``: the MCP configuration each agent needs, printed or written.

Every client is one :class:`ClientProfile` in :data:`PROFILES`: the files it reads per
scope, their format, where the server table lives, how tool approval is expressed, and
the notes a user needs. Adding a client means adding a profile; nothing below branches
on a client's name. The profiles today:

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

The paths are the same on Linux and macOS. Writing goes through
:mod:`awf_mcp.ops.editors`: idempotent, order- and comment-preserving, a ``.bak`` copy
of every file that changes, nothing written when any file cannot be parsed.

The caller (the CLI) passes ``serve_args``, the argv after ``serve`` with paths
already absolute; this module only puts the awf-mcp executable in front of it.
This module uses the standard library only.
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.ops.editors import (
    Edit,
    JsonObject,
    WriteReport,
    add_to_list,
    apply_edits,
    dump_json,
    json_edit,
    nest,
    set_entry,
    toml_replace_table,
    toml_table,
)
from awf_mcp.ports import TOOL_NAME_PATTERN, client_tool_name

SCOPES = ("project", "user")
TRUST_LEVELS = ("read-only", "all")
DEFAULT_SERVER_NAME = "awf"
#: Used when the caller cannot say which tools are read-only (no annotations).
FALLBACK_READ_ONLY_TOOLS = ("Glob", "Grep", "Read")
#: Gemini CLI's default per-request timeout is 600 s; awf-mcp's own per-call limit is
#: 620 s, so give the client a little longer and let awf-mcp report the timeout itself.
GEMINI_TIMEOUT_MS = 630_000


# --------------------------------------------------------------------------- profiles


@dataclass(frozen=True)
class FileLocation:
    """A file under the project directory (``base="project"``) or the home directory (``"home"``).

    When the environment variable ``env_dir`` is set, the file is ``$env_dir/env_relative``
    instead (``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``).
    """

    base: str
    relative: str
    env_dir: str | None = None
    env_relative: str = ""

    def resolve(self, *, cwd: Path, home: Path, env: Mapping[str, str]) -> Path:
        """The file's absolute path for this project directory, home and environment."""
        configured = env.get(self.env_dir) if self.env_dir else None
        if configured:
            return Path(configured).expanduser() / self.env_relative
        return (cwd if self.base == "project" else home) / self.relative


@dataclass(frozen=True)
class ScopeFiles:
    """The files of one scope: the server entry's, and the approvals' (None: the same file)."""

    servers: FileLocation
    trust: FileLocation | None = None


@dataclass(frozen=True)
class ClientProfile:
    """What awf-mcp knows about one client: files, format, entry shape, trust keys, notes.

    Note texts are ``str.format`` templates; the fields are ``server`` (the server
    name), ``ro`` (the read-only tools, comma-separated), ``trust_file``,
    ``tool_rule`` (the approval name of one tool, ``<tool>``) and ``server_rule``
    (the approval name of the whole server).
    """

    name: str
    title: str
    format: str = "json"
    """``json`` or ``toml``: how the server file is written and the snippet printed."""
    files: Mapping[str, ScopeFiles] = field(default_factory=dict)
    """Scope -> files on Linux; empty: the client's snippet is printed only."""
    macos_files: Mapping[str, ScopeFiles] | None = None
    """Scope -> files on macOS; None: the same as on Linux."""
    servers_key: tuple[str, ...] = ("mcpServers",)
    """Where the table of servers lives in the server file."""
    entry_head: Mapping[str, Any] = field(default_factory=dict)
    """Entry keys before ``command`` and ``args``."""
    entry_tail: Mapping[str, Any] = field(default_factory=dict)
    """Entry keys after ``command`` and ``args``."""
    trust_all_entry: Mapping[str, Any] = field(default_factory=dict)
    """Entry keys that let every tool run (``--trust all``)."""
    owned_entry_keys: tuple[str, ...] = ()
    """Entry keys awf-mcp removes from an existing entry when it no longer sets them."""
    tool_approval: Mapping[str, Any] | None = None
    """Per-tool sub-table under the entry's ``tools`` that lets a read-only tool run."""
    allow_list: tuple[str, ...] | None = None
    """Where the list of approved tool names lives in the trust file."""
    allow_name: Callable[[str, str], str] | None = None
    """The approval name of (server, tool); tool "": the whole server."""
    allow_whole_server: bool = False
    """``--trust all`` adds the whole server's name to the approval list."""
    project_enable_list: tuple[str, ...] | None = None
    """A list in the trust file that must name a project-scope server before it starts."""
    add_command: tuple[str, ...] | None = None
    """The client's own command that adds a server (templates: ``{scope}``, ``{server}``)."""
    headless: str = ""
    """What a non-interactive run does with a tool nobody approved."""
    trust_hint: str = ""
    """What ``--trust`` would do, printed when it is not given."""
    scope_notes: Mapping[str, str] = field(default_factory=dict)
    """Scope -> a note for that scope only."""
    notes: str = ""
    """A note for every scope."""

    def scope_files(self, scope: str, platform: str | None = None) -> ScopeFiles:
        """This client's files for SCOPE on PLATFORM (``sys.platform``)."""
        platform = sys.platform if platform is None else platform
        table = self.macos_files if platform == "darwin" and self.macos_files is not None else self.files
        if scope not in table:
            writable = [profile.name for profile in PROFILES.values() if profile.files]
            choices = ", ".join(writable[:-1]) + " or " + writable[-1]
            raise UserError(f"the {self.name} client only prints a snippet; use {choices} with --write")
        return table[scope]

    def entry(self, command: Sequence[str], trust: str | None, read_only: Sequence[str]) -> JsonObject:
        """The server entry that starts COMMAND, with the approvals TRUST puts on the entry itself."""
        entry: JsonObject = {**self.entry_head, "command": command[0], "args": list(command[1:])}
        entry.update(self.entry_tail)
        if trust == "all":
            entry.update(self.trust_all_entry)
        elif trust == "read-only" and self.tool_approval is not None:
            entry["tools"] = {tool: dict(self.tool_approval) for tool in read_only}
        return entry

    def allowed(self, server_name: str, trust: str | None, read_only: Sequence[str]) -> list[str] | None:
        """The names TRUST adds to the approval list (None: this trust level adds no list)."""
        if self.allow_list is None or self.allow_name is None or trust is None:
            return None
        if trust == "all":
            return [self.allow_name(server_name, "")] if self.allow_whole_server else None
        return [self.allow_name(server_name, tool) for tool in read_only]


def _gemini_allow_name(server_name: str, tool: str) -> str:
    return f"mcp_{server_name}_{tool}"


PROFILES: dict[str, ClientProfile] = {
    profile.name: profile
    for profile in (
        ClientProfile(
            name="claude",
            title="Claude Code",
            files={
                "project": ScopeFiles(
                    servers=FileLocation("project", ".mcp.json"),
                    trust=FileLocation("project", ".claude/settings.json"),
                ),
                "user": ScopeFiles(
                    servers=FileLocation("home", ".claude.json", "CLAUDE_CONFIG_DIR", ".claude.json"),
                    trust=FileLocation("home", ".claude/settings.json", "CLAUDE_CONFIG_DIR", "settings.json"),
                ),
            },
            entry_head={"type": "stdio"},
            allow_list=("permissions", "allow"),
            allow_name=client_tool_name,
            allow_whole_server=True,
            project_enable_list=("enabledMcpjsonServers",),
            add_command=("claude", "mcp", "add", "--scope", "{scope}", "{server}", "--"),
            headless="`claude -p` cannot ask, so unapproved awf tools are denied.",
            trust_hint=(
                "# --trust read-only adds {tool_rule} for {ro}\n"
                "# to permissions.allow in {trust_file}; --trust all adds "
                "{server_rule} (every tool of the server)."
            ),
            scope_notes={
                "project": (
                    "# Project servers in .mcp.json also need approval once: with --trust, awf-mcp adds\n"
                    '# "enabledMcpjsonServers": ["{server}"] to that settings file. Claude Code applies\n'
                    "# project permissions only in a trusted workspace: run `claude` here once and accept\n"
                    "# the trust dialog (or use --scope user)."
                )
            },
            notes=(
                "# `claude -p` connects MCP servers in the background; set MCP_CONNECTION_NONBLOCKING=false\n"
                "# so the first turn already has the awf tools."
            ),
        ),
        ClientProfile(
            name="gemini",
            title="Gemini CLI",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".gemini/settings.json")),
                "user": ScopeFiles(servers=FileLocation("home", ".gemini/settings.json")),
            },
            entry_tail={"timeout": GEMINI_TIMEOUT_MS},
            trust_all_entry={"trust": True},
            owned_entry_keys=("trust",),
            allow_list=("tools", "allowed"),
            allow_name=_gemini_allow_name,
            headless="`gemini -p` cannot ask, so tools needing confirmation are refused.",
            trust_hint=(
                '# --trust all sets "trust": true on the entry; --trust read-only lists {ro}\n'
                "# in tools.allowed as mcp_{server}_<tool>."
            ),
            notes=(
                "# Folder trust: when security.folderTrust.enabled is on, Gemini CLI ignores project\n"
                "# settings (and their MCP servers) in an untrusted folder. Trust it with `gemini trust`\n"
                "# (saved in ~/.gemini/trustedFolders.json); in CI set GEMINI_CLI_TRUST_WORKSPACE=true."
            ),
        ),
        ClientProfile(
            name="codex",
            title="Codex CLI",
            format="toml",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".codex/config.toml")),
                "user": ScopeFiles(
                    servers=FileLocation("home", ".codex/config.toml", "CODEX_HOME", "config.toml")
                ),
            },
            servers_key=("mcp_servers",),
            # Without it, `codex exec` sends its first request before the server is up.
            entry_tail={"required": True},
            trust_all_entry={"default_tools_approval_mode": "approve"},
            tool_approval={"approval_mode": "approve"},
            headless="`codex exec` cannot ask, so tools that need approval are refused.",
            trust_hint=(
                "# Codex runs tools annotated read-only by itself; --trust all sets\n"
                '# default_tools_approval_mode = "approve" (every tool runs), --trust read-only sets\n'
                '# approval_mode = "approve" for {ro} only.'
            ),
            scope_notes={
                "project": (
                    "# Codex reads .codex/config.toml only in a trusted project: mark it with\n"
                    '# [projects."<path>"] trust_level = "trusted" in ~/.codex/config.toml\n'
                    "# (Codex asks on the first interactive run)."
                )
            },
        ),
        ClientProfile(name="json", title="generic", entry_head={"type": "stdio"}),
    )
}
CLIENTS = tuple(PROFILES)


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


def read_only_names(tools: Iterable[tuple[str, bool]] | None) -> list[str]:
    """Names of the read-only tools among ``(name, read_only)`` pairs, or the fallback list."""
    if tools is None:
        return sorted(FALLBACK_READ_ONLY_TOOLS)
    return sorted({name for name, read_only in tools if read_only})


def check_options(client: str, scope: str, trust: str | None, server_name: str) -> None:
    """Raise :class:`UserError` for an unknown client, scope or trust level, or an unusable name."""
    if client not in PROFILES:
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


def target_files(
    client: str, scope: str, *, cwd: Path, home: Path, env: Mapping[str, str] | None = None
) -> dict[str, Path]:
    """The files ``write`` edits for CLIENT/SCOPE: ``{"servers": path, "trust": path}``."""
    env = os.environ if env is None else env
    files = PROFILES[client].scope_files(scope)
    servers = files.servers.resolve(cwd=cwd, home=home, env=env)
    trust = files.trust.resolve(cwd=cwd, home=home, env=env) if files.trust else servers
    return {"servers": servers, "trust": trust}


# --------------------------------------------------------------------------- the configuration


@dataclass(frozen=True)
class _Request:
    """One ``awf-mcp config`` request, resolved: the profile, the command and the choices."""

    profile: ClientProfile
    command: list[str]
    read_only: list[str]
    trust: str | None
    scope: str
    server_name: str

    def entry(self) -> JsonObject:
        return self.profile.entry(self.command, self.trust, self.read_only)

    def allowed(self) -> list[str] | None:
        return self.profile.allowed(self.server_name, self.trust, self.read_only)

    def entry_snippet(self) -> str:
        keys = (*self.profile.servers_key, self.server_name)
        if self.profile.format == "toml":
            return toml_table(keys, self.entry())
        return dump_json(nest(keys, self.entry()))

    def note_fields(self, files: Mapping[str, Path]) -> dict[str, str]:
        allow_name = self.profile.allow_name
        return {
            "server": self.server_name,
            "ro": ", ".join(self.read_only) if self.read_only else "(none)",
            "trust_file": str(files["trust"]),
            "tool_rule": allow_name(self.server_name, "<tool>") if allow_name else "",
            "server_rule": allow_name(self.server_name, "") if allow_name else "",
        }


def render(
    client: str,
    *,
    command: Sequence[str],
    read_only_tools: Sequence[str],
    trust: str | None,
    scope: str = "project",
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """The configuration for CLIENT as text to print: the exact snippet, where it goes, and trust."""
    check_options(client, scope, trust, server_name)
    request = _Request(PROFILES[client], list(command), list(read_only_tools), trust, scope, server_name)
    profile = request.profile
    if not profile.files:
        return request.entry_snippet()
    files = target_files(
        client,
        scope,
        cwd=Path.cwd() if cwd is None else cwd,
        home=Path.home() if home is None else home,
        env=os.environ if env is None else env,
    )
    fields = request.note_fields(files)
    where = f"# {profile.title}, {scope} scope:"
    what = "table" if profile.format == "toml" else "entry"
    out: list[str] = []
    if profile.add_command:
        add = [part.format(scope=scope, server=server_name) for part in profile.add_command]
        out += [
            f"{where} run",
            shlex.join([*add, *command]),
            "",
            f"# or add this {what} to {files['servers']}:",
        ]
    else:
        out += [f"{where} add this {what} to {files['servers']}:"]
    out.append(request.entry_snippet().rstrip("\n"))
    allowed = request.allowed()
    approvals = dump_json(nest(profile.allow_list or (), allowed)) if allowed is not None else ""
    same_file = files["trust"] == files["servers"]
    if approvals and same_file:
        out += ["", "# and let the read-only tools run without confirmation (same file):", approvals]
    out += ["", "# Trust: non-interactive runs refuse tools nobody approved. " + profile.headless]
    if trust is None:
        out += profile.trust_hint.format(**fields).splitlines()
    elif approvals and not same_file:
        out += [f"# Add to {files['trust']}:", approvals]
    for note in (profile.scope_notes.get(scope, ""), profile.notes):
        out += note.format(**fields).splitlines()
    write_hint = f"awf-mcp config {client} --write" + (" --scope user" if scope == "user" else "")
    if trust:
        write_hint += f" --trust {trust}"
    out += ["", f"# `{write_hint}` applies this for you (idempotent, keeps a .bak of the old file)."]
    return "\n".join(out) + "\n"


def _edits(request: _Request, files: Mapping[str, Path]) -> list[Edit]:
    """The edits that apply REQUEST to FILES."""
    profile = request.profile
    keys = (*profile.servers_key, request.server_name)
    if profile.format == "toml":
        edits = [Edit(files["servers"], "toml", toml_replace_table(keys, toml_table(keys, request.entry())))]
    else:
        entry = set_entry(keys, request.entry(), owned=profile.owned_entry_keys)
        edits = [Edit(files["servers"], "json", json_edit(entry))]
    updates = []
    allowed = request.allowed()
    if allowed is not None and profile.allow_list is not None:
        updates.append(add_to_list(profile.allow_list, allowed))
    if request.trust is not None and request.scope == "project" and profile.project_enable_list:
        updates.append(add_to_list(profile.project_enable_list, [request.server_name]))
    if updates:
        edits.append(Edit(files["trust"], "json", json_edit(*updates)))
    return edits


def write(
    client: str,
    *,
    command: Sequence[str],
    read_only_tools: Sequence[str],
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
    request = _Request(PROFILES[client], list(command), list(read_only_tools), trust, scope, server_name)
    files = target_files(client, scope, cwd=cwd, home=home, env=env)
    return apply_edits(_edits(request, files))


def configure(
    client: str,
    *,
    write_files: bool = False,
    scope: str = "project",
    trust: str | None = None,
    server_name: str = DEFAULT_SERVER_NAME,
    tools: Sequence[tuple[str, bool]] | None = None,
    serve_args: Sequence[str] = (),
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    base_command: Sequence[str] | None = None,
) -> str:
    """What ``awf-mcp config CLIENT [...]`` prints: the rendered configuration, plus what
    ``--write`` changed.

    ``serve_args`` is the argv after ``serve`` (paths already absolute); ``tools`` is
    ``(name, read_only)`` for every served tool (from the registry's annotations);
    ``None`` falls back to Read, Glob and Grep. ``base_command`` defaults to
    :func:`server_command`.
    """
    cwd = Path.cwd() if cwd is None else cwd
    home = Path.home() if home is None else home
    env = os.environ if env is None else env
    base = list(base_command) if base_command is not None else server_command()
    common: dict[str, Any] = {
        "command": [*base, "serve", *serve_args],
        "read_only_tools": read_only_names(tools),
        "trust": trust,
        "scope": scope,
        "server_name": server_name,
        "cwd": cwd,
        "home": home,
        "env": env,
    }
    text = render(client, **common)
    if not write_files:
        return text
    return text + "\n" + write(client, **common).summary() + "\n"
