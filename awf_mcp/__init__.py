"""awf-mcp: a plugin-driven MCP tool server for AI coding agents.

The public plugin API lives here:

* :data:`hookimpl` — mark a plugin's hook implementations;
* :func:`tool` — turn a typed function into a tool (schema from type hints);
* :func:`prompt`, :func:`resource` — turn a function into a prompt, a resource or a resource
  template (arguments and description from the signature and the docstring);
* :class:`ToolProvider` — the protocol for dynamic tool sets, with
  :class:`ToolDefinition`, :class:`ToolResult`, :class:`ToolContent`,
  :class:`ToolAnnotations`;
* :class:`PluginContext` — what the ``awf_mcp_register_tools`` hook receives;
* :class:`ToolError` — raise it for an error the model should read verbatim;
* :class:`AskUser` — what a policy hook returns to have the user confirm a call;
* :func:`current_call` — progress reporting and the cancellation flag.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # not typing's: importing typing would cost the keeper's start (see _HOMES)
if TYPE_CHECKING:
    from typing import Any

    from awf_mcp.authoring import prompt, resource, tool
    from awf_mcp.hookspecs import hookimpl
    from awf_mcp.ports import (
        AskUser,
        CallContext,
        PluginContext,
        ToolAnnotations,
        ToolContent,
        ToolDefinition,
        ToolError,
        ToolProvider,
        ToolResult,
        current_call,
    )

__version__ = "0.1.0"

__all__ = [
    "AskUser",
    "CallContext",
    "Caller",
    "PluginContext",
    "ToolAnnotations",
    "ToolContent",
    "ToolDefinition",
    "ToolError",
    "ToolProvider",
    "ToolResult",
    "__version__",
    "current_call",
    "hookimpl",
    "prompt",
    "resource",
    "tool",
]

_NOT_IN_PORTS = {
    "tool": "awf_mcp.authoring",
    "prompt": "awf_mcp.authoring",
    "resource": "awf_mcp.authoring",
    "hookimpl": "awf_mcp.hookspecs",
}
_HOMES = {name: _NOT_IN_PORTS.get(name, "awf_mcp.ports") for name in __all__ if name != "__version__"}
"""Where each public name is defined. It is imported on first use, so importing a submodule
(the Bash keeper imports one per command) does not load pluggy and the plugin API with it."""


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'awf_mcp' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value
