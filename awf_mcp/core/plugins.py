"""Plugin loading: the built-ins and every ``awf_mcp`` entry point, through one pluggy hook.

Contract
--------
:func:`load` builds a :class:`pluggy.PluginManager` for project ``awf_mcp``,
registers the built-in tools as the internal plugin ``builtin`` (unless turned
off), then each entry point of group ``awf_mcp`` (the entry-point name is the
plugin name and the prefix of its tools). It calls each plugin's
``awf_mcp_register_tools`` hook *separately*, with its own
:class:`~awf_mcp.ports.PluginContext`, so one plugin's failure is attributed to
it and costs no other plugin anything. It returns one :class:`PluginRecord`
per plugin, with status ``ok``, ``failed: <reason>`` or ``disabled``.

Which entry points load:

* ``AWF_MCP_NO_PLUGINS=1`` loads none (the built-ins still do);
* ``AWF_MCP_PLUGINS=echo,sqlite`` loads only those;
* a ``plugin_tools`` selection in the config file loads only the plugins it names.

Plugins are found on ``sys.path`` and, for the frozen single executable whose
interpreter sees no site-packages, in plugin directories
(``AWF_MCP_PLUGIN_PATH``, ``os.pathsep``-separated, then
``$XDG_DATA_HOME/awf-mcp/plugins``), appended to ``sys.path`` so they never
shadow what is already importable.

The entry points found are kept per ``sys.path`` and the modification times of its entries
(:func:`entry_points`), so a process that scanned once (the shared server, before it forks
its sessions) does not scan again until a distribution is installed or removed.

Two distributions declaring the same plugin name is a fatal
:class:`~awf_mcp.errors.PluginError`; any other plugin failure is fatal only
when ``strict`` is set.
"""

from __future__ import annotations

import functools
import importlib
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import pluggy

from awf_mcp import hookspecs
from awf_mcp.core.config import Settings
from awf_mcp.errors import PluginError, describe_exception
from awf_mcp.install.plugindirs import plugin_dirs
from awf_mcp.ports import BUILTIN_SOURCE, PluginContext, ToolDefinition, ToolProvider

log = logging.getLogger("awf_mcp.core.plugins")

BUILTIN_PLUGIN = "builtin"
ENV_ONLY = "AWF_MCP_PLUGINS"
ENV_NONE = "AWF_MCP_NO_PLUGINS"


def plugin_source(plugin_name: str) -> str:
    """The ``source`` label of a tool contributed by plugin ``plugin_name``."""
    return f"plugin:{plugin_name}"


@dataclass(slots=True)
class ProviderTools:
    """A provider and the tools it listed at start-up."""

    provider: ToolProvider
    tools: list[ToolDefinition]


@dataclass(slots=True)
class PluginRecord:
    """One plugin as start-up saw it: where it came from, what it gave, how it went."""

    name: str
    source: str
    distribution: str = ""
    version: str = ""
    location: str = ""
    status: str = "ok"
    providers: list[ProviderTools] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the plugin loaded and its tools are served."""
        return self.status == "ok"

    def fail(self, reason: str) -> None:
        """Mark the plugin failed; its providers are dropped (and closed by the caller)."""
        self.status = f"failed: {reason}"

    @property
    def tool_names(self) -> list[str]:
        """Names of the tools this plugin listed, sorted."""
        return sorted(tool.name for entry in self.providers for tool in entry.tools)

    def describe(self) -> str:
        """``plugin 'x' (distribution awf-plugin-x 1.0)`` for messages."""
        if not self.distribution:
            return f"plugin '{self.name}'"
        release = f"{self.distribution} {self.version}".strip()
        return f"plugin '{self.name}' (distribution {release})"


@dataclass(slots=True)
class LoadedPlugins:
    """The result of :func:`load`: the manager (for later hooks) and every plugin's record."""

    manager: pluggy.PluginManager
    records: list[PluginRecord]

    @property
    def providers(self) -> list[ToolProvider]:
        """Every provider a plugin created, served or not: each gets ``close()`` at the end."""
        return [entry.provider for record in self.records for entry in record.providers]


def _extend_sys_path() -> None:
    for directory in plugin_dirs():
        text = str(directory)
        if directory.is_dir() and text not in sys.path:
            sys.path.append(text)


def _wanted(name: str, settings: Settings) -> bool:
    if os.environ.get(ENV_NONE, "").strip().lower() in {"1", "true", "yes"}:
        return False
    only = os.environ.get(ENV_ONLY, "").strip()
    if only and name not in {item.strip() for item in only.split(",")}:
        return False
    if settings.plugin_tools is not None:
        return name in {selection.plugin for selection in settings.plugin_tools}
    return True


def _modified(path: str) -> int:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return -1


@functools.lru_cache(maxsize=8)
def _scan(_where: tuple[tuple[str, int], ...]) -> tuple[metadata.EntryPoint, ...]:
    return tuple(metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP))


def entry_points() -> tuple[metadata.EntryPoint, ...]:
    """The ``awf_mcp`` entry points on ``sys.path``, scanned again only when ``sys.path`` or the
    modification time of one of its entries changed (an install adds a ``.dist-info``)."""
    return _scan(tuple((path, _modified(path)) for path in sys.path))


def _entry_points() -> list[metadata.EntryPoint]:
    found = sorted(entry_points(), key=lambda ep: ep.name)
    by_name: dict[str, metadata.EntryPoint] = {}
    for ep in found:
        other = by_name.get(ep.name)
        if other is not None and _dist_name(other) != _dist_name(ep):
            raise PluginError(
                f"two distributions declare plugin '{ep.name}': {_dist_name(other)} and {_dist_name(ep)}; "
                f"uninstall one of them (pip uninstall {_dist_name(ep)})"
            )
        by_name.setdefault(ep.name, ep)
    if BUILTIN_PLUGIN in by_name:
        raise PluginError(
            f"distribution {_dist_name(by_name[BUILTIN_PLUGIN])} declares plugin name "
            f"'{BUILTIN_PLUGIN}', which is reserved for awf-mcp's own tools; rename its entry point"
        )
    return list(by_name.values())


def _dist_name(ep: metadata.EntryPoint) -> str:
    return ep.dist.name if ep.dist is not None else "?"


def _record_for(ep: metadata.EntryPoint) -> PluginRecord:
    record = PluginRecord(name=ep.name, source=plugin_source(ep.name))
    if ep.dist is not None:
        record.distribution = ep.dist.name
        record.version = ep.dist.version
        record.location = str(ep.dist.locate_file(""))
    return record


def _check_hook_names(manager: pluggy.PluginManager) -> None:
    """Fail a plugin that implements a hook no spec declares (a misspelling), naming the real ones."""
    try:
        manager.check_pending()
    except pluggy.PluginValidationError as exc:
        known = ", ".join(sorted(name for name in vars(hookspecs) if name.startswith("awf_mcp_")))
        raise PluginError(f"{exc.args[0] if exc.args else exc}; awf-mcp's hooks are {known}") from None


def _call_register_hook(manager: pluggy.PluginManager, module: object, context: PluginContext) -> list[Any]:
    """Call ``module``'s ``awf_mcp_register_tools`` alone, through pluggy (wrappers and rules apply)."""
    if not manager.get_hookcallers(module):
        raise PluginError("it implements no awf_mcp hook (mark functions with @awf_mcp.hookimpl)")
    others = [plugin for plugin in manager.get_plugins() if plugin is not module]
    for hook in ("awf_mcp_register_tools", "awf_mcp_register_prompts", "awf_mcp_register_resources"):
        manager.subset_hook_caller(hook, remove_plugins=others)(plugin=context)
    return context.registered


def _as_providers(name: str, source: str, items: Sequence[Any]) -> list[ToolProvider]:
    providers: list[ToolProvider] = []
    functions: list[Any] = []
    offerings: list[Any] = []
    for item in items:
        if getattr(item, "__awf_tool__", None) is not None:
            functions.append(item)
        elif (
            getattr(item, "__awf_prompt__", None) is not None
            or getattr(item, "__awf_resource__", None) is not None
        ):
            offerings.append(item)
        elif isinstance(item, ToolProvider):
            providers.append(item)
        else:
            raise PluginError(
                f"register() got {type(item).__name__}; pass a ToolProvider or an @awf_mcp.tool, "
                "@awf_mcp.prompt or @awf_mcp.resource function"
            )
    if functions:
        from awf_mcp.authoring import FunctionToolProvider

        providers.append(FunctionToolProvider(plugin=name, source=source, functions=functions))
    if offerings:
        from awf_mcp.authoring import FunctionOfferingProvider

        providers.append(FunctionOfferingProvider(plugin=name, source=source, functions=offerings))
    return providers


def _collect(manager: pluggy.PluginManager, module: object, record: PluginRecord, settings: Settings) -> None:
    context = PluginContext(
        name=record.name, settings=settings.settings_for(record.name), roots=settings.roots
    )
    items = _call_register_hook(manager, module, context)
    for provider in _as_providers(record.name, record.source, items):
        tools = list(provider.list_tools())
        record.providers.append(ProviderTools(provider=provider, tools=tools))


def load(settings: Settings, *, on_failure: Callable[[PluginRecord], None] | None = None) -> LoadedPlugins:
    """Load the built-ins and the wanted entry points; see the module docstring."""
    manager = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    manager.add_hookspecs(hookspecs)
    records: list[PluginRecord] = []

    def attempt(record: PluginRecord, import_module: Callable[[], object]) -> None:
        records.append(record)
        module: object = None
        try:
            module = import_module()
            manager.register(module, name=record.name)
            _check_hook_names(manager)
            _collect(manager, module, record, settings)
        except Exception as exc:
            if module is not None and manager.is_registered(module):
                manager.unregister(module)  # a failed plugin's other hooks (policy, instructions) never run
            if settings.strict or record.source == BUILTIN_SOURCE:
                raise PluginError(f"{record.describe()} failed to load: {describe_exception(exc)}") from exc
            record.fail(describe_exception(exc))
            record.providers.clear()
            if on_failure is not None:
                on_failure(record)

    builtin = PluginRecord(name=BUILTIN_PLUGIN, source=BUILTIN_SOURCE, distribution="awf-mcp")
    if settings.builtins:
        attempt(builtin, lambda: importlib.import_module("awf_mcp.builtins"))
    else:
        builtin.status = "disabled"
        records.append(builtin)

    _extend_sys_path()
    for ep in _entry_points():
        record = _record_for(ep)
        if not _wanted(ep.name, settings):
            record.status = "disabled"
            records.append(record)
            continue
        attempt(record, ep.load)
    return LoadedPlugins(manager=manager, records=records)
