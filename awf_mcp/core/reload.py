"""Live reload: the config file a serving process uses, watched, and a valid change applied live.

Contract
--------
* :func:`watched_files` are the files the settings of a ``serve`` come from: its config file
  (``--config FILE``, else ``./awf-mcp.toml``; removing it, or creating it again, counts), and
  the approvals record of :mod:`awf_mcp.core.trust` (approving a project file with
  ``awf-mcp trust`` counts). A ``serve`` started without a config file watches nothing (and
  its lists are not advertised as changing).
* :class:`ConfigWatch` polls them every :data:`POLL_SECONDS` (each file's ``mtime_ns``, size and
  inode, or its absence) and reports a change once they have stayed the same for
  :data:`DEBOUNCE_SECONDS` (an editor's save in several writes is one change);
  :meth:`ConfigWatch.now` (SIGHUP) reports one at once.
* :class:`Reloader` loads the settings again with the options the process started with
  (:func:`awf_mcp.core.config.load`, quietly) and applies what changed (:func:`compare`):

  - upstream servers added start, removed ones stop (their processes end), changed ones
    restart (all of them when the roots or the ``[sandbox]`` changed: both are fixed when
    a server starts); unchanged ones keep running, untouched;
  - the built-ins and plugins load again when what they are built from changed (roots,
    ``intercept_builtins``, ``[plugins.*]``, ``plugin_tools``, ``strict``);
  - the registry and the catalog merge the new set (:meth:`Registry.reconfigure`,
    :meth:`Catalog.reconfigure`), which tells the clients ``list_changed`` of each kind that
    changed; the invoker takes the new call timeout, output budget, roots and plugin
    policies; the ``[sandbox]`` becomes the process's policy (for what starts from now on);
  - ``[http.auth]`` cannot change live: the old one is kept, with one warning.

  A file that does not load (bad TOML, an unknown key, a tool name claimed twice, a strict
  server that fails ...) changes nothing: the old configuration is served on, and one
  warning says why (once per problem). A project file that is not approved (new, or changed
  since its approval) is not used either: the old, approved configuration is served on, with
  one warning naming ``awf-mcp trust``. Reloads run one at a time.

What it is given
----------------
The reloader acts on the live objects of the runtime: the :class:`~awf_mcp.core.plugins.LoadedPlugins`
(its records are replaced in place, so whoever closes its providers at exit closes the new ones),
the registry, the invoker and the catalog; :data:`StartServers` starts upstream servers (the
runtime's, through the SDK client adapter), and ``on_applied`` is called with the new settings
and plugins after each applied reload (the runtime updates the instructions).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path

import anyio

from awf_mcp.core import config, trust
from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.catalog import Catalog
from awf_mcp.core.config import ServeOptions, Settings
from awf_mcp.core.plugins import LoadedPlugins, PluginRecord
from awf_mcp.core.plugins import load as load_plugins
from awf_mcp.core.policy import policies_from
from awf_mcp.core.registry import Registry
from awf_mcp.core.roots import ClientRoots
from awf_mcp.core.servers import SOURCE_PREFIX, ServerSpec
from awf_mcp.errors import AwfError, describe_exception
from awf_mcp.ports import ToolProvider
from awf_mcp.state import statestore

log = logging.getLogger("awf_mcp.reload")

POLL_SECONDS = 0.25
"""How often the watched files are looked at."""
DEBOUNCE_SECONDS = 0.35
"""How long the files must stay the same after a change before it is acted on."""

PLUGIN_INPUTS = ("roots", "roots_explicit", "builtins", "plugin_settings", "plugin_tools", "strict")
"""The settings the built-ins and plugins are built from: when one changes, they load again."""
SERVER_INPUTS = ("roots", "sandbox")
"""The settings fixed when an upstream server starts: when one changes, every server restarts."""
FIXED = ("http_auth",)
"""The settings that cannot change in a running process."""
NOT_COMPARED = ("servers", "ignored_config")

StartServers = Callable[[Settings, Sequence[ServerSpec]], Awaitable[list[PluginRecord]]]
"""Start these servers of the settings; one record per server (:func:`awf_mcp.core.upstream.start_all`)."""
Applied = Callable[[Settings, LoadedPlugins], None]
CloseProviders = Callable[[list[ToolProvider]], Awaitable[None]]
"""Close these providers, each bounded in time (the runtime's, as at exit)."""


def watched_files(options: ServeOptions, cwd: Path) -> list[Path]:
    """The files whose change reloads a ``serve`` started with ``options`` in ``cwd``: none when it
    started without a config file."""
    found = config.find_config(options, cwd)
    if found is None:
        return []
    return [found[0], statestore.state_dir() / f"{trust.APPROVALS}.json"]


Signature = tuple[tuple[int, int, int] | None, ...]


def signature(paths: Sequence[Path]) -> Signature:
    """Each file's ``(mtime_ns, size, inode)``, ``None`` for one absent."""
    found: list[tuple[int, int, int] | None] = []
    for path in paths:
        try:
            stat = os.stat(path)
        except OSError:
            found.append(None)
        else:
            found.append((stat.st_mtime_ns, stat.st_size, stat.st_ino))
    return tuple(found)


class ConfigWatch:
    """The watched files' changes, debounced; see the module docstring."""

    def __init__(
        self, paths: Sequence[Path], *, poll: float = POLL_SECONDS, debounce: float = DEBOUNCE_SECONDS
    ) -> None:
        self.paths = list(paths)
        self.poll = poll
        self.debounce = debounce
        self._now = anyio.Event()

    def now(self) -> None:
        """Report a change at once (SIGHUP), changed or not."""
        self._now.set()

    async def _wait(self, seconds: float) -> bool:
        """Sleep ``seconds``; True when :meth:`now` was called meanwhile (and reset)."""
        with anyio.move_on_after(seconds):
            await self._now.wait()
        if self._now.is_set():
            self._now = anyio.Event()
            return True
        return False

    async def changes(self) -> AsyncIterator[None]:
        """Yield once per change (or :meth:`now`), for ever."""
        seen = signature(self.paths)
        while True:
            if await self._wait(self.poll):
                seen = signature(self.paths)
                yield
                continue
            current = signature(self.paths)
            if current == seen:
                continue
            stable_since = time.monotonic()
            while time.monotonic() - stable_since < self.debounce:
                if await self._wait(min(self.poll, self.debounce) / 2):
                    break
                again = signature(self.paths)
                if again != current:
                    current, stable_since = again, time.monotonic()
            seen = signature(self.paths)
            yield


@dataclass(frozen=True, slots=True)
class Changes:
    """What differs between two settings; see :func:`compare`."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    plugins: bool = False
    settings: tuple[str, ...] = ()
    """The other settings that changed (the :class:`~awf_mcp.core.config.Settings` field names)."""
    fixed: tuple[str, ...] = ()
    """Settings that changed but cannot change live (:data:`FIXED`)."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.restarted or self.plugins or self.settings)

    def describe(self) -> str:
        """One phrase per kind of change."""
        parts = [
            f"{what} {', '.join(names)}"
            for what, names in (
                ("servers added:", self.added),
                ("removed:", self.removed),
                ("restarted:", self.restarted),
            )
            if names
        ]
        if self.plugins:
            parts.append("the built-ins and plugins loaded again")
        if self.settings:
            parts.append(f"settings changed: {', '.join(self.settings)}")
        return "; ".join(parts) or "nothing changed"


def compare(old: Settings, new: Settings) -> Changes:
    """What changed from ``old`` to ``new``; see the module docstring."""
    before = {spec.name: spec for spec in old.servers}
    after = {spec.name: spec for spec in new.servers}
    every_server = any(getattr(old, name) != getattr(new, name) for name in SERVER_INPUTS)
    changed = tuple(
        name
        for name in (field.name for field in fields(Settings))
        if name not in NOT_COMPARED and getattr(old, name) != getattr(new, name)
    )
    return Changes(
        added=tuple(name for name in after if name not in before),
        removed=tuple(name for name in before if name not in after),
        restarted=tuple(
            name for name in after if name in before and (every_server or before[name] != after[name])
        ),
        plugins=any(getattr(old, name) != getattr(new, name) for name in PLUGIN_INPUTS),
        settings=tuple(name for name in changed if name not in FIXED),
        fixed=tuple(name for name in changed if name in FIXED),
    )


class Reloader:
    """Applies a changed configuration to the live runtime; see the module docstring."""

    def __init__(
        self,
        settings: Settings,
        options: ServeOptions,
        *,
        plugins: LoadedPlugins,
        registry: Registry,
        invoker: ToolInvoker,
        catalog: Catalog | None,
        start_servers: StartServers,
        close_providers: CloseProviders,
        on_plugin_failure: Callable[[PluginRecord], None] | None = None,
        on_applied: Applied | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.settings = settings
        self.options = options
        self.cwd = cwd or Path(os.getcwd())
        self.plugins = plugins
        self.registry = registry
        self.invoker = invoker
        self.catalog = catalog
        self.start_servers = start_servers
        self.close_providers = close_providers
        self.on_plugin_failure = on_plugin_failure
        self.on_applied = on_applied
        self.problem: str | None = None
        """The last reload's problem, if it failed (warned once)."""
        self._warned: set[str] = set()
        self._fixed_warned: set[str] = set()
        self._lock = anyio.Lock()

    def watch(self) -> ConfigWatch:
        """A :class:`ConfigWatch` of the files this process's settings come from."""
        return ConfigWatch(watched_files(self.options, self.cwd))

    async def follow(self, watch: ConfigWatch) -> None:
        """Reload on every change ``watch`` reports, for ever."""
        async for _ in watch.changes():
            try:
                await self.reload()
            except Exception as exc:  # never the end of the server: the next change is tried again
                log.warning("reloading the configuration failed: %s", describe_exception(exc))

    def _failed(self, where: str, exc: Exception) -> None:
        reason = str(exc) if isinstance(exc, AwfError) else describe_exception(exc)
        self._warn_once(f"{where} is not reloaded: {reason}; the running server keeps its old configuration")

    def _warn_once(self, problem: str) -> None:
        self.problem = problem
        if problem not in self._warned:
            self._warned.add(problem)
            log.warning("%s", problem)

    async def reload(self) -> bool:
        """Load the settings again and apply them; True when something changed and was applied."""
        async with self._lock:
            where = self._where()
            try:
                new = config.load(self.options, cwd=str(self.cwd), quiet=True)
            except Exception as exc:
                self._failed(where, exc)
                return False
            ignored = new.ignored_config
            if ignored is not None:
                if (
                    self.settings.ignored_config is not None
                    and ignored.verdict == self.settings.ignored_config.verdict
                ):
                    return False  # the very file already ignored at start-up
                self._warn_once(
                    f"{ignored.path} is not reloaded: {ignored.verdict.reason}; the running server keeps its "
                    f"old configuration. To review and approve it: {ignored.fix}"
                )
                return False
            changes = compare(self.settings, new)
            for name in changes.fixed:
                if name not in self._fixed_warned:  # once per setting and process
                    self._fixed_warned.add(name)
                    log.warning(
                        "%s: %s changed, which applies only when awf-mcp serve starts again; the running "
                        "server keeps the old one",
                        where,
                        name.replace("_", "."),
                    )
                new = replace(new, **{name: getattr(self.settings, name)})
            if not changes:
                self._loaded()
                log.info("%s reloaded: nothing changed", where)
                return False
            try:
                await self._apply(new, changes)
            except Exception as exc:
                self._failed(where, exc)
                return False
            self._loaded()
            log.info("%s reloaded: %s", where, changes.describe())
            return True

    def _loaded(self) -> None:
        """The file loads again: a later problem is warned of again, even the same one."""
        self.problem = None
        self._warned.clear()

    def _where(self) -> str:
        found = config.find_config(self.options, self.cwd)
        return str(found[0]) if found is not None else "the configuration"

    async def _apply(self, new: Settings, changes: Changes) -> None:
        """Start what is new, merge, then stop what is gone; on a failure stop what was started."""
        old = self.settings
        config.activate_sandbox(new, self.options, self.cwd)  # new servers start under it
        started: list[PluginRecord] = []
        plugins = self.plugins
        try:
            if changes.plugins:
                plugins = load_plugins(new, on_failure=self.on_plugin_failure)
                started += plugins.records
            by_name = {record.name: record for record in self.plugins.records if _is_server(record)}
            fresh = [spec for spec in new.servers if spec.name in (*changes.added, *changes.restarted)]
            if fresh:
                for record in await self.start_servers(new, fresh):
                    by_name[record.name] = record
                    started.append(record)
            own = [record for record in plugins.records if not _is_server(record)]
            records = own + [by_name[spec.name] for spec in new.servers]
            await self.registry.reconfigure(records, new)
        except BaseException:
            config.activate_sandbox(old, self.options, self.cwd)
            await self.close_providers(_providers(started))
            raise
        kept = {id(record) for record in records}
        gone = [record for record in self.plugins.records if id(record) not in kept]
        self.plugins.manager = plugins.manager
        self.plugins.records[:] = records
        self.settings = new
        self._update_invoker(new, changes)
        if self.catalog is not None:
            await self.catalog.reconfigure(records, new)
        await self.close_providers(_providers(gone))
        if self.on_applied is not None:
            self.on_applied(new, self.plugins)

    def _update_invoker(self, new: Settings, changes: Changes) -> None:
        invoker = self.invoker
        invoker.timeout_seconds = new.call_timeout_seconds
        invoker.output_budget = new.output_budget
        if "roots" in changes.settings or "roots_explicit" in changes.settings:
            invoker.client_roots = ClientRoots(new.roots, explicit=new.roots_explicit)
        if changes.plugins:
            policies = policies_from(self.plugins.manager)
            invoker.policy, invoker.path_policy = policies.call, policies.path


def _is_server(record: PluginRecord) -> bool:
    return record.source.startswith(SOURCE_PREFIX)


def _providers(records: Sequence[PluginRecord]) -> list[ToolProvider]:
    return [entry.provider for record in records for entry in record.providers]
