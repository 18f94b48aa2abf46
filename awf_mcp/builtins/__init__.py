"""The built-in tools ``Read``, ``Write``, ``Edit``, ``Bash``, ``Glob`` and ``Grep``.

The plugin loader registers this module as the internal plugin ``builtin``: its
:func:`awf_mcp_register_tools` hook contributes one :class:`BuiltinTools`
provider confined by a :class:`Sandbox` over the server's roots. Importing it
and listing the tools is cheap: RE2 and pathspec are imported by the tools
that need them, on first use.
"""

from __future__ import annotations

from awf_mcp.builtins.provider import BuiltinTools
from awf_mcp.builtins.sandbox import PathRefused, Sandbox
from awf_mcp.hookspecs import hookimpl
from awf_mcp.ports import PluginContext

__all__ = ["BuiltinTools", "PathRefused", "Sandbox", "awf_mcp_register_tools"]


@hookimpl
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Contribute the six built-in tools, confined to ``plugin.roots``."""
    plugin.register(BuiltinTools(Sandbox(plugin.roots)))
