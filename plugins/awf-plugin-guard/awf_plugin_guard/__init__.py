"""awf-plugin-guard: deny tool calls whose arguments match configured patterns, or ask first,
and keep chosen tools to callers in chosen groups.

The plugin shows awf-mcp's policy hook. ``awf_mcp_register_tools`` contributes no
tools; it only reads the plugin's settings (``deny_bash``, ``ask_bash``, ``deny_paths``:
lists of regular expressions, or ``;``-separated strings from environment variables).
``awf_mcp_authorize_call`` then runs before every call and returns a reason to
deny it, ``AskUser(reason)`` to have the user confirm it first (a Bash command
matching ``ask_bash``; ``deny_bash`` wins), or ``None`` to let it through: it checks a
Bash command and the raw path argument of the file tools. ``awf_mcp_authorize_path`` applies ``deny_paths`` to
every resolved path the built-in tools touch: each path argument after ``..`` and
symbolic links are followed (so ``.env/.`` or ``sub/../.env`` are caught as
``<root>/.env``), Bash's ``cwd``, and every file and directory Grep and Glob walk
(a denied one is skipped, so its content never shows).

``tool_groups`` (a table of tool name or glob to a list of groups, or the string
``Bash=shell,admins;Write=devs`` from an environment variable) keeps each listed tool to
the callers of ``serve --transport http`` in one of its groups: an access token whose
``groups`` claim names one, or a static token listed as ``token:NAME``. Every other HTTP
caller is denied; the local user (stdio, ``awf-mcp tools call``) is not subject to it.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

from awf_mcp import AskUser, Caller, PluginContext, hookimpl

DEFAULT_DENY_BASH = (
    r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\$HOME)(\s|$)",
    r"\bgit\s+push\b.*(--force\b|-f\b)",
    r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b",
)
PATH_ARGUMENTS = {"Read": "path", "Write": "path", "Edit": "path", "Glob": "pattern", "Grep": "path"}

_rules: dict[str, list[re.Pattern[str]]] = {"bash": [], "ask_bash": [], "paths": []}
_tool_groups: dict[str, frozenset[str]] = {}


def _groups(value: Any) -> dict[str, frozenset[str]]:
    """``tool_groups`` as {tool name or glob: groups}: a table, or ``TOOL=G,G;TOOL=G`` (environment)."""
    if isinstance(value, str):
        table: dict[str, Any] = {}
        for item in value.split(";"):
            if not item.strip():
                continue
            tool, equals, listed = item.partition("=")
            if not equals or not tool.strip():
                raise ValueError(f"guard setting tool_groups: {item.strip()!r} is not TOOL=GROUP,GROUP")
            table[tool.strip()] = [group.strip() for group in listed.split(",") if group.strip()]
        value = table
    if not isinstance(value, Mapping):
        raise ValueError("guard setting tool_groups must map tool names to lists of groups")
    groups: dict[str, frozenset[str]] = {}
    for tool, listed in value.items():
        if isinstance(listed, str):
            listed = [listed]
        if not isinstance(listed, list) or not all(isinstance(group, str) for group in listed):
            raise ValueError(f"guard setting tool_groups: the groups of {tool!r} must be a list of strings")
        groups[str(tool)] = frozenset(listed)
    return groups


def _group_refusal(tool: str, caller: Caller) -> str | None:
    """Why ``caller`` may not call ``tool`` under ``tool_groups``; ``None`` when it may."""
    if caller.kind == "local":
        return None
    for pattern, allowed in _tool_groups.items():
        if not fnmatch.fnmatchcase(tool, pattern):
            continue
        held = set(caller.groups)
        if caller.token_name is not None:
            held.add(f"token:{caller.token_name}")
        if held & allowed:
            return None
        who = caller.subject or (f"token {caller.token_name}" if caller.token_name else "an anonymous caller")
        groups = ", ".join(sorted(allowed))
        return f"{tool} is for the groups {groups} (tool_groups), and {who} is in none of them"
    return None


def _patterns(value: Any, setting: str) -> list[re.Pattern[str]]:
    items = value.split(";") if isinstance(value, str) else list(value)
    compiled = []
    for item in items:
        if not isinstance(item, str) or not item.strip():
            continue
        try:
            compiled.append(re.compile(item.strip()))
        except re.error as exc:
            raise ValueError(
                f"guard setting {setting}: pattern {item!r} is not a valid regex ({exc})"
            ) from None
    return compiled


@hookimpl
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Read the rules from the plugin's settings; no tools are contributed."""
    _rules["bash"] = _patterns(plugin.setting("deny_bash", list(DEFAULT_DENY_BASH)), "deny_bash")
    _rules["ask_bash"] = _patterns(plugin.setting("ask_bash", []), "ask_bash")
    _rules["paths"] = _patterns(plugin.setting("deny_paths", []), "deny_paths")
    _tool_groups.clear()
    _tool_groups.update(_groups(plugin.setting("tool_groups", {})))


@hookimpl
def awf_mcp_authorize_call(
    tool: str, source: str, arguments: Mapping[str, Any], caller: Caller
) -> str | AskUser | None:
    """Deny a tool to a caller outside its ``tool_groups``, a built-in Bash command or path argument
    that matches a rule; ask about an ``ask_bash`` match."""
    refusal = _group_refusal(tool, caller)
    if refusal is not None:
        return refusal
    if source != "builtin":
        return None
    ask: AskUser | None = None
    if tool == "Bash":
        command = str(arguments.get("command", ""))
        for pattern in _rules["bash"]:
            if pattern.search(command):
                return f"the command matches the deny_bash rule {pattern.pattern!r}"
        for pattern in _rules["ask_bash"]:
            if pattern.search(command):
                ask = AskUser(f"the command matches the ask_bash rule {pattern.pattern!r}")
                break
    key = PATH_ARGUMENTS.get(tool)
    if key and arguments.get(key) is not None:
        value = str(arguments[key])
        for pattern in _rules["paths"]:
            if pattern.search(value):
                return f"the {key} matches the deny_paths rule {pattern.pattern!r}"
    return ask


@hookimpl
def awf_mcp_authorize_path(tool: str, source: str, path: str) -> str | None:
    """Deny a resolved path that matches a ``deny_paths`` rule."""
    for pattern in _rules["paths"]:
        if pattern.search(path):
            return f"the path matches the deny_paths rule {pattern.pattern!r}"
    return None
