"""``awf-mcp doctor``: check everything an agent needs of awf-mcp, and say how to fix what is wrong.

Contract
--------
:func:`diagnose` runs every check in :data:`CHECKS` against one :class:`Context` (the
working directory, home, environment, settings and option values) and returns a
:class:`Report`: one :class:`Finding` per thing checked, in the order of :data:`CHECKS`.
A check is an ``async`` function ``check(ctx) -> list[Finding]``; adding a check is
adding one function to :data:`CHECKS`. The checks run concurrently (starting servers
is what takes time); what several of them need (the loaded plugins, the started
upstream servers, the merged registry) is computed once by :meth:`Context.loaded`.

The checks:

``configuration``
    the settings load (``--config``, ``./awf-mcp.toml``, ``--root`` ...) exactly as
    ``awf-mcp serve`` loads them; when they do not, the checks that need them are skipped.
``clients``
    every client profile in :data:`awf_mcp.ops.clientconfig.PROFILES` that has files,
    every scope, read by :func:`awf_mcp.ops.clientconfig.server_files`: the awf entry
    (named ``awf``, or any entry whose command runs ``awf-mcp ... serve``), whether it
    is disabled, whether its command exists, and whether it starts and answers
    ``tools/list`` within ``--timeout`` seconds, started as the client starts it (its
    command, arguments and ``env``, in the working directory) through the SDK client
    (:mod:`awf_mcp.wire.client`). stdio entries only; an HTTP entry is noted. An entry
    in a project-scope file (which may have come with a cloned repository) is started
    only when its command is an awf-mcp installed outside the project; any other is
    reported, not run. (Like ``serve`` and ``servers list``, doctor trusts the
    configuration it loads: the upstream servers of ``./awf-mcp.toml`` are started.)
``plugins``
    every plugin: loaded (with its tools), failed (with the reason), or disabled.
``servers``
    every upstream MCP server in the configuration, started as ``serve`` starts it:
    running (with its tools), failed (with the reason), or disabled; and a warning for
    each of its tools held back (:mod:`awf_mcp.core.pins`: changed since approved, or new)
    naming the ``awf-mcp servers approve NAME`` that approves it. An ``auth = "oauth"``
    server also shows its sign-in: signed in (the token's expiry), needs sign-in (an error
    whose fix is ``awf-mcp servers login NAME``) or refused.
``tools``
    the plugins' and servers' tools merge into one registry (a name collision stops
    ``serve``), and names too long for some clients.
``roots``
    every root exists, is a directory, and can be listed.
``build``
    what this awf-mcp is (:mod:`awf_mcp.ops.buildinfo`): version, commit, the Python and
    C library it runs on, its ``rg`` and the platform it was built for.
``search``
    the ``rg`` Grep and Glob run (:func:`awf_mcp.builtins.ripgrep.ripgrep_binary`):
    where it comes from and its version, or the pure-Python engine.
``plugin-directories``
    the plugin directories (:func:`awf_mcp.ops.plugindirs.plugin_dirs`): what the
    single executable loads plugins from and ``plugins install`` writes to, and the
    Python ``plugins install`` runs pip with.

Statuses: ``ok``; ``info`` (nothing to do); ``warning`` (works, but not as well as it
could); ``error`` (something is broken). The command exits 1 when any finding is an
error, 0 otherwise. ``--json`` prints :meth:`Report.as_data` (keys in docs/doctor.md):
``{"version", "ok", "counts": {status: n}, "findings": [{"check", "status", "subject",
"detail", "fix", "data"}]}``. Nothing secret is shown: a client entry's ``env`` by key
only, an upstream server as :meth:`~awf_mcp.core.servers.ServerSpec.public` shows it.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from awf_mcp import __version__
from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions

if TYPE_CHECKING:
    from awf_mcp.core.config import Settings
    from awf_mcp.core.plugins import PluginRecord
    from awf_mcp.core.registry import Registry
    from awf_mcp.core.servers import ServerSpec
    from awf_mcp.ops.clientconfig import ServerEntry, ServerFile

OK, INFO, WARNING, ERROR = "ok", "info", "warning", "error"
STATUSES = (OK, INFO, WARNING, ERROR)
DEFAULT_TIMEOUT_SECONDS = 10.0
"""How long a client's awf entry may take to start and answer ``tools/list``."""
VERSION_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Finding:
    """One thing checked: its status, what it is, what was found, and what to do about it."""

    check: str
    status: str
    subject: str
    detail: str
    fix: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_data(self) -> dict[str, Any]:
        """The finding as JSON-ready data (the keys of docs/doctor.md)."""
        return {
            "check": self.check,
            "status": self.status,
            "subject": self.subject,
            "detail": self.detail,
            "fix": self.fix,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class Report:
    """Every finding, in check order."""

    findings: list[Finding]

    @property
    def broken(self) -> bool:
        """True when any finding is an error."""
        return any(finding.status == ERROR for finding in self.findings)

    def counts(self) -> dict[str, int]:
        """How many findings have each status."""
        return {status: sum(f.status == status for f in self.findings) for status in STATUSES}

    def as_data(self) -> dict[str, Any]:
        """The report as JSON-ready data (the keys of docs/doctor.md)."""
        return {
            "version": __version__,
            "ok": not self.broken,
            "counts": self.counts(),
            "findings": [finding.as_data() for finding in self.findings],
        }


@dataclass
class Loaded:
    """What ``serve`` would start with: plugin and server records, and the registry (or why not)."""

    plugins: list[PluginRecord]
    servers: list[PluginRecord]
    registry: Registry | None
    plugin_error: str = ""
    registry_error: str = ""


class Context:
    """What the checks look at; :meth:`loaded` starts plugins and servers once for all checks."""

    def __init__(
        self,
        *,
        cwd: Path,
        home: Path,
        env: Mapping[str, str],
        options: ServeOptions,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        frozen: bool | None = None,
    ) -> None:
        self.cwd = cwd
        self.home = home
        self.env = env
        self.options = options
        self.timeout = timeout
        self.frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
        self.settings: Settings | None = None
        self.settings_error = ""
        self._loaded: Loaded | None = None
        self._providers: list[Any] = []
        self._lock: Any = None

    def load_settings(self) -> None:
        """Load the settings as ``serve`` does; remember the error sentence when they do not load."""
        from awf_mcp.core import config
        from awf_mcp.errors import AwfError

        try:
            self.settings = config.load(self.options, cwd=str(self.cwd))
        except AwfError as exc:
            self.settings_error = str(exc)

    def config_file(self) -> Path | None:
        """The config file the settings come from, if any (found as ``serve`` finds it)."""
        from awf_mcp.core.config import find_config

        found = find_config(self.options, self.cwd)
        return found[0].absolute() if found else None

    async def loaded(self) -> Loaded | None:
        """Plugins loaded, servers started and the registry built, once (None: no settings)."""
        import anyio

        if self.settings is None:
            return None
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._loaded is None:
                self._loaded = await self._load(self.settings)
        return self._loaded

    async def _load(self, settings: Settings) -> Loaded:
        from dataclasses import replace

        from awf_mcp.cli import runtime
        from awf_mcp.core.plugins import load
        from awf_mcp.core.registry import build
        from awf_mcp.errors import AwfError, describe_exception

        # Not strict while looking: every failure is reported, not only the first.
        lenient = replace(settings, strict=False)
        plugins: list[PluginRecord] = []
        plugin_error = ""
        try:
            loaded = load(lenient)
            plugins = loaded.records
            self._providers += loaded.providers
        except AwfError as exc:
            plugin_error = str(exc)
        runtime.announce_servers(lenient)
        servers = await runtime.start_servers(lenient)
        self._providers += [entry.provider for record in servers for entry in record.providers]
        registry = None
        registry_error = ""
        if not plugin_error:
            try:
                registry = build([*plugins, *servers], lenient)
            except Exception as exc:
                registry_error = describe_exception(exc)
        return Loaded(plugins, servers, registry, plugin_error, registry_error)

    async def close(self) -> None:
        """Close every provider the checks started."""
        from awf_mcp.cli import runtime

        providers, self._providers = self._providers, []
        await runtime.close_providers(providers)


Check = Callable[[Context], Awaitable[list[Finding]]]


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


# --------------------------------------------------------------------------- configuration


async def check_configuration(ctx: Context) -> list[Finding]:
    """The settings load as ``serve`` loads them; a project's config file not approved is said."""
    path = ctx.config_file()
    where = str(path) if path else f"defaults (no {ctx.cwd / 'awf-mcp.toml'})"
    if ctx.settings_error:
        return [
            Finding(
                "configuration",
                ERROR,
                where,
                f"the settings do not load: {ctx.settings_error}",
                "fix the file or option it names; plugins, servers, tools and roots were not checked",
                {"path": str(path) if path else None},
            )
        ]
    ignored = ctx.settings.ignored_config if ctx.settings else None
    if ignored is not None:
        detail = f"not used: {ignored.verdict.reason}; it would: {'; '.join(ignored.would) or 'nothing'}"
        data = {"path": str(ignored.path), "approval": ignored.verdict.state, "would": list(ignored.would)}
        return [
            Finding("configuration", WARNING, where, detail, f"to review and approve it: {ignored.fix}", data)
        ]
    return [
        Finding("configuration", OK, where, "the settings load", data={"path": str(path) if path else None})
    ]


# --------------------------------------------------------------------------- clients


def _file_subject(file: ServerFile) -> str:
    from awf_mcp.ops.clientconfig import PROFILES

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
    from awf_mcp.ops import clientconfig

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
                entry.finding(OK, f"starts and answers tools/list with {_count(len(tools), 'tool')}", **data)
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


# --------------------------------------------------------------------------- plugins, servers, tools


async def check_plugins(ctx: Context) -> list[Finding]:
    """Every plugin: loaded with its tools, failed with the reason, or disabled."""
    loaded = await ctx.loaded()
    if loaded is None:
        return []
    if loaded.plugin_error:
        return [Finding("plugins", ERROR, "plugins", loaded.plugin_error, "do what the sentence says")]
    findings = []
    for record in loaded.plugins:
        data = {
            "name": record.name,
            "distribution": record.distribution,
            "version": record.version,
            "location": record.location,
            "status": record.status,
            "tools": record.tool_names,
        }
        status, fix = OK, ""
        if record.ok:
            detail = f"loaded, {_count(len(record.tool_names), 'tool')}"
        elif record.status == "disabled" and record.name == "builtin":
            status, detail = INFO, "the built-in tools are off (--no-builtins, or intercept_builtins: false)"
        elif record.status == "disabled":
            status, detail = (
                INFO,
                "not loaded: AWF_MCP_PLUGINS, AWF_MCP_NO_PLUGINS or plugin_tools leaves it out",
            )
        else:
            status = ERROR
            detail = f"failed to load, its tools are not served: {record.status.removeprefix('failed: ')}"
            remove = f"pip uninstall {record.distribution}" if record.distribution else "uninstall it"
            fix = f"fix or reinstall it, or remove it ({remove}, or awf-mcp plugins uninstall {record.name})"
        findings.append(Finding("plugins", status, record.describe(), detail, fix, data))
    return findings


async def check_servers(ctx: Context) -> list[Finding]:
    """Every upstream server: running with its tools (and prompts, resources, templates), failed with
    the reason, or disabled."""
    from awf_mcp.cli.servers import offered, offers_of

    loaded = await ctx.loaded()
    if loaded is None or ctx.settings is None:
        return []
    specs = {spec.name: spec for spec in ctx.settings.servers}
    findings = []
    from awf_mcp.cli.servers import sign_in_state  # an OAuth server's sign-in, as servers list shows it

    for record in loaded.servers:
        spec = specs[record.name]
        offers = offers_of(record)
        data = {**spec.public(), "status": record.status, "tools": record.tool_names, "offers": offers}
        status, fix = OK, ""
        state, _, reason = record.status.partition(": ")
        signed = sign_in_state(spec, "running" if record.ok else state, reason)
        data.update(signed)
        if record.ok:
            detail = f"starts and lists {_count(len(record.tool_names), 'tool')}"
            if offered(offers):
                detail += f", and {offered(offers)}"
        elif record.status == "disabled":
            status, detail = INFO, "disabled (enabled = false)"
        elif signed["sign_in"] == "needs sign-in":
            status, detail, fix = ERROR, "not served: it needs sign-in", f"sign in once: {signed['fix']}"
        else:
            status, detail = ERROR, f"not served: {record.status.removeprefix('failed: ')}"
            fix = (
                f"fix [servers.{record.name}] in the config file, or set enabled = false (docs/upstreams.md)"
            )
            if signed["sign_in"] == "refused":
                fix = f"do what the sentence says, then sign in again: {signed['fix']}"
        if record.ok and signed["sign_in"] == "signed in":
            detail += f"; signed in (token expires {signed['expires_at'] or 'never'}; refreshed as needed)"
        subject = f"server '{record.name}' ({spec.transport})"
        findings.append(Finding("servers", status, subject, detail, fix, data))
        findings.extend(held_findings(spec))
    return findings


def held_findings(spec: ServerSpec) -> list[Finding]:
    """One warning per item of ``spec`` held back (:mod:`awf_mcp.core.pins`): what changed, how to approve."""
    from awf_mcp.core import pins

    command = pins.approve_command(spec.name)
    return [
        Finding(
            "servers",
            WARNING,
            f"server '{spec.name}': {hold.kind} '{hold.name}'",
            f"held, not served: {hold.summary}",
            f"review and approve it: {command}",
            {
                "server": spec.name,
                "item": hold.kind,
                "name": hold.name,
                "changes": dict(hold.changes),
                "approve": command,
            },
        )
        for hold in pins.held(spec)
    ]


async def check_tools(ctx: Context) -> list[Finding]:
    """The tools merge into one registry, as ``serve`` needs; names some clients refuse."""
    from awf_mcp.core.registry import long_names
    from awf_mcp.ports import MAX_TOOL_NAME_LENGTH, client_tool_name

    loaded = await ctx.loaded()
    subject = "the served tools"
    if loaded is None or loaded.plugin_error:
        return []
    if loaded.registry is None:
        detail = f"awf-mcp serve would not start: {loaded.registry_error}"
        return [Finding("tools", ERROR, subject, detail, "do what the sentence says")]
    definitions = loaded.registry.definitions()
    names = [definition.name for definition in definitions]
    findings = [
        Finding(
            "tools", OK, subject, f"{_count(len(names), 'tool')} merge without a clash", "", {"tools": names}
        )
    ]
    if not names:
        findings = [
            Finding("tools", WARNING, subject, "no tool would be served", "check --only and --exclude")
        ]
    for name in long_names(definitions):
        served = client_tool_name("awf", name)
        detail = f"{served} is over {MAX_TOOL_NAME_LENGTH} characters; some clients refuse it"
        fix = "rename it under [rename] in awf-mcp.toml"
        findings.append(Finding("tools", WARNING, f"tool '{name}'", detail, fix, {"tool": name}))
    return findings


# --------------------------------------------------------------------------- roots


def root_findings(roots: Sequence[str]) -> list[Finding]:
    """Each root: it exists, is a directory, and can be listed and entered."""
    findings = []
    for root in roots:
        path = Path(root)
        status, detail, fix = ERROR, "", "pass --root DIR, or fix roots in the config"
        if not path.exists():
            detail = "the root does not exist"
        elif not path.is_dir():
            detail = "the root is not a directory"
        elif not os.access(path, os.R_OK | os.X_OK):
            detail = "the root cannot be listed (no read or search permission)"
        else:
            status, detail, fix = OK, "a readable directory", ""
        findings.append(Finding("roots", status, root, detail, fix, {"root": root}))
    return findings


async def check_roots(ctx: Context) -> list[Finding]:
    """The roots the built-in tools are confined to."""
    return root_findings(ctx.settings.roots) if ctx.settings is not None else []


# --------------------------------------------------------------------------- search


def _command_version(argv: Sequence[str]) -> tuple[str | None, str]:
    """The first line ``ARGV`` prints (its version), or None and why it did not run."""
    from awf_mcp.ops.buildinfo import command_version

    return command_version(argv, VERSION_TIMEOUT_SECONDS)


def search_findings(binary: str | None, forced_python: bool) -> list[Finding]:
    """What Grep and Glob run on: ``binary`` (the ``rg`` found, or None)."""
    from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE

    subject = "Grep and Glob search engine"
    if binary is None:
        data = {"engine": "python", "rg": None}
        if forced_python:
            return [
                Finding(
                    "search", INFO, subject, f"the pure-Python engine ({ENGINE_VARIABLE}=python)", "", data
                )
            ]
        detail = "no rg found: the pure-Python engine runs (same results, slower)"
        fix = "pip install 'ripgrep<15' beside awf-mcp, or install rg on PATH"
        return [Finding("search", WARNING, subject, detail, fix, data)]
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None and Path(binary).is_relative_to(bundle):
        origin = "bundled with the single executable"
    elif Path(binary).is_relative_to(sys.prefix):
        origin = "from the ripgrep wheel beside awf-mcp"
    else:
        origin = "found on PATH"
    version, reason = _command_version([binary, "--version"])
    data = {"engine": "ripgrep", "rg": binary, "origin": origin, "version": version}
    if version is None:
        detail = f"{binary} ({origin}) does not run: {reason}"
        fix = f"reinstall ripgrep, or set {ENGINE_VARIABLE}=python in the entry's env"
        return [Finding("search", ERROR, subject, detail, fix, data)]
    return [Finding("search", OK, subject, f"{version}: {binary} ({origin})", "", data)]


async def check_build(ctx: Context) -> list[Finding]:
    """What this awf-mcp is: version, commit, Python, C library, rg, the platform it was built for."""
    from awf_mcp.builtins.ripgrep import ripgrep_binary
    from awf_mcp.ops.buildinfo import build_identity

    identity = build_identity(ripgrep_binary())
    detail = (
        f"awf-mcp {__version__} (commit {identity['commit']}), {identity['python']} on "
        f"{identity['libc']}, {identity['rg']}, built for {identity['built for']}"
    )
    return [Finding("build", INFO, "this awf-mcp", detail, "", {"version": __version__, **identity})]


async def check_search(ctx: Context) -> list[Finding]:
    """The ``rg`` Grep and Glob run, or the pure-Python engine."""
    from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE, ripgrep_binary

    forced = ctx.env.get(ENGINE_VARIABLE, "").strip().lower() == "python"
    return search_findings(ripgrep_binary(), forced)


# --------------------------------------------------------------------------- plugin directories


def _plugins_in(directory: Path) -> list[str]:
    from importlib import metadata

    names = {
        ep.name
        for distribution in metadata.distributions(path=[str(directory)])
        for ep in distribution.entry_points
        if ep.group == "awf_mcp"
    }
    return sorted(names)


def _plugin_directory(directory: Path, listed: bool, install_target: bool, frozen: bool) -> Finding | None:
    from awf_mcp.ops.plugindirs import ENV_PLUGIN_PATH

    role = f"from {ENV_PLUGIN_PATH}" if listed else "the default plugin directory"
    subject = f"{directory} ({role}{', where plugins install writes' if install_target else ''})"
    data: dict[str, Any] = {
        "path": str(directory),
        "from_environment": listed,
        "install_target": install_target,
    }
    status, fix = OK, ""
    if directory.exists() and not directory.is_dir():
        status, detail, fix = (
            ERROR,
            "it is not a directory",
            f"move the file away, or change {ENV_PLUGIN_PATH}",
        )
    elif not directory.exists() and listed:
        status, detail, fix = WARNING, "it does not exist", f"create it, or remove it from {ENV_PLUGIN_PATH}"
    elif not directory.exists() and frozen:
        status, detail = INFO, "no plugins installed (it does not exist yet)"
        fix = "awf-mcp plugins install NAME creates it"
    elif not directory.exists():
        return None
    else:
        data["plugins"] = plugins = _plugins_in(directory)
        detail = _count(len(plugins), "plugin") + (f": {', '.join(plugins)}" if plugins else "")
        if install_target and not os.access(directory, os.W_OK | os.X_OK):
            status, detail = WARNING, f"{detail}; plugins install cannot write to it"
            fix = f"make it writable, or install with --target DIR and add DIR to {ENV_PLUGIN_PATH}"
    return Finding("plugin-directories", status, subject, detail, fix, data)


def plugin_directory_findings(dirs: Sequence[Path], explicit: Sequence[Path], frozen: bool) -> list[Finding]:
    """Each plugin directory (``explicit``: those from ``AWF_MCP_PLUGIN_PATH``); ``dirs[0]`` is
    where ``plugins install`` writes. Outside the single executable, plugins are pip-installed."""
    findings = []
    if not frozen:
        detail = (
            f"awf-mcp runs on {sys.executable}: plugins are pip-installed into its environment "
            f"({sys.prefix}); the plugin directories are searched too"
        )
        data = {"python": sys.executable, "prefix": sys.prefix}
        findings.append(Finding("plugin-directories", INFO, "plugin installation", detail, "", data))
    for index, directory in enumerate(dirs):
        found = _plugin_directory(directory, directory in explicit, index == 0, frozen)
        if found is not None:
            findings.append(found)
    return findings


def installer_python_finding() -> Finding:
    """The Python ``plugins install`` runs pip with (the single executable has none of its own)."""
    from awf_mcp.errors import AwfError
    from awf_mcp.ops.piprunner import ENV_PYTHON, find_python

    subject = "Python for plugins install"
    try:
        python = find_python()
    except AwfError as exc:
        fix = f"install Python 3 with pip, or set {ENV_PYTHON}"
        return Finding("plugin-directories", WARNING, subject, str(exc), fix)
    return Finding("plugin-directories", OK, subject, f"{python} runs pip", "", {"python": python})


async def check_plugin_directories(ctx: Context) -> list[Finding]:
    """The plugin directories, and for the single executable the Python that installs into them."""
    import anyio

    from awf_mcp.ops.plugindirs import ENV_PLUGIN_PATH, plugin_dirs

    explicit = [Path(p) for p in ctx.env.get(ENV_PLUGIN_PATH, "").split(os.pathsep) if p]
    findings = plugin_directory_findings(plugin_dirs(), explicit, ctx.frozen)
    if ctx.frozen:
        findings.append(await anyio.to_thread.run_sync(installer_python_finding))
    return findings


CHECKS: tuple[Check, ...] = (
    check_build,
    check_configuration,
    check_clients,
    check_plugins,
    check_servers,
    check_tools,
    check_roots,
    check_search,
    check_plugin_directories,
)
"""Every check, in report order."""


async def run_checks(ctx: Context, checks: Sequence[Check] = CHECKS) -> Report:
    """Run ``checks`` concurrently; their findings in check order."""
    import anyio

    from awf_mcp.errors import describe_exception

    results: list[list[Finding]] = [[] for _ in checks]

    async def run(index: int, check: Check) -> None:
        name = getattr(check, "__name__", "check").removeprefix("check_").replace("_", "-")
        try:
            results[index] = await check(ctx)
        except Exception as exc:  # one check's bug must not hide the others' findings
            results[index] = [
                Finding(name, ERROR, name, f"the check itself failed: {describe_exception(exc)}", "report it")
            ]

    try:
        async with anyio.create_task_group() as group:
            for index, check in enumerate(checks):
                group.start_soon(run, index, check)
    finally:
        await ctx.close()
    return Report([finding for found in results for finding in found])


def diagnose(
    options: ServeOptions,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Load the settings from ``options`` as ``serve`` does, and run every check."""
    import anyio

    ctx = Context(
        cwd=Path.cwd() if cwd is None else cwd,
        home=Path.home() if home is None else home,
        env=os.environ if env is None else env,
        options=options,
        timeout=timeout,
    )
    ctx.load_settings()
    return anyio.run(run_checks, ctx)


# --------------------------------------------------------------------------- output

_BADGES = {OK: "[green]ok[/]   ", INFO: "[blue]info[/] ", WARNING: "[yellow]warn[/] ", ERROR: "[red]error[/]"}


def print_report(report: Report) -> None:
    """One line per finding (status, check, what was found, the fix), then the counts."""
    from rich.console import Console

    from awf_mcp.cli.terminal import shown

    console = Console(highlight=False)
    for finding in report.findings:
        line = f"{_BADGES[finding.status]} {finding.check}: {shown(finding.subject)}: {shown(finding.detail)}"
        if finding.fix:
            line += f" [bold]fix:[/] {shown(finding.fix)}"
        console.print(line)
    counts = report.counts()
    problems = f"{_count(counts[WARNING], WARNING)}, {_count(counts[ERROR], ERROR)}"
    summary = f"{counts[OK]} ok, {counts[INFO]} info, {problems}"
    verdict = "[red]something is broken[/]" if report.broken else "[green]nothing is broken[/]"
    console.print(f"\n{summary}: {verdict}")


@with_options("roots", "no_builtins", "only", "exclude", "config", "strict")
def doctor_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as stable JSON.")] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", help="Seconds each client's awf entry may take to start and list its tools."
        ),
    ] = DEFAULT_TIMEOUT_SECONDS,
    *,
    options: ServeOptions,
) -> None:
    """Check the clients' awf entries, plugins, upstream servers, roots and search engine.

    Each finding says how to fix it; exits 1 when something is broken.
    """
    from awf_mcp.cli.runtime import say
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.errors import UserError

    if timeout <= 0:
        raise UserError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    configure_logging("CRITICAL")
    say("checking the clients' awf entries, the plugins, the upstream servers, the roots ...")
    report = diagnose(options, timeout=timeout)
    if json_output:
        print(json.dumps(report.as_data(), indent=2, sort_keys=True))
    else:
        print_report(report)
    if report.broken:
        raise typer.Exit(1)
