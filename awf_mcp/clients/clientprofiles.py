"""What awf-mcp knows about each MCP client: one :class:`ClientProfile` per client, data only.

:data:`PROFILES` maps a client's name (``awf-mcp config NAME``) to its profile: the files
it reads per scope on Linux and on macOS, their format, where the server table lives,
the entry's shape, how tool approval is expressed, which setting switches off the
client's own file and shell tools (:class:`NativeTools`), the notes a user needs and
the documentation the format was taken from. Nothing in :mod:`.clientconfig` or
:mod:`.nativetools` branches on a client's name: adding a client is adding a profile.

Other modules iterate over the clients with :func:`profiles` and resolve a file with
:meth:`ClientProfile.scope_files` + :meth:`FileLocation.resolve`. :meth:`ClientProfile.entry`
writes a server entry; :meth:`ServerEntry.from_table` reads any entry, in every shape the
clients write (how a file is read is :func:`awf_mcp.clients.clientconfig.read_servers`).

===============  ==========================================  ===============================================
client           project scope                               user scope (Linux; macOS where different)
===============  ==========================================  ===============================================
claude           ``.mcp.json``                               ``~/.claude.json`` (``$CLAUDE_CONFIG_DIR``)
gemini           ``.gemini/settings.json``                   ``~/.gemini/settings.json``
codex            ``.codex/config.toml``                      ``$CODEX_HOME/config.toml`` (``~/.codex``)
cursor           ``.cursor/mcp.json``                        ``~/.cursor/mcp.json``
vscode           ``.vscode/mcp.json`` (``servers``)          ``~/.config/Code/User/mcp.json``;
                                                             ``~/Library/Application Support/Code/User/``
claude-desktop   --                                          ``~/.config/Claude/claude_desktop_config.json``;
                                                             ``~/Library/Application Support/Claude/``
windsurf         --                                          ``~/.codeium/windsurf/mcp_config.json``
zed              ``.zed/settings.json`` (``context_servers``)  ``~/.config/zed/settings.json``
opencode         ``opencode.json`` (``mcp``)                 ``~/.config/opencode/opencode.json``
json             printed only: a generic ``{"mcpServers": {...}}`` snippet
===============  ==========================================  ===============================================

Standard library only.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.ports import client_tool_name

SCOPES = ("project", "user")
#: Gemini CLI's default per-request timeout is 600 s; awf-mcp's own per-call limit is
#: 620 s, so give the client a little longer and let awf-mcp report the timeout itself.
GEMINI_TIMEOUT_MS = 630_000
JsonObject = dict[str, Any]


@dataclass(frozen=True)
class FileLocation:
    """A file under the project directory (``base="project"``) or the home directory (``"home"``).

    When the environment variable ``env_dir`` is set, the file is ``$env_dir/env_relative``
    instead (``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``, ``$XDG_CONFIG_HOME``).
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
class NativeTools:
    """The setting that switches off a client's own file and shell tools (``--replace-native``).

    It lives in the scope's ``file`` (``"servers"`` or ``"trust"``) at ``keys``: either a
    list to which ``names`` are added (``permissions.deny``, ``tools.exclude``), or, with
    ``switches``, a table whose keys are set to those values (Codex ``[features]``).
    """

    keys: tuple[str, ...]
    names: tuple[str, ...] = ()
    switches: Mapping[str, Any] = field(default_factory=dict)
    file: str = "servers"
    note: str = ""
    """What a user should know, printed with the setting."""


@dataclass(frozen=True)
class Gateway:
    """A remote awf-mcp (``serve --transport http``) an entry names instead of a command.

    ``token_variable`` names the environment variable holding the bearer token; the file
    names the variable, never the token. None: no token, the client signs in through the
    gateway's ``401`` (its identity provider, OAuth).
    """

    url: str
    token_variable: str | None = None


@dataclass(frozen=True)
class RemoteShape:
    """How a client's entry names a Streamable HTTP server and its bearer token (``--url``).

    The token is either an ``Authorization`` header whose value the client expands from the
    environment (``header_value``, a template with ``{variable}``), or a key naming the
    variable (``token_variable_key``, Codex's ``bearer_token_env_var``).
    """

    url_key: str = "url"
    head: Mapping[str, Any] = field(default_factory=dict)
    """Entry keys before the URL."""
    header_value: str = ""
    token_variable_key: str = ""

    def entry(self, gateway: Gateway) -> JsonObject:
        """The entry's head, URL and token for GATEWAY."""
        entry: JsonObject = {**self.head, self.url_key: gateway.url}
        if gateway.token_variable and self.token_variable_key:
            entry[self.token_variable_key] = gateway.token_variable
        elif gateway.token_variable:
            entry["headers"] = {"Authorization": self.header_value.format(variable=gateway.token_variable)}
        return entry


#: The keys that say how an entry reaches its server: a command, or a URL and its token. An
#: entry written for one way loses the other's (a local entry turned remote keeps no ``args``).
TRANSPORT_KEYS = ("command", "args", "url", "httpUrl", "serverUrl", "headers", "bearer_token_env_var")


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
    """``json``, ``jsonc`` (JSON that may hold comments) or ``toml``: the server file's format."""
    files: Mapping[str, ScopeFiles] = field(default_factory=dict)
    """Scope -> files on Linux; empty: the client's snippet is printed only."""
    macos_files: Mapping[str, ScopeFiles] | None = None
    """Scope -> files on macOS; None: the same as on Linux."""
    servers_key: tuple[str, ...] = ("mcpServers",)
    """Where the table of servers lives in the server file."""
    command_form: str = "split"
    """``split``: ``"command"`` + ``"args"``; ``argv``: ``"command"`` is the whole argv list."""
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
    native: NativeTools | None = None
    """The setting ``--replace-native`` adds; None: awf-mcp knows none for this client."""
    remote: RemoteShape | None = None
    """How the client names a remote server (``--url``); None: awf-mcp writes no remote entry for it."""
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
    docs: str = ""
    """The client's documentation of this format."""

    @property
    def default_scope(self) -> str:
        """``project`` where the client has it, else its only scope."""
        return "project" if "project" in self.files or not self.files else next(iter(self.files))

    @property
    def can_trust(self) -> bool:
        """Whether ``--trust`` means anything for this client."""
        return bool(self.allow_list or self.trust_all_entry or self.tool_approval)

    def scopes(self, platform: str | None = None) -> tuple[str, ...]:
        """The scopes this client has on PLATFORM."""
        return tuple(self._table(platform))

    def _table(self, platform: str | None) -> Mapping[str, ScopeFiles]:
        platform = sys.platform if platform is None else platform
        return self.macos_files if platform == "darwin" and self.macos_files is not None else self.files

    def scope_files(self, scope: str, platform: str | None = None) -> ScopeFiles:
        """This client's files for SCOPE on PLATFORM (``sys.platform``)."""
        table = self._table(platform)
        if not table:
            writable = [profile.name for profile in PROFILES.values() if profile.files]
            choices = ", ".join(writable[:-1]) + " or " + writable[-1]
            raise UserError(f"the {self.name} client only prints a snippet; use {choices} with --write")
        if scope not in table:
            raise UserError(
                f"{self.title} has no {scope} configuration file; use --scope {' or '.join(table)}"
            )
        return table[scope]

    def entry(
        self, command: Sequence[str] | Gateway, trust: str | None, read_only: Sequence[str]
    ) -> JsonObject:
        """The server entry that starts COMMAND, or names the remote GATEWAY, with the approvals
        TRUST puts on the entry itself."""
        if isinstance(command, Gateway):
            if self.remote is None:
                raise UserError(f"awf-mcp cannot write a remote entry for {self.title}: {remote_clients()}")
            entry: JsonObject = self.remote.entry(command)
        elif self.command_form == "argv":
            entry = {**self.entry_head, "command": list(command)}
        else:
            entry = {**self.entry_head, "command": command[0], "args": list(command[1:])}
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


@dataclass(frozen=True)
class ServerEntry:
    """One server entry in a client's file, as the client reads it.

    ``env`` holds the entry's values, which may be secrets: show :attr:`env_keys` only.
    """

    name: str
    table: Mapping[str, Any]
    """The entry as written."""
    argv: list[str] | None
    """The command it runs; None: it runs no local command (an HTTP entry, or a malformed one)."""
    url: str
    """The URL of an HTTP entry, or ``""``."""
    env: Mapping[str, str]
    """What the entry adds to the environment (``env``; opencode: ``environment``)."""
    disabled: bool
    """The client does not start it (``"disabled": true`` or ``"enabled": false``)."""
    is_awf: bool
    """It is awf-mcp's: named as awf's entry, or its command runs ``awf-mcp ... serve``."""

    @classmethod
    def from_table(cls, name: str, table: Mapping[str, Any], *, awf_name: str) -> ServerEntry:
        """The entry NAME -> TABLE; AWF_NAME is the name awf's own entry has."""
        argv = entry_argv(table)
        env = table.get("env", table.get("environment"))
        return cls(
            name=name,
            table=table,
            argv=argv,
            url=entry_url(table),
            env={str(k): v for k, v in env.items() if isinstance(v, str)} if isinstance(env, Mapping) else {},
            disabled=table.get("enabled") is False or table.get("disabled") is True,
            is_awf=name == awf_name or runs_awf_mcp(argv or []),
        )

    @property
    def env_keys(self) -> list[str]:
        """The names the entry sets in the environment, sorted (never the values)."""
        return sorted(self.env)


def entry_argv(table: Mapping[str, Any]) -> list[str] | None:
    """The argv a server entry runs, in any shape clients write; None when it names no command.

    ``{"command": "x", "args": [...]}`` (most clients), ``{"command": ["x", ...]}``
    (opencode), ``{"command": {"path": "x", "args": [...]}}`` (older Zed).
    """
    command: Any = table.get("command")
    args: Any = table.get("args", [])
    if isinstance(command, Mapping):
        command, args = command.get("path"), command.get("args", [])
    if isinstance(command, list):
        command, args = (command[0] if command else None), command[1:]
    if not isinstance(command, str) or not command or not isinstance(args, list):
        return None
    return [command, *(str(arg) for arg in args)]


def entry_url(table: Mapping[str, Any]) -> str:
    """The URL of an HTTP entry (Gemini's ``httpUrl``, ``url``, Windsurf's ``serverUrl``), or ``""``."""
    for key in ("httpUrl", "url", "serverUrl"):
        value = table.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def runs_awf_mcp(argv: Sequence[str]) -> bool:
    """True when ARGV runs ``awf-mcp ... serve``: a word names awf-mcp or awf_mcp (the
    executable, ``python -m awf_mcp``, a package spec) and another word is ``serve``."""
    names = (re.split(r"[/\\]", word)[-1] for word in argv)
    return "serve" in argv and any(name.startswith(("awf-mcp", "awf_mcp")) for name in names)


def _gemini_allow_name(server_name: str, tool: str) -> str:
    return f"mcp_{server_name}_{tool}"


def _xdg_config(relative: str) -> FileLocation:
    """``$XDG_CONFIG_HOME/RELATIVE``, or ``~/.config/RELATIVE``."""
    return FileLocation("home", f".config/{relative}", "XDG_CONFIG_HOME", relative)


def _mac_support(relative: str) -> FileLocation:
    return FileLocation("home", f"Library/Application Support/{relative}")


#: Claude Code's own file and shell tools (2.1.x); each is a known tool name, so Claude
#: Code prints no "matches no known tool" warning for them.
CLAUDE_NATIVE_TOOLS = ("Bash", "Monitor", "Read", "Write", "Edit", "NotebookEdit", "Glob", "Grep")
#: Gemini CLI's file and shell tools (0.61).
GEMINI_NATIVE_TOOLS = (
    "read_file",
    "read_many_files",
    "write_file",
    "replace",
    "run_shell_command",
    "glob",
    "grep_search",
    "list_directory",
)
#: Codex CLI's feature switches for its shell (``shell`` / ``exec_command`` +
#: ``write_stdin``) and image-reading (``view_image``) tools.
CODEX_NATIVE_SWITCHES = {"shell_tool": False, "unified_exec": False, "view_image": False}


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
            # .mcp.json expands ${VAR} in url, headers, command, args and env.
            remote=RemoteShape(head={"type": "http"}, header_value="Bearer ${{{variable}}}"),
            allow_list=("permissions", "allow"),
            allow_name=client_tool_name,
            allow_whole_server=True,
            project_enable_list=("enabledMcpjsonServers",),
            native=NativeTools(
                keys=("permissions", "deny"),
                names=CLAUDE_NATIVE_TOOLS,
                file="trust",
                note=(
                    "# Claude Code no longer offers these tools to the model; in the project scope\n"
                    "# only once the workspace is trusted (like every project permission)."
                ),
            ),
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
            docs="https://docs.anthropic.com/en/docs/claude-code/mcp",
        ),
        ClientProfile(
            name="gemini",
            title="Gemini CLI",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".gemini/settings.json")),
                "user": ScopeFiles(servers=FileLocation("home", ".gemini/settings.json")),
            },
            entry_tail={"timeout": GEMINI_TIMEOUT_MS},
            # httpUrl: Streamable HTTP (url would be SSE); settings expand ${VAR} in every string.
            remote=RemoteShape(url_key="httpUrl", header_value="Bearer ${{{variable}}}"),
            trust_all_entry={"trust": True},
            owned_entry_keys=("trust",),
            allow_list=("tools", "allowed"),
            allow_name=_gemini_allow_name,
            native=NativeTools(
                keys=("tools", "exclude"),
                names=GEMINI_NATIVE_TOOLS,
                note="# Gemini CLI leaves these tools out of what it offers the model.",
            ),
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
            docs="https://geminicli.com/docs/tools/mcp-server/",
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
            # Codex refuses a literal bearer_token for Streamable HTTP; it reads the variable.
            remote=RemoteShape(token_variable_key="bearer_token_env_var"),
            trust_all_entry={"default_tools_approval_mode": "approve"},
            tool_approval={"approval_mode": "approve"},
            native=NativeTools(
                keys=("features",),
                switches=CODEX_NATIVE_SWITCHES,
                note=(
                    "# Codex no longer offers its shell tools (exec_command, write_stdin, shell) or\n"
                    "# view_image to the model. Models whose metadata asks for apply_patch still get\n"
                    "# that tool; Codex has no switch for it."
                ),
            ),
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
            docs="https://developers.openai.com/codex/mcp",
        ),
        ClientProfile(
            name="cursor",
            title="Cursor",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".cursor/mcp.json")),
                "user": ScopeFiles(servers=FileLocation("home", ".cursor/mcp.json")),
            },
            notes="# Cursor asks before each tool call unless you allow the tool in its MCP settings.",
            docs="https://cursor.com/docs/mcp",
        ),
        ClientProfile(
            name="vscode",
            title="VS Code",
            format="jsonc",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".vscode/mcp.json")),
                "user": ScopeFiles(servers=_xdg_config("Code/User/mcp.json")),
            },
            macos_files={
                "project": ScopeFiles(servers=FileLocation("project", ".vscode/mcp.json")),
                "user": ScopeFiles(servers=_mac_support("Code/User/mcp.json")),
            },
            servers_key=("servers",),
            entry_head={"type": "stdio"},
            notes=(
                "# The user file is the default profile's; another VS Code profile keeps its own\n"
                "# mcp.json (run `MCP: Open User Configuration` in that profile)."
            ),
            docs="https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
        ),
        ClientProfile(
            name="claude-desktop",
            title="Claude Desktop",
            files={"user": ScopeFiles(servers=_xdg_config("Claude/claude_desktop_config.json"))},
            macos_files={"user": ScopeFiles(servers=_mac_support("Claude/claude_desktop_config.json"))},
            notes=(
                "# Claude Desktop starts the server outside any project: pass --root DIR to serve it.\n"
                "# Quit and restart Claude Desktop to load the server."
            ),
            docs="https://modelcontextprotocol.io/quickstart/user",
        ),
        ClientProfile(
            name="windsurf",
            title="Windsurf",
            files={"user": ScopeFiles(servers=FileLocation("home", ".codeium/windsurf/mcp_config.json"))},
            notes=(
                "# Windsurf may start the server outside your project: pass --root DIR to serve it.\n"
                "# Press refresh in Cascade's MCP panel to load the server."
            ),
            docs="https://docs.windsurf.com/windsurf/cascade/mcp",
        ),
        ClientProfile(
            name="zed",
            title="Zed",
            format="jsonc",
            files={
                "project": ScopeFiles(servers=FileLocation("project", ".zed/settings.json")),
                "user": ScopeFiles(servers=_xdg_config("zed/settings.json")),
            },
            macos_files={
                "project": ScopeFiles(servers=FileLocation("project", ".zed/settings.json")),
                "user": ScopeFiles(servers=FileLocation("home", ".config/zed/settings.json")),
            },
            servers_key=("context_servers",),
            entry_head={"source": "custom"},
            notes="# Zed's settings allow // comments; --write keeps them only in the .bak copy.",
            docs="https://zed.dev/docs/ai/mcp",
        ),
        ClientProfile(
            name="opencode",
            title="opencode",
            format="jsonc",
            files={
                "project": ScopeFiles(servers=FileLocation("project", "opencode.json")),
                "user": ScopeFiles(servers=_xdg_config("opencode/opencode.json")),
            },
            servers_key=("mcp",),
            command_form="argv",
            entry_head={"type": "local"},
            entry_tail={"enabled": True},
            docs="https://opencode.ai/docs/mcp-servers/",
        ),
        ClientProfile(name="json", title="generic", entry_head={"type": "stdio"}),
    )
}
CLIENTS = tuple(PROFILES)


def profiles() -> Iterator[ClientProfile]:
    """Every known client's profile, in ``awf-mcp config --list`` order."""
    return iter(PROFILES.values())


def remote_clients() -> str:
    """The sentence naming the clients ``--url`` writes a remote entry for."""
    names = [profile.name for profile in PROFILES.values() if profile.remote is not None]
    return f"--url is available for {', '.join(names[:-1])} and {names[-1]}; add the entry by hand for others"
