"""Doctor's ``clients`` check: every client's awf entry, started as the client starts it.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, WARNING, Finding, counted

if TYPE_CHECKING:
    from awf_mcp.clients.clientconfig import ServerEntry, ServerFile


def _file_subject(file: ServerFile) -> str:
    from awf_mcp.clients.clientconfig import PROFILES

    return f"{PROFILES[file.client].title} ({' and '.join(file.scopes)} scope)"


def _file_data(file: ServerFile) -> dict[str, Any]:
    return {"client": file.client, "scopes": list(file.scopes), "path": str(file.path)}


def _unreadable(file: ServerFile) -> Finding:
    """The finding for a client file that could not be read (``file.problem``)."""
    detail = f"it {file.problem}, so its MCP servers were not checked"
    fix = "fix the file (the client may not read it either)"
    return Finding("clients", WARNING, f"{_file_subject(file)}: {file.path}", detail, fix, _file_data(file))


@dataclass
class _Entry:
    """One awf entry found in one client file."""

    file: ServerFile
    server: ServerEntry

    def finding(self, status: str, detail: str, fix: str = "", **data: Any) -> Finding:
        subject = f"{_file_subject(self.file)}: '{self.server.name}' in {self.file.path}"
        return Finding(
            "clients",
            status,
            subject,
            detail,
            fix,
            {**_file_data(self.file), "server": self.server.name, **data},
        )

    def rewrite(self) -> str:
        """The command that writes this entry again, for the awf-mcp that runs doctor."""
        scope = " --scope user" if "project" not in self.file.scopes else ""
        argv = self.server.argv or []
        kept = argv[argv.index("serve") + 1 :] if "serve" in argv else []
        options = f" {shlex.join(kept)}" if kept else ""
        return f"awf-mcp config {self.file.client} --write{scope}{options}"


def _resolve_command(command: str, ctx: Context, env: Mapping[str, str]) -> str | None:
    expanded = os.path.expanduser(command)
    if os.sep in expanded or (os.altsep and os.altsep in expanded):
        candidate = ctx.cwd / expanded
        return str(candidate) if os.access(candidate, os.X_OK) and candidate.is_file() else None
    return shutil.which(expanded, path=env.get("PATH", ctx.env.get("PATH")))


def _unstartable(found: _Entry, ctx: Context) -> Finding | None:
    """Why the entry is not started (disabled, HTTP, no command, a command that is gone or that a
    project file names), or None."""
    server = found.server
    argv = server.argv
    if server.disabled:
        detail = "the entry is disabled, so the client does not start awf-mcp"
        return found.finding(WARNING, detail, f"enable it in {found.file.path}, or: {found.rewrite()}")
    if argv is None and server.url:
        return found.finding(
            INFO, f"connects to {server.url}; doctor starts stdio entries only", url=server.url
        )
    if argv is None:
        return found.finding(ERROR, "the entry has no command to run", f"rewrite it: {found.rewrite()}")
    resolved = _resolve_command(argv[0], ctx, {**ctx.env, **server.env})
    if resolved is None:
        detail = f"its command {argv[0]} does not exist or is not executable"
        fix = f"point it at this awf-mcp: {found.rewrite()}"
        return found.finding(ERROR, detail, fix, command=argv, env=server.env_keys)
    if "project" not in found.file.scopes or _approved(found.file.path):
        return None
    fix = (
        f"if you trust this project: awf-mcp trust {shlex.quote(str(found.file.path))}; or: {found.rewrite()}"
    )
    if not _installed_awf_mcp(argv, resolved, ctx.cwd):
        detail = (
            "not started: a project's file may come with a cloned repository, so doctor starts a project "
            "entry only when its command is an awf-mcp installed outside the project"
        )
        return found.finding(WARNING, detail, fix, command=argv, env=server.env_keys)
    if server.env:
        detail = (
            f"not started: it sets env ({', '.join(server.env_keys)}), which can make any program run the "
            "project's code (PYTHONPATH, LD_PRELOAD, plugin directories), and the project's file is not "
            "approved"
        )
        return found.finding(WARNING, detail, fix, command=argv, env=server.env_keys)
    return None


def _approved(path: Path) -> bool:
    """True when the user approved PATH's current content (``awf-mcp trust PATH``)."""
    from awf_mcp.core import trust
    from awf_mcp.errors import AwfError

    try:
        raw = trust.read_bounded(path)
    except AwfError:
        return False
    return trust.verdict(path, raw, named=False, cwd=path.parent).state == "approved"


def _installed_awf_mcp(argv: Sequence[str], resolved: str, project: Path) -> bool:
    """True when ARGV runs awf-mcp (``awf-mcp``, or ``python -m awf_mcp``) from outside PROJECT.

    An agent asks before it starts a project's servers; doctor must not start one
    either (a file in a cloned repository may name any command), unless the command
    is known: the awf-mcp executable, or a Python running ``-m awf_mcp`` that cannot
    import it from the project itself (``-m`` puts the working directory first).
    """
    if Path(resolved).absolute().is_relative_to(project.absolute()):
        return False
    if Path(argv[0]).name.startswith("awf-mcp"):
        return True
    if list(argv[1:4]) == ["-P", "-m", "awf_mcp"]:
        return True  # -P: the working directory is not on sys.path
    return list(argv[1:3]) == ["-m", "awf_mcp"] and not (project / "awf_mcp").exists()


async def probe_commands(
    commands: Sequence[tuple[Sequence[str], Mapping[str, str]]], cwd: Path, timeout: float
) -> list[tuple[list[str] | None, str]]:
    """Start each ``(argv, env)`` as an MCP stdio server, concurrently, and ask for its tools.

    Each result is ``(tool names, "")`` or ``(None, why it failed)``. The servers are
    started and spoken to through the SDK client adapter, exactly as ``serve`` starts an
    upstream server (the user's environment plus ``env``; a value of ``env`` is masked in
    the reason), and stopped again.
    """
    from awf_mcp.cli import runtime
    from awf_mcp.core.servers import ServerSpec
    from awf_mcp.core.upstream import start_all
    from awf_mcp.wire.client import connect

    specs = [
        ServerSpec(
            name=f"probe{index}",
            command=argv[0],
            args=tuple(argv[1:]),
            env=dict(env),
            startup_timeout_seconds=timeout,
            secrets=frozenset(value for value in env.values() if len(value) >= 3),
        )
        for index, (argv, env) in enumerate(commands)
    ]
    records = await start_all(specs, connect, roots=[str(cwd)], on_failure=None)
    try:
        return [
            ([name.removeprefix(f"{spec.name}_") for name in record.tool_names], "")
            if record.ok
            else (None, record.status.removeprefix("failed: "))
            for spec, record in zip(specs, records, strict=True)
        ]
    finally:
        await runtime.close_providers([entry.provider for r in records for entry in r.providers])


async def check_clients(ctx: Context) -> list[Finding]:
    """Every client's awf entry: there, its command exists, it starts and answers ``tools/list``."""
    from awf_mcp.clients import clientconfig

    findings: list[Finding] = []
    startable: list[_Entry] = []
    files: dict[str, list[ServerFile]] = {}
    for file in clientconfig.server_files(cwd=ctx.cwd, home=ctx.home, env=ctx.env):
        files.setdefault(file.client, []).append(file)
    for client, client_files in files.items():
        profile = clientconfig.PROFILES[client]
        entries = [_Entry(file, server) for file in client_files for server in file.awf_servers]
        findings += [_unreadable(file) for file in client_files if file.problem]
        if not entries:
            looked = [str(file.path) for file in client_files]
            detail = f"no awf entry (looked in {', '.join(looked)})"
            fix = f"to use awf-mcp from {profile.title}: awf-mcp config {client} --write"
            findings.append(
                Finding("clients", INFO, profile.title, detail, fix, {"client": client, "files": looked})
            )
        for entry in entries:
            problem = _unstartable(entry, ctx)
            if problem is None:
                startable.append(entry)
            else:
                findings.append(problem)
    commands = [(entry.server.argv or [], entry.server.env) for entry in startable]
    results = await probe_commands(commands, ctx.cwd, ctx.timeout) if commands else []
    for entry, (argv, _), (tools, reason) in zip(startable, commands, results, strict=True):
        data: dict[str, Any] = {"command": argv, "env": entry.server.env_keys, "tools": tools or []}
        if tools is not None:
            findings.append(
                entry.finding(OK, f"starts and answers tools/list with {counted(len(tools), 'tool')}", **data)
            )
        else:
            fix = f"run `{shlex.join(argv)}` to see the whole error; or rewrite it: {entry.rewrite()}"
            findings.append(entry.finding(ERROR, f"it does not answer tools/list: {reason}", fix, **data))
    if not any(f.data.get("server") for f in findings):
        fix = f"awf-mcp config CLIENT --write, CLIENT one of {', '.join(files)}"
        findings.append(
            Finding("clients", WARNING, "every client", "no client is configured to start awf-mcp", fix)
        )
    return findings
