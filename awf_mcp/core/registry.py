"""The tool registry: merge every plugin's tools, check names, resolve the served set.

Contract
--------
:func:`build` takes the :class:`~awf_mcp.core.plugins.PluginRecord` list from the
loader and the :class:`~awf_mcp.core.config.Settings`, and returns a
:class:`Registry` whose tools are sorted by name (the ``tools/list`` order).

* Names must match ``^[A-Za-z0-9_-]{1,64}$`` (no dots: the strictest clients
  refuse them). Plugin tools must carry their plugin's prefix
  (``<plugin>_<tool>``); built-ins keep their PascalCase names.
* Registration is all-or-nothing per plugin: one invalid tool and the whole
  plugin is skipped (recorded as failed; fatal with ``strict``).
* The AWF ``plugin_tools`` selection, ``only`` and ``exclude`` (names or
  ``fnmatch`` globs) narrow the set; ``rename`` (keyed by tool name, or by
  ``<source>/<name>`` when the name alone is ambiguous) renames tools.
* Any name claimed twice by plugins — across plugins or inside one — is a fatal
  :class:`~awf_mcp.errors.ToolNameError` naming the tool, both sources and the
  two ways out (exclude one, or rename one). When an upstream server's tool is one of
  the two, that tool gives way instead (the second, when both are a server's): it is
  left out with a warning showing the ``[rename]`` line that serves it too (fatal with
  ``strict``).
* A ``[rename]`` key that names no offered tool (nor prompt) is a :class:`~awf_mcp.errors.ConfigError`,
  except a key naming a server's tool (``server:<name>/…``, or ``<name>_…`` of a
  configured server): that server may have failed, or not list the tool yet; a warning says
  the rename is not applied.
* Upstream servers' tools (source ``server:<name>``) are checked one by one, after
  ``[rename]``, ``only`` and ``exclude``: one whose name breaks the rules, or whose input
  schema is not an object schema, is left out with a warning (fatal with ``strict``);
  the warning shows the exact ``[rename]`` line to add (:func:`rename_advice`). One whose
  name passes 64 characters as a client names it (``mcp__awf__<tool>``) is served, with
  the same advice.

Tool sets that change at runtime
--------------------------------
A provider that implements :class:`ChangingProvider` (an upstream server, which may
send ``notifications/tools/list_changed``) is given :meth:`Registry.refresh` to call
after its tool set changed. ``refresh`` re-merges every record under the same rules,
except that nothing is fatal: a name newly claimed twice keeps the tool that was
already served and leaves the newcomer out with a log line; a rename or
``plugin_tools`` operation whose tool is gone is ignored. The new set replaces the old
in one assignment, so a reader sees one or the other; a call in flight holds its
:class:`RegisteredTool` and finishes on it. When the served set changed, every
:meth:`Registry.watch` listener is awaited (the SDK adapter tells the agent).

A live reload (:mod:`awf_mcp.core.reload`) gives :meth:`Registry.reconfigure` the new
records and settings: they are checked as :func:`build` checks them (a failure raises and
leaves the registry as it was), then replace the old ones in place, so every holder of the
registry (the invoker, the catalog, the SDK adapter) serves the new set; the listeners are
awaited when the served tools, or the ``[discovery]`` settings that shape their listing, changed.
"""

from __future__ import annotations

import fnmatch
import logging
import re
from collections.abc import Awaitable, Callable, Container, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from awf_mcp.core.config import PROXY_CODE, Settings
from awf_mcp.core.pins import refusal
from awf_mcp.core.plugins import PluginRecord
from awf_mcp.core.servers import SOURCE_PREFIX as SERVER_SOURCE_PREFIX
from awf_mcp.errors import ConfigError, PluginError, ToolNameError, UnknownToolError, did_you_mean
from awf_mcp.ports import (
    BUILTIN_SOURCE,
    MAX_TOOL_NAME_LENGTH,
    TOOL_NAME_PATTERN,
    ToolDefinition,
    ToolProvider,
    client_tool_name,
)

log = logging.getLogger("awf_mcp.registry")

CLIENT_SERVER_NAME = "awf"
"""The name agents are configured to know awf-mcp by (``awf-mcp config``): their ``mcp__awf__`` prefix.

The same as :data:`awf_mcp.clients.clientconfig.DEFAULT_SERVER_NAME`, not imported from it to keep that
module off ``serve``'s start-up path (a unit test holds the two equal)."""

Listener = Callable[[], Awaitable[object]]


@runtime_checkable
class ChangingProvider(Protocol):
    """A provider whose tool set may change while serving; see the module docstring."""

    def list_tools(self) -> list[ToolDefinition]:
        """The current tools."""
        ...

    def watch_tools(self, on_change: Listener) -> None:
        """Have ``on_change`` awaited after each change of :meth:`list_tools`."""
        ...


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    """A served tool: its (possibly renamed) definition and the provider that runs it."""

    definition: ToolDefinition
    provider: ToolProvider
    original_name: str

    @property
    def name(self) -> str:
        """The name the client sees."""
        return self.definition.name


class Registry:
    """The served tools, by name; built by :func:`build`, re-merged by :meth:`refresh`."""

    def __init__(
        self,
        tools: Iterable[RegisteredTool],
        *,
        records: Sequence[PluginRecord] = (),
        settings: Settings | None = None,
    ) -> None:
        self._records = list(records)
        self._settings = settings or Settings()
        self._listeners: list[Listener] = []
        self._watched: dict[int, ChangingProvider] = {}
        self._served: tuple[list[RegisteredTool], dict[str, RegisteredTool]] = ([], {})
        self._replace(tools)

    def _replace(self, tools: Iterable[RegisteredTool]) -> None:
        ordered = sorted(tools, key=lambda tool: tool.name)
        self._served = (ordered, {tool.name: tool for tool in ordered})  # one assignment

    @property
    def records(self) -> list[PluginRecord]:
        """The records merged (every provider's, served or not)."""
        return self._records

    @property
    def settings(self) -> Settings:
        """The settings merged under."""
        return self._settings

    def __len__(self) -> int:
        return len(self._served[0])

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(self._served[0])

    def definitions(self) -> list[ToolDefinition]:
        """Every served tool's definition, sorted by name."""
        return [tool.definition for tool in self._served[0]]

    def lookup(self, name: str) -> RegisteredTool:
        """The tool called ``name``; :class:`UnknownToolError` if there is none (for an upstream tool
        held back, :func:`~awf_mcp.core.pins.refusal` says why and how to approve it)."""
        by_name = self._served[1]
        try:
            return by_name[name]
        except KeyError:
            hint = did_you_mean(name, by_name)
            shown = name if len(name) <= 100 else f"{name[:100]}..."
            unknown = f"unknown tool '{shown}'" + (f"; {hint}" if hint else "")
            raise UnknownToolError(refusal(name) or unknown) from None

    @property
    def can_change(self) -> bool:
        """True when a served provider may change its tools (so clients may get ``list_changed``)."""
        return any(isinstance(entry.provider, ChangingProvider) for entry in self._live_entries())

    def watch(self, listener: Listener) -> None:
        """Have ``listener`` awaited after each :meth:`refresh` that changed the served set."""
        self._listeners.append(listener)

    def _live_entries(self) -> Iterator[Any]:
        for record in self._records:
            if record.ok:
                yield from record.providers

    def watch_providers(self) -> None:
        """Have every served :class:`ChangingProvider` not yet watched call :meth:`refresh` on a change."""
        live = {}
        for entry in self._live_entries():
            if isinstance(entry.provider, ChangingProvider):
                live[id(entry.provider)] = entry.provider
                if id(entry.provider) not in self._watched:
                    entry.provider.watch_tools(self.refresh)
        self._watched = live

    async def reconfigure(self, records: Sequence[PluginRecord], settings: Settings) -> bool:
        """Serve ``records`` under ``settings`` (a reload; see the module docstring). True if the
        listeners were told; raises as :func:`build` does, leaving the registry unchanged."""
        chosen = _checked_merge(records, settings)
        before = self._served[0]
        discovery_changed = settings.discovery != self._settings.discovery
        self._records, self._settings = list(records), settings
        self.watch_providers()
        after = sorted(chosen.values(), key=lambda tool: tool.name)
        self._replace(after)
        if not discovery_changed and _same_served(before, after):
            return False
        log.info("the served tools changed: %d tools", len(after))
        await self._tell()
        return True

    async def _tell(self) -> None:
        for listener in list(self._listeners):
            try:
                await listener()
            except Exception as exc:
                log.warning("a tools-changed listener failed: %s: %s", type(exc).__name__, exc)

    async def refresh(self) -> bool:
        """Re-merge after a provider's tool set changed; see the module docstring. True if it changed."""
        for entry in self._live_entries():
            if isinstance(entry.provider, ChangingProvider):
                entry.tools = entry.provider.list_tools()
        before = self._served[0]
        chosen = _merge(self._records, self._settings, served=self._served[1])
        after = sorted(chosen.values(), key=lambda tool: tool.name)
        if _same_served(before, after):
            return False
        self._replace(after)
        log.info("the served tools changed: %d tools", len(after))
        await self._tell()
        return True


def _same_served(before: Sequence[RegisteredTool], after: Sequence[RegisteredTool]) -> bool:
    return [t.definition for t in after] == [t.definition for t in before] and all(
        a.provider is b.provider for a, b in zip(after, before, strict=True)
    )


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid tool name, or ``None`` when it is."""
    if not isinstance(name, str):
        return f"tool name {name!r} is not a string"
    if not TOOL_NAME_PATTERN.match(name):
        return (
            f"tool name '{name}' is invalid: use 1-{MAX_TOOL_NAME_LENGTH} letters, digits, '_' or '-' "
            "(no dots or spaces)"
        )
    return None


def long_names(definitions: Iterable[ToolDefinition], server: str = CLIENT_SERVER_NAME) -> list[str]:
    """Names that pass 64 characters once a client prefixes them (``mcp__<server>__<tool>``)."""
    return [d.name for d in definitions if len(client_tool_name(server, d.name)) > MAX_TOOL_NAME_LENGTH]


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (a lone surrogate, which TOML cannot hold, becomes U+FFFD)."""
    out = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            out.append("\\" + char)
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04X}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


def rename_advice(tool: ToolDefinition, server: str, taken: Container[str] = ()) -> str:
    """The ``[rename]`` line that gives upstream ``tool`` (prefixed ``<server>_``) a valid name.

    The suggested name keeps the ``<server>_`` prefix, replaces every run of other
    characters with ``_``, is cut so that a client's ``mcp__awf__`` prefix still
    fits in 64 characters, and ends in ``_2``, ``_3``… when it is one of ``taken``.
    """
    room = MAX_TOOL_NAME_LENGTH - len(client_tool_name(CLIENT_SERVER_NAME, "_")) + 1
    own = tool.name.removeprefix(f"{server}_")
    cleaned = _NAME_UNSAFE.sub("_", own).strip("_") or "tool"
    suggested = f"{server}_{cleaned}"[:room].rstrip("_-")
    number = 1
    while suggested in taken:
        number += 1
        ending = f"_{number}"
        suggested = f"{server}_{cleaned}"[: room - len(ending)].rstrip("_-") + ending
    key = f"{tool.source}/{tool.name}"
    return f"add to awf-mcp.toml under [rename]: {_toml_string(key)} = {_toml_string(suggested)}"


def _upstream_tool_problem(record: PluginRecord, tool: ToolDefinition, served_as: str) -> str | None:
    """Why upstream ``tool`` (served as ``served_as``) cannot be served, or ``None``."""
    own = tool.name.removeprefix(f"{record.name}_")
    if not isinstance(tool.input_schema, dict) or tool.input_schema.get("type", "object") != "object":
        return (
            f"server '{record.name}': tool '{own}' is left out: its input schema is not a JSON object schema"
        )
    problem = name_problem(served_as)
    if problem:
        return (
            f"server '{record.name}': tool '{own}' is left out: {problem}; {rename_advice(tool, record.name)}"
        )
    return None


def _plugin_problem(record: PluginRecord) -> str | None:
    if record.source.startswith(SERVER_SOURCE_PREFIX):
        return None  # checked tool by tool, after renames (see the module docstring)
    for entry in record.providers:
        for tool in entry.tools:
            if not isinstance(tool, ToolDefinition):
                return f"list_tools() returned {type(tool).__name__}, not ToolDefinition"
            problem = name_problem(tool.name)
            if problem:
                return problem
            if record.source != BUILTIN_SOURCE and not tool.name.startswith(f"{record.name}_"):
                return f"tool '{tool.name}' must be named '{record.name}_<name>' (plugin prefix)"
            if not isinstance(tool.input_schema, dict) or tool.input_schema.get("type", "object") != "object":
                return f"tool '{tool.name}' has an input schema that is not a JSON object schema"
    return None


def _matches(patterns: Sequence[str], *names: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns for name in names)


def _collision(name: str, first: RegisteredTool, second: RegisteredTool) -> ToolNameError:
    a, b = first.definition.source, second.definition.source
    where = f"both {a} and {b}" if a != b else f"{a} twice"
    return ToolNameError(
        f"tool name '{name}' is claimed by {where}; drop one with --exclude {name} "
        f'or rename one in awf-mcp.toml ([rename] "{b}/{second.original_name}" = "<new_name>")',
        code=f"{PROXY_CODE}.NAME_COLLISION",
    )


def _is_upstream(tool: RegisteredTool) -> bool:
    return tool.definition.source.startswith(SERVER_SOURCE_PREFIX)


def _start_collision(
    name: str, first: RegisteredTool, second: RegisteredTool, settings: Settings, taken: Container[str]
) -> RegisteredTool:
    """The tool that keeps ``name`` at start-up: an upstream's tool gives way (with a warning naming the
    ``[rename]`` line that serves it too); between plugins, or with ``strict``, the collision is fatal."""
    if settings.strict or not (_is_upstream(first) or _is_upstream(second)):
        raise _collision(name, first, second)
    keep, drop = (first, second) if _is_upstream(second) else (second, first)
    server = drop.definition.source.removeprefix(SERVER_SOURCE_PREFIX)
    original = replace(drop.definition, name=drop.original_name)
    log.warning(
        "server '%s': tool '%s' is left out: its name '%s' is already taken by %s; %s",
        server,
        drop.original_name.removeprefix(f"{server}_"),
        name,
        keep.definition.source,
        rename_advice(original, server, taken),
    )
    return keep


def _names_a_server_tool(key: str, records: Sequence[PluginRecord]) -> bool:
    """Whether a ``[rename]`` key names an upstream server's tool (listed now or not: a server that
    failed, or has not listed that tool yet)."""
    if key.startswith(SERVER_SOURCE_PREFIX):
        return True
    return any(
        record.source.startswith(SERVER_SOURCE_PREFIX) and key.startswith(f"{record.name}_")
        for record in records
    )


def _select_proxy_tools(
    settings: Settings, records: Sequence[PluginRecord], *, lenient: bool = False
) -> set[str] | None:
    """Names the AWF ``plugin_tools`` selection exposes, or ``None`` when there is no selection."""
    if settings.plugin_tools is None:
        return None
    by_name = {record.name: record for record in records}
    exposed: set[str] = set()
    for selection in settings.plugin_tools:
        record = by_name.get(selection.plugin)
        if record is None and lenient:
            continue  # prompts merged by these rules: a plugin that offers none is not among them
        if record is None or record.source == BUILTIN_SOURCE:
            known = ", ".join(sorted(r.name for r in records if r.source != BUILTIN_SOURCE)) or "none"
            raise ConfigError(
                f"plugin_tools names plugin '{selection.plugin}', which is not installed "
                f"(installed plugins: {known}); install it with `awf-mcp plugins install NAME-OR-PATH` "
                f"(pip or a directory; awf-mcp's examples are awf-plugin-echo, -guard, -scripts and "
                f"-sqlite in its source's plugins/), then check with `awf-mcp plugins list`",
                code=f"{PROXY_CODE}.UNKNOWN_PLUGIN",
            )
        if not record.ok:
            if record.source.startswith(SERVER_SOURCE_PREFIX):
                continue  # a server that did not start is reported already; the others are served
            raise ConfigError(
                f"plugin_tools names plugin '{selection.plugin}', which {record.status}",
                code=f"{PROXY_CODE}.UNKNOWN_PLUGIN",
            )
        names = set(record.tool_names)
        if not selection.expose:
            exposed |= names
        for operation in selection.expose:
            tool = f"{selection.plugin}_{operation}"
            if tool not in names and operation not in names:
                if lenient:
                    continue
                offered = ", ".join(n.removeprefix(f"{selection.plugin}_") for n in sorted(names))
                raise ConfigError(
                    f"plugin '{selection.plugin}' has no operation '{operation}' (it offers: {offered})",
                    code=f"{PROXY_CODE}.UNKNOWN_OPERATION",
                )
            exposed.add(tool if tool in names else operation)
    return exposed


def _same_tool(a: RegisteredTool, b: RegisteredTool) -> bool:
    return a.provider is b.provider and a.original_name == b.original_name


def _runtime_collision(
    name: str, first: RegisteredTool, second: RegisteredTool, served: Mapping[str, RegisteredTool]
) -> RegisteredTool:
    """The tool that keeps ``name`` at a refresh: the one already served, else the first; logs the other."""
    old = served.get(name)
    keep, drop = (second, first) if old is not None and _same_tool(old, second) else (first, second)
    a, b = keep.definition.source, drop.definition.source
    where = f"both {a} and {b}" if a != b else f"{a} twice"
    log.warning(
        "tool name '%s' is now claimed by %s; the tool '%s' of %s is left out: "
        'rename it in awf-mcp.toml ([rename] "%s/%s" = "<new_name>")',
        name,
        where,
        drop.original_name,
        b,
        b,
        drop.original_name,
    )
    return keep


def _merge(
    records: Sequence[PluginRecord], settings: Settings, served: Mapping[str, RegisteredTool] | None = None
) -> dict[str, RegisteredTool]:
    """The served tools by name: at start-up (``served`` is ``None``) strictly, else leniently."""
    at_start = served is None
    live = [record for record in records if record.ok]
    exposed = _select_proxy_tools(settings, records, lenient=not at_start)
    unused_renames = dict(settings.renames)
    chosen: dict[str, RegisteredTool] = {}
    for record in live:
        upstream = record.source.startswith(SERVER_SOURCE_PREFIX)
        for entry in record.providers:
            for tool in entry.tools:
                if exposed is not None and record.source != BUILTIN_SOURCE and tool.name not in exposed:
                    continue
                qualified = f"{tool.source}/{tool.name}"
                new_name = unused_renames.pop(qualified, None) or unused_renames.pop(tool.name, None)
                definition = tool
                if new_name:
                    problem = name_problem(new_name)
                    if problem:
                        if at_start:
                            raise ConfigError(f"rename of '{tool.name}': {problem}")
                        log.warning("rename of '%s' ignored: %s", tool.name, problem)
                    else:
                        definition = replace(tool, name=new_name)
                if settings.only and not _matches(settings.only, tool.name, definition.name):
                    continue
                if _matches(settings.exclude, tool.name, definition.name):
                    continue
                if upstream:
                    problem = _upstream_tool_problem(record, tool, definition.name)
                    if problem:
                        if at_start and settings.strict:
                            raise PluginError(problem)
                        log.warning("%s", problem)
                        continue
                    if long_names([definition]):
                        log.warning(
                            "server '%s': tool '%s' is served as '%s', over %d characters as %s; "
                            "some clients refuse it: %s",
                            record.name,
                            tool.name.removeprefix(f"{record.name}_"),
                            definition.name,
                            MAX_TOOL_NAME_LENGTH,
                            client_tool_name(CLIENT_SERVER_NAME, definition.name),
                            rename_advice(tool, record.name),
                        )
                registered = RegisteredTool(definition, entry.provider, tool.name)
                if definition.name in chosen:
                    if served is None:
                        registered = _start_collision(
                            definition.name, chosen[definition.name], registered, settings, chosen
                        )
                    else:
                        registered = _runtime_collision(
                            definition.name, chosen[definition.name], registered, served
                        )
                chosen[definition.name] = registered
    prompts = _prompt_names(records) if at_start and unused_renames else set()
    for name in unused_renames if at_start else ():
        if name in prompts:
            continue  # a prompt's: the catalog renames it (awf_mcp.core.catalog)
        if refusal(name.rpartition("/")[2]) is not None:
            continue  # held back until the user approves it; the rename applies then
        if not _names_a_server_tool(name, records):
            raise ConfigError(f"rename names tool '{name}', which no plugin offers")
        log.warning("rename of '%s' not applied: no server serves that tool now", name)
    return chosen


def _prompt_names(records: Sequence[PluginRecord]) -> set[str]:
    """The names (and ``<source>/<name>`` keys) of the prompts the records' providers offer."""
    names: set[str] = set()
    for record in records:
        for entry in record.providers:
            list_prompts = getattr(entry.provider, "list_prompts", None)
            for prompt in list_prompts() if callable(list_prompts) else ():
                names |= {prompt.name, f"{prompt.source}/{prompt.name}"}
    return names


def merge_named(
    records: Sequence[PluginRecord], settings: Settings, served: Mapping[str, RegisteredTool]
) -> dict[str, RegisteredTool]:
    """Items named like tools (prompts) merged by the same rules, leniently: a name claimed twice
    keeps the one in ``served`` (else the first) and a rename naming nothing is ignored."""
    return _merge(records, settings, served=served)


def _checked_merge(records: Sequence[PluginRecord], settings: Settings) -> dict[str, RegisteredTool]:
    """The served tools by name, every plugin's tools checked first; see the module docstring."""
    for record in records:
        if not record.ok:
            continue
        problem = _plugin_problem(record)
        if problem:
            if settings.strict:
                raise PluginError(f"{record.describe()} returned invalid tools: {problem}")
            record.fail(problem)

    chosen = _merge(records, settings)
    if not chosen and not settings.builtins:
        raise ConfigError(
            "no tools to serve: the built-ins are off and no plugin contributed a tool",
            code=f"{PROXY_CODE}.EMPTY_PROXY",
        )
    return chosen


def build(records: Sequence[PluginRecord], settings: Settings) -> Registry:
    """Merge, validate and select the served tools; see the module docstring."""
    registry = Registry(_checked_merge(records, settings).values(), records=records, settings=settings)
    registry.watch_providers()
    return registry


def serving(settings: Settings, tool: str | None) -> Settings:
    """``settings`` with only the upstream servers that may serve tool ``tool`` (none for ``None``).

    A command that calls one tool starts just the servers that may offer it: the one
    whose name prefixes it (``<server>_<tool>``), and any whose tool ``[rename]`` turns
    into ``tool``. The renames and ``plugin_tools`` entries of the servers left out go
    with them (they would name tools nobody offers). Built-ins and plugins are
    untouched: they start in-process, in milliseconds.
    """
    names = {spec.name for spec in settings.servers}

    def server_of(key: str) -> str | None:
        if key.startswith(SERVER_SOURCE_PREFIX):  # "<source>/<name>"
            return key.removeprefix(SERVER_SOURCE_PREFIX).partition("/")[0]
        prefix, underscore, _ = key.partition("_")
        return prefix if underscore and prefix in names else None

    wanted = set()
    if tool is not None:
        wanted |= {server_of(tool)} | {server_of(key) for key, new in settings.renames.items() if new == tool}
    left_out = names - wanted
    selections = settings.plugin_tools
    return replace(
        settings,
        servers=tuple(spec for spec in settings.servers if spec.name in wanted),
        renames={key: new for key, new in settings.renames.items() if server_of(key) not in left_out},
        plugin_tools=None
        if selections is None
        else tuple(selection for selection in selections if selection.plugin not in left_out),
    )
