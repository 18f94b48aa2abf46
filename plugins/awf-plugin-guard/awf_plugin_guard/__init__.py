"""awf-plugin-guard: deny tool calls whose arguments match configured patterns, or ask first.

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
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from awf_mcp import AskUser, PluginContext, hookimpl

DEFAULT_DENY_BASH = (
    r"\brm\s+(-[a-zA-Z]*[rf][a-zA-Z]*\s+)+(/|~|\$HOME)(\s|$)",
    r"\bgit\s+push\b.*(--force\b|-f\b)",
    r"\b(curl|wget)\b[^|]*\|\s*(sudo\s+)?(ba|z)?sh\b",
)
PATH_ARGUMENTS = {"Read": "path", "Write": "path", "Edit": "path", "Glob": "pattern", "Grep": "path"}

_rules: dict[str, list[re.Pattern[str]]] = {"bash": [], "ask_bash": [], "paths": []}


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


@hookimpl
def awf_mcp_authorize_call(tool: str, source: str, arguments: Mapping[str, Any]) -> str | AskUser | None:
    """Deny a built-in Bash command or path argument that matches a rule; ask about an ``ask_bash`` match."""
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
