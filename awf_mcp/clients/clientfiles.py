"""Where each client's files are, and what they hold: the one reader of the agents' files as they are.

Contract
--------
* :func:`target_files`: the files ``awf-mcp config CLIENT --write`` edits for a scope, per the
  client's :class:`~awf_mcp.clients.clientprofiles.ClientProfile`; :func:`project_of` says
  whether they are a project's (a project's file that is a symbolic link is refused,
  :func:`awf_mcp.clients.editors.writable_target`); :func:`locate` fills in the working
  directory, the home directory and the environment a caller leaves out.
* :func:`list_clients`: ``awf-mcp config --list``, every client with the file it would write.
* :func:`read_servers` lists every server entry in a client's file
  (:class:`~awf_mcp.clients.clientprofiles.ServerEntry`: name, argv or URL, env, disabled,
  whether it is awf's), :func:`server_files` does so for every client's files, and
  :func:`read_entry` / :func:`installed_entries` say whether the awf entry is there and
  which command it runs: for ``awf-mcp doctor`` and ``servers import``. None of them raises
  for a missing, unreadable or malformed file: that is said in the answer.

Reading only: nothing here writes a file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from awf_mcp.clients.clientprofiles import PROFILES, ServerEntry, profiles
from awf_mcp.clients.editors import UnreadableFile, lookup, read
from awf_mcp.clients.jsonedit import parse_json
from awf_mcp.clients.tomledit import parse_toml

DEFAULT_SERVER_NAME = "awf"


def locate(
    cwd: Path | None, home: Path | None, env: Mapping[str, str] | None
) -> tuple[Path, Path, Mapping[str, str]]:
    """CWD, HOME and ENV; each that is None: the current directory, the home directory, ``os.environ``."""
    return (
        Path.cwd() if cwd is None else cwd,
        Path.home() if home is None else home,
        os.environ if env is None else env,
    )


def resolve_scope(client: str, scope: str | None) -> str:
    """SCOPE, or CLIENT's default scope (``project`` where it has one) when None."""
    return PROFILES[client].default_scope if scope is None else scope


def target_files(
    client: str,
    scope: str | None = None,
    *,
    cwd: Path,
    home: Path,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> dict[str, Path]:
    """The files ``write`` edits for CLIENT/SCOPE: ``{"servers": path, "trust": path}``."""
    env = os.environ if env is None else env
    files = PROFILES[client].scope_files(resolve_scope(client, scope), platform)
    servers = files.servers.resolve(cwd=cwd, home=home, env=env)
    trust = files.trust.resolve(cwd=cwd, home=home, env=env) if files.trust else servers
    return {"servers": servers, "trust": trust}


def project_of(scope: str, cwd: Path) -> Path | None:
    """The project directory whose files SCOPE edits (CWD for ``project``), or None for the user's own."""
    return cwd if scope == "project" else None


def list_clients(
    *,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> str:
    """``awf-mcp config --list``: every client, each scope, and the file ``--write`` would edit."""
    cwd, home, env = locate(cwd, home, env)
    rows: list[tuple[str, str, str, str]] = []
    for profile in profiles():
        scopes = profile.scopes(platform)
        if not scopes:
            rows.append((profile.name, profile.title, "-", "(prints a snippet only)"))
        for scope in scopes:
            files = target_files(profile.name, scope, cwd=cwd, home=home, env=env, platform=platform)
            where = str(files["servers"])
            if files["trust"] != files["servers"]:
                where += f" (approvals: {files['trust']})"
            rows.append((profile.name, profile.title, scope, where))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join([*(cell.ljust(width) for cell, width in zip(row, widths, strict=False)), row[3]])
        for row in rows
    ]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class ServerFile:
    """One client's server file as read (:func:`read_servers`): its entries, or why it could not be read."""

    client: str
    scopes: tuple[str, ...]
    """The scopes whose server file this is (two when both resolve to this one file)."""
    path: Path
    exists: bool
    servers: tuple[ServerEntry, ...] = ()
    """Every server entry, in file order."""
    problem: str = ""
    """Why the file could not be read, worded to follow its path (``is not valid JSON (...)``);
    empty when it could."""

    def server(self, name: str) -> ServerEntry | None:
        """The entry named NAME, or None."""
        return next((entry for entry in self.servers if entry.name == name), None)

    @property
    def awf_servers(self) -> list[ServerEntry]:
        """The entries that are awf-mcp's (see :attr:`ServerEntry.is_awf`)."""
        return [entry for entry in self.servers if entry.is_awf]


def read_servers(
    client: str,
    path: Path,
    *,
    scopes: Sequence[str] = (),
    awf_name: str = DEFAULT_SERVER_NAME,
    to_rewrite: bool = False,
) -> ServerFile:
    """Every server entry in PATH, CLIENT's server file (for SCOPES), per the client's profile.

    The table of servers is at the profile's ``servers_key``, in its ``format``. JSON is
    read as leniently as any client reads it: with ``//`` and ``/* */`` comments and
    trailing commas; TO_REWRITE reads it as :func:`write` would before rewriting it
    (comments only in the ``jsonc`` format), for a caller that goes on to rewrite it.

    An entry is awf's when it is named AWF_NAME or its command runs ``awf-mcp ... serve``;
    a value in the table that is not a table itself is no server and is left out. Never
    raises for a missing, unreadable or malformed file: that is said in ``problem``.
    """
    profile = PROFILES[client]
    scopes = tuple(scopes)
    try:
        text = read(path)
        if text is None:
            return ServerFile(client, scopes, path, exists=False)
        data: Mapping[str, Any] = {}
        if text.strip():
            data = (
                parse_toml(text, path)
                if profile.format == "toml"
                else parse_json(text, path, comments=not to_rewrite or profile.format == "jsonc")
            )
    except UnreadableFile as exc:
        return ServerFile(client, scopes, path, exists=path.exists(), problem=exc.reason)
    table = lookup(data, profile.servers_key)
    if table is not None and not isinstance(table, Mapping):
        problem = f"has a '{'.'.join(profile.servers_key)}' that is not a table of servers"
        return ServerFile(client, scopes, path, exists=True, problem=problem)
    servers = tuple(
        ServerEntry.from_table(str(name), entry, awf_name=awf_name)
        for name, entry in (table or {}).items()
        if isinstance(entry, Mapping)
    )
    return ServerFile(client, scopes, path, exists=True, servers=servers)


def server_files(
    *,
    awf_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> list[ServerFile]:
    """:func:`read_servers` for every client's server files on PLATFORM, each file once
    (with every scope it serves), in :func:`profiles` order."""
    cwd, home, env = locate(cwd, home, env)
    found: list[ServerFile] = []
    for profile in profiles():
        scopes_of: dict[Path, list[str]] = {}
        for scope in profile.scopes(platform):
            path = target_files(profile.name, scope, cwd=cwd, home=home, env=env, platform=platform)[
                "servers"
            ]
            scopes_of.setdefault(path, []).append(scope)
        found += [
            read_servers(profile.name, path, scopes=scopes, awf_name=awf_name)
            for path, scopes in scopes_of.items()
        ]
    return found


@dataclass(frozen=True)
class InstalledEntry:
    """What one client's file holds for the awf server (see :func:`read_entry`)."""

    client: str
    scope: str
    path: Path
    exists: bool
    """The file exists."""
    command: list[str] | None
    """The argv the entry runs; None when there is no entry (or it runs no local command)."""
    problem: str = ""
    """Why the file or the entry could not be read; empty when it could."""
    name: str = ""
    """The entry's name; empty when there is no entry."""

    @property
    def present(self) -> bool:
        """The awf entry is in the file."""
        return self.command is not None


def read_entry(
    client: str,
    scope: str | None = None,
    *,
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> InstalledEntry:
    """Read CLIENT's SCOPE server file: is the awf entry there, and what does it run?

    The awf entry is the one named SERVER_NAME, or else the first whose command runs
    ``awf-mcp ... serve`` (:func:`read_servers`). Never raises for a missing, unreadable
    or malformed file: that is said in ``problem``.
    """
    cwd, home, env = locate(cwd, home, env)
    scope = resolve_scope(client, scope)
    path = target_files(client, scope, cwd=cwd, home=home, env=env, platform=platform)["servers"]
    return _installed(read_servers(client, path, scopes=(scope,), awf_name=server_name), scope, server_name)


def _installed(found: ServerFile, scope: str, server_name: str) -> InstalledEntry:
    """What FOUND, the server file of SCOPE, holds for the awf server (see :func:`read_entry`)."""
    client, path = found.client, found.path
    if found.problem:
        return InstalledEntry(client, scope, path, found.exists, None, f"{path} {found.problem}")
    entry = found.server(server_name) or next(iter(found.awf_servers), None)
    if entry is None:
        return InstalledEntry(client, scope, path, found.exists, None)
    if entry.argv is None:
        problem = f"{path}: the '{entry.name}' entry runs no local command (no usable command/args)"
        return InstalledEntry(client, scope, path, True, None, problem, entry.name)
    return InstalledEntry(client, scope, path, True, entry.argv, name=entry.name)


def installed_entries(
    *,
    server_name: str = DEFAULT_SERVER_NAME,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> list[InstalledEntry]:
    """:func:`read_entry` for every client and every scope it has on PLATFORM (each file read once)."""
    files = server_files(awf_name=server_name, cwd=cwd, home=home, env=env, platform=platform)
    return [_installed(found, scope, server_name) for found in files for scope in found.scopes]
