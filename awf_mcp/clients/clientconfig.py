"""``awf-mcp config CLIENT``: the MCP configuration each agent needs, printed or written.

Every client is one :class:`~awf_mcp.clients.clientprofiles.ClientProfile` in
:data:`~awf_mcp.clients.clientprofiles.PROFILES` (the table of clients and files is there);
nothing below branches on a client's name. This module turns a profile into:

* the text ``awf-mcp config CLIENT`` prints (:func:`render`, :func:`configure`), and the
  edits ``--write`` applies (:func:`write`), through :mod:`awf_mcp.clients.editors`:
  idempotent, comments and order kept (JSONC through :mod:`.jsonedit`, TOML through
  :mod:`.tomledit`), a ``.bak`` copy of every file that changes, nothing written when any
  file cannot be parsed; the project scope's files are the project's
  (:func:`~awf_mcp.clients.clientfiles.project_of`), so one that is a symbolic link is
  refused, while a user-scope link is written through
  (:func:`awf_mcp.clients.editors.writable_target`);
* ``--url URL [--token-env VAR]`` (:func:`parse_gateway`): the entry names a remote awf-mcp,
  a :class:`Gateway`, instead of a command, in the shape of the profile's
  :class:`~awf_mcp.clients.clientprofiles.RemoteShape`; an entry turned from one to the other
  keeps no key of the way it no longer uses (:data:`~awf_mcp.clients.clientprofiles.TRANSPORT_KEYS`);
* ``--replace-native`` / ``--restore-native`` (:mod:`awf_mcp.clients.nativetools`);
* where the files are and what they hold (``awf-mcp config --list``, the readers for
  ``awf-mcp doctor`` and ``servers import``) is :mod:`awf_mcp.clients.clientfiles`; its
  public names are importable from here too.

The caller (the CLI) passes ``serve_args``, the argv after ``serve`` with paths
already absolute; this module only puts the awf-mcp executable in front of it.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awf_mcp.clients import nativetools
from awf_mcp.clients.clientfiles import (
    DEFAULT_SERVER_NAME,
    InstalledEntry,
    ServerFile,
    installed_entries,
    list_clients,
    locate,
    project_of,
    read_entry,
    read_servers,
    resolve_scope,
    server_files,
    target_files,
)
from awf_mcp.clients.clientprofiles import (
    CLIENTS,
    GEMINI_TIMEOUT_MS,
    PROFILES,
    SCOPES,
    TRANSPORT_KEYS,
    ClientProfile,
    FileLocation,
    Gateway,
    NativeTools,
    ScopeFiles,
    ServerEntry,
    profiles,
)
from awf_mcp.clients.editors import Edit, WriteReport, apply_edits
from awf_mcp.clients.jsonedit import JsonObject, add_to_list, dump_json, json_edit, nest, set_entry
from awf_mcp.clients.tomledit import toml_set_table, toml_table
from awf_mcp.errors import UserError
from awf_mcp.ports import TOOL_NAME_PATTERN
from awf_mcp.processes.childenv import launched_executable
from awf_mcp.processes.startshim import shim_command

__all__ = [
    "CLIENTS",
    "DEFAULT_SERVER_NAME",
    "GEMINI_TIMEOUT_MS",
    "PROFILES",
    "SCOPES",
    "ClientProfile",
    "FileLocation",
    "Gateway",
    "InstalledEntry",
    "NativeTools",
    "ScopeFiles",
    "ServerEntry",
    "ServerFile",
    "WriteReport",
    "configure",
    "installed_entries",
    "list_clients",
    "locate",
    "parse_gateway",
    "profiles",
    "project_of",
    "read_entry",
    "read_servers",
    "render",
    "resolve_scope",
    "server_files",
    "target_files",
    "write",
]

TRUST_LEVELS = ("read-only", "all")
#: Used when the caller cannot say which tools are read-only (no annotations).
FALLBACK_READ_ONLY_TOOLS = ("Glob", "Grep", "Read")


# --------------------------------------------------------------------------- command


def server_command(
    *,
    argv0: str | None = None,
    executable: str | None = None,
    frozen: bool | None = None,
) -> list[str]:
    """The argv that starts this awf-mcp, as an absolute path an agent can run from anywhere.

    The frozen single executable is named by its own absolute path, after its start-up shim
    when it carries one (:func:`~awf_mcp.processes.startshim.shim_command`, which installs the
    shim in the user's data directory): ``[SHIM, BINARY]``. The ``awf-mcp`` console script is
    named by its own absolute path; anything else (``python -m awf_mcp``) becomes
    ``[sys.executable, "-P", "-m", "awf_mcp"]``: ``-P`` keeps the working directory (the
    project the agent opens) off ``sys.path``, so a repository's ``awf_mcp/`` is not imported.
    """
    argv0 = sys.argv[0] if argv0 is None else argv0
    frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
    if executable is None:  # the portable binary: the file started, not the copy it runs from
        executable = launched_executable(frozen=frozen)
    if frozen:
        return shim_command(str(Path(executable).absolute()))
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
    return [str(Path(executable).absolute()), "-P", "-m", "awf_mcp"]


def read_only_names(tools: Iterable[tuple[str, bool]] | None) -> list[str]:
    """Names of the read-only tools among ``(name, read_only)`` pairs, or the fallback list."""
    if tools is None:
        return sorted(FALLBACK_READ_ONLY_TOOLS)
    return sorted({name for name, read_only in tools if read_only})


def parse_gateway(url: str | None, token_variable: str | None) -> Gateway:
    """The :class:`Gateway` of ``--url URL [--token-env NAME]``; :class:`UserError` when unusable.

    The URL must be ``https``, or ``http`` to a loopback host: a bearer token sent in clear
    over a network is anybody's. The variable's name must be one a shell can set.
    """
    if url is None:
        raise UserError("--token-env names the variable of a gateway's token: give the gateway's --url too")
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    if parsed.scheme not in ("http", "https") or not host:
        raise UserError(f"--url {url!r} is not an http(s) URL of a gateway (https://HOST/mcp)")
    if parsed.scheme == "http" and host not in ("localhost", "127.0.0.1", "::1"):
        raise UserError(
            f"--url {url!r} sends the gateway's token in clear over the network: use https "
            "(plain http only to localhost)"
        )
    if token_variable is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", token_variable):
        raise UserError(
            f"--token-env {token_variable!r} is not an environment variable's name "
            "(letters, digits and '_', not starting with a digit)"
        )
    return Gateway(url, token_variable)


def check_options(client: str, scope: str | None, trust: str | None, server_name: str) -> None:
    """Raise :class:`UserError` for an unknown client, scope or trust level, or an unusable name."""
    if client not in PROFILES:
        raise UserError(f"unknown client '{client}'; use one of: {', '.join(CLIENTS)}")
    if scope is not None and scope not in SCOPES:
        raise UserError(f"unknown scope '{scope}'; use project or user")
    if trust is not None and trust not in TRUST_LEVELS:
        raise UserError(f"unknown trust level '{trust}'; use read-only or all")
    profile = PROFILES[client]
    if trust is not None and profile.files and not profile.can_trust:
        raise UserError(
            f"--trust is not available for {profile.title}: awf-mcp knows no setting of it that "
            "approves tools; approve them in the client, or leave --trust out"
        )
    if not TOOL_NAME_PATTERN.match(server_name):
        raise UserError(
            f"server name '{server_name}' is not usable by every client; "
            "use letters, digits, '_' or '-' (at most 64 characters)"
        )


# --------------------------------------------------------------------------- the configuration


@dataclass(frozen=True)
class _Request:
    """One ``awf-mcp config`` request, resolved: the profile, the command and the choices."""

    profile: ClientProfile
    command: list[str] | Gateway
    """The command the client runs, or the remote gateway it reaches."""
    read_only: list[str]
    trust: str | None
    scope: str
    server_name: str

    @classmethod
    def make(
        cls,
        client: str,
        command: Sequence[str] | Gateway,
        read_only_tools: Sequence[str],
        trust: str | None,
        scope: str | None,
        server_name: str,
    ) -> _Request:
        check_options(client, scope, trust, server_name)
        return cls(
            PROFILES[client],
            command if isinstance(command, Gateway) else list(command),
            list(read_only_tools),
            trust,
            resolve_scope(client, scope),
            server_name,
        )

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
    command: Sequence[str] | Gateway,
    read_only_tools: Sequence[str],
    trust: str | None,
    scope: str | None = None,
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    replace_native: bool = False,
) -> str:
    """The configuration for CLIENT as text to print: the exact snippet, where it goes, and trust.

    COMMAND is what the client runs, or the :class:`Gateway` it reaches. REPLACE_NATIVE adds
    the setting that switches off the client's own tools.
    """
    request = _Request.make(client, command, read_only_tools, trust, scope, server_name)
    request.entry()  # a client without a remote entry is refused before anything is printed
    profile, scope = request.profile, request.scope
    if replace_native:
        nativetools.setting(profile)
    if not profile.files:
        return request.entry_snippet()
    cwd, home, env = locate(cwd, home, env)
    files = target_files(client, scope, cwd=cwd, home=home, env=env)
    fields = request.note_fields(files)
    where = f"# {profile.title}, {scope} scope:"
    what = "table" if profile.format == "toml" else "entry"
    out: list[str] = []
    if profile.add_command and not isinstance(command, Gateway):
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
    if isinstance(command, Gateway):
        out += _gateway_notes(command)
    allowed = request.allowed()
    approvals = dump_json(nest(profile.allow_list or (), allowed)) if allowed is not None else ""
    same_file = files["trust"] == files["servers"]
    if approvals and same_file:
        out += ["", "# and let the read-only tools run without confirmation (same file):", approvals]
    if profile.headless:
        out += ["", "# Trust: non-interactive runs refuse tools nobody approved. " + profile.headless]
    if trust is None:
        out += profile.trust_hint.format(**fields).splitlines()
    elif approvals and not same_file:
        out += [f"# Add to {files['trust']}:", approvals]
    for note in (profile.scope_notes.get(scope, ""), profile.notes):
        out += note.format(**fields).splitlines()
    if replace_native:
        assert profile.native is not None
        out += ["", nativetools.describe(profile, files[profile.native.file])]
    elif profile.native is not None:
        out += [f"# --replace-native also switches off {profile.title}'s own file and shell tools."]
    write_hint = f"awf-mcp config {client} --write" + (f" --scope {scope}" if scope != "project" else "")
    if isinstance(command, Gateway):
        write_hint += f" --url {shlex.quote(command.url)}"
        if command.token_variable:
            write_hint += f" --token-env {command.token_variable}"
    if trust:
        write_hint += f" --trust {trust}"
    if replace_native:
        write_hint += " --replace-native"
    out += ["", f"# `{write_hint}` applies this for you (idempotent, keeps a .bak of the old file)."]
    if profile.docs:
        out.append(f"# {profile.title}'s documentation of this file: {profile.docs}")
    return "\n".join(out) + "\n"


def _gateway_notes(gateway: Gateway) -> list[str]:
    """What a user must know about a remote entry: where its token comes from."""
    if gateway.token_variable:
        return [
            f"# The client reads the token from ${gateway.token_variable} when it connects: set it in the",
            "# environment the client runs in. The file names the variable, never the token.",
        ]
    return [
        "# No token: the client signs in through the gateway's identity provider when it first",
        "# connects (the gateway's 401 names its authorization server).",
    ]


def _edits(request: _Request, files: Mapping[str, Path], cwd: Path) -> list[Edit]:
    """The edits that apply REQUEST to FILES (a project's files are those of CWD)."""
    profile = request.profile
    project = project_of(request.scope, cwd)
    keys = (*profile.servers_key, request.server_name)
    if profile.format == "toml":
        edits = [Edit(files["servers"], "toml", toml_set_table(keys, request.entry()), project)]
    else:
        owned = (*profile.owned_entry_keys, *TRANSPORT_KEYS)  # a command, or a URL, never both
        entry = set_entry(keys, request.entry(), owned=owned)
        comments = profile.format == "jsonc"
        edits = [Edit(files["servers"], profile.format, json_edit(entry, comments=comments), project)]
    updates = []
    allowed = request.allowed()
    if allowed is not None and profile.allow_list is not None:
        updates.append(add_to_list(profile.allow_list, allowed))
    if request.trust is not None and request.scope == "project" and profile.project_enable_list:
        updates.append(add_to_list(profile.project_enable_list, [request.server_name]))
    if updates:
        edits.append(Edit(files["trust"], "json", json_edit(*updates), project))
    return edits


def plan_write(
    client: str,
    *,
    command: Sequence[str] | Gateway,
    read_only_tools: Sequence[str],
    trust: str | None,
    scope: str | None = None,
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
) -> list[Edit]:
    """The edits :func:`write` applies, for a caller that applies them with edits of its own."""
    request = _Request.make(client, command, read_only_tools, trust, scope, server_name)
    files = target_files(client, request.scope, cwd=cwd, home=home, env=env)
    return _edits(request, files, cwd)


def write(client: str, **options: Any) -> WriteReport:
    """Apply CLIENT's configuration to its SCOPE files (OPTIONS: those of :func:`plan_write`);
    idempotent, with backups.

    Every file is read and parsed first; if any cannot be parsed, nothing is written.
    """
    return apply_edits(plan_write(client, **options))


def _native_file(client: str, scope: str | None, *, cwd: Path, home: Path, env: Mapping[str, str]) -> Path:
    profile = PROFILES[client]
    native = nativetools.setting(profile)
    return target_files(client, scope, cwd=cwd, home=home, env=env)[native.file]


def replace_native_tools(
    client: str,
    *,
    scope: str | None = None,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
) -> WriteReport:
    """Switch off CLIENT's own file and shell tools in its SCOPE file (see :mod:`.nativetools`)."""
    env = os.environ if env is None else env
    check_options(client, scope, None, DEFAULT_SERVER_NAME)
    path = _native_file(client, scope, cwd=cwd, home=home, env=env)
    project = project_of(resolve_scope(client, scope), cwd)
    ledger = nativetools.ledger_path(home, env)
    return nativetools.replace(PROFILES[client], path, ledger=ledger, project=project)


def restore_native_tools(
    client: str,
    *,
    scope: str | None = None,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> str:
    """Remove exactly what :func:`replace_native_tools` added to CLIENT's SCOPE file; what happened."""
    cwd, home, env = locate(cwd, home, env)
    check_options(client, scope, None, DEFAULT_SERVER_NAME)
    path = _native_file(client, scope, cwd=cwd, home=home, env=env)
    project = project_of(resolve_scope(client, scope), cwd)
    ledger = nativetools.ledger_path(home, env)
    report, note = nativetools.restore(PROFILES[client], path, ledger=ledger, project=project)
    summary = report.summary()
    return (summary + "\n" if summary and report.changed else "") + note + "\n"


def configure(
    client: str,
    *,
    write_files: bool = False,
    scope: str | None = None,
    trust: str | None = None,
    server_name: str = DEFAULT_SERVER_NAME,
    tools: Sequence[tuple[str, bool]] | None = None,
    serve_args: Sequence[str] = (),
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    base_command: Sequence[str] | None = None,
    replace_native: bool = False,
    gateway: Gateway | None = None,
) -> str:
    """What ``awf-mcp config CLIENT [...]`` prints: the rendered configuration, plus what
    ``--write`` changed.

    ``serve_args`` is the argv after ``serve`` (paths already absolute); ``tools`` is
    ``(name, read_only)`` for every served tool (from the registry's annotations);
    ``None`` falls back to Read, Glob and Grep. ``base_command`` defaults to
    :func:`server_command`. ``replace_native`` also switches off the client's own file
    and shell tools (printed, or written with ``write_files``). ``gateway``: the entry names
    that remote awf-mcp instead of starting one (``serve_args`` must then be empty).
    """
    cwd, home, env = locate(cwd, home, env)
    command: list[str] | Gateway
    if gateway is not None:
        if serve_args:
            raise UserError(
                f"{shlex.join(serve_args)}: these options are for a server the client starts; "
                "the gateway at --url has its own"
            )
        command = gateway
    else:
        base = list(base_command) if base_command is not None else server_command()
        command = [*base, "serve", *serve_args]
    common: dict[str, Any] = {
        "command": command,
        "read_only_tools": read_only_names(tools),
        "trust": trust,
        "scope": scope,
        "server_name": server_name,
        "cwd": cwd,
        "home": home,
        "env": env,
    }
    text = render(client, replace_native=replace_native, **common)
    if not write_files:
        return text
    request = _Request.make(client, common["command"], common["read_only_tools"], trust, scope, server_name)
    edits = _edits(request, target_files(client, request.scope, cwd=cwd, home=home, env=env), cwd)
    record: dict[str, Any] = {}
    native_path: Path | None = None
    if replace_native:
        # One apply for every file: nothing is written when any of them cannot be parsed.
        native_path = _native_file(client, request.scope, cwd=cwd, home=home, env=env)
        native_edit, record = nativetools.plan(
            request.profile, native_path, project=project_of(request.scope, cwd)
        )
        edits.append(native_edit)
    report = apply_edits(edits)
    if native_path is not None:
        nativetools.remember(nativetools.ledger_path(home, env), native_path, record)
    return text + "\n" + report.summary() + "\n"
