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
* Any name claimed twice — across plugins or inside one — is a fatal
  :class:`~awf_mcp.errors.ToolNameError` naming the tool, both sources and the
  two ways out (exclude one, or rename one).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from awf_mcp.core.config import PROXY_CODE, Settings
from awf_mcp.core.plugins import PluginRecord
from awf_mcp.errors import ConfigError, PluginError, ToolNameError, UnknownToolError
from awf_mcp.ports import (
    BUILTIN_SOURCE,
    MAX_TOOL_NAME_LENGTH,
    TOOL_NAME_PATTERN,
    ToolDefinition,
    ToolProvider,
    client_tool_name,
)


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
    """The served tools, by name; built by :func:`build`."""

    def __init__(self, tools: Iterable[RegisteredTool]) -> None:
        self._tools = sorted(tools, key=lambda tool: tool.name)
        self._by_name = {tool.name: tool for tool in self._tools}

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter(self._tools)

    def definitions(self) -> list[ToolDefinition]:
        """Every served tool's definition, sorted by name."""
        return [tool.definition for tool in self._tools]

    def lookup(self, name: str) -> RegisteredTool:
        """The tool called ``name``; :class:`UnknownToolError` if there is none."""
        try:
            return self._by_name[name]
        except KeyError:
            close = fnmatch.filter(self._by_name, f"*{name[:3]}*") if name else []
            hint = f"; did you mean {', '.join(close[:3])}?" if close else ""
            raise UnknownToolError(f"unknown tool '{name}'{hint}") from None


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


def long_names(definitions: Iterable[ToolDefinition], server: str = "awf") -> list[str]:
    """Names that pass 64 characters once a client prefixes them (``mcp__<server>__<tool>``)."""
    return [d.name for d in definitions if len(client_tool_name(server, d.name)) > MAX_TOOL_NAME_LENGTH]


def _plugin_problem(record: PluginRecord) -> str | None:
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


def _select_proxy_tools(settings: Settings, records: Sequence[PluginRecord]) -> set[str] | None:
    """Names the AWF ``plugin_tools`` selection exposes, or ``None`` when there is no selection."""
    if settings.plugin_tools is None:
        return None
    by_name = {record.name: record for record in records}
    exposed: set[str] = set()
    for selection in settings.plugin_tools:
        record = by_name.get(selection.plugin)
        if record is None or record.source == BUILTIN_SOURCE:
            known = ", ".join(sorted(r.name for r in records if r.source != BUILTIN_SOURCE)) or "none"
            raise ConfigError(
                f"plugin_tools names plugin '{selection.plugin}', which is not installed "
                f"(installed plugins: {known})",
                code=f"{PROXY_CODE}.UNKNOWN_PLUGIN",
            )
        if not record.ok:
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
                offered = ", ".join(n.removeprefix(f"{selection.plugin}_") for n in sorted(names))
                raise ConfigError(
                    f"plugin '{selection.plugin}' has no operation '{operation}' (it offers: {offered})",
                    code=f"{PROXY_CODE}.UNKNOWN_OPERATION",
                )
            exposed.add(tool if tool in names else operation)
    return exposed


def build(records: Sequence[PluginRecord], settings: Settings) -> Registry:
    """Merge, validate and select the served tools; see the module docstring."""
    for record in records:
        if not record.ok:
            continue
        problem = _plugin_problem(record)
        if problem:
            if settings.strict:
                raise PluginError(f"{record.describe()} returned invalid tools: {problem}")
            record.fail(problem)

    live = [record for record in records if record.ok]
    exposed = _select_proxy_tools(settings, live)
    unused_renames = dict(settings.renames)
    chosen: dict[str, RegisteredTool] = {}
    for record in live:
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
                        raise ConfigError(f"rename of '{tool.name}': {problem}")
                    definition = replace(tool, name=new_name)
                if settings.only and not _matches(settings.only, tool.name, definition.name):
                    continue
                if _matches(settings.exclude, tool.name, definition.name):
                    continue
                registered = RegisteredTool(definition, entry.provider, tool.name)
                if definition.name in chosen:
                    raise _collision(definition.name, chosen[definition.name], registered)
                chosen[definition.name] = registered
    if unused_renames:
        name = next(iter(unused_renames))
        raise ConfigError(f"rename names tool '{name}', which no plugin offers")
    if not chosen and not settings.builtins:
        raise ConfigError(
            "no tools to serve: the built-ins are off and no plugin contributed a tool",
            code=f"{PROXY_CODE}.EMPTY_PROXY",
        )
    return Registry(chosen.values())
