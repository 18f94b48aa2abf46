"""The plugin authoring API: ``@tool``, ``@prompt`` and ``@resource`` functions, and the providers
that serve them.

Purpose
-------
Most plugins are a handful of typed functions. :func:`tool` marks one; the
plugin hands it to ``plugin.register(fn)``; the loader gathers a plugin's
marked functions into one :class:`FunctionToolProvider`. The input schema comes
from the type hints (through pydantic), the description from the docstring.

Public surface
--------------
``tool``                  decorator, bare (``@tool``) or with options
                          (``@tool(name=..., read_only=True)``); returns the
                          function unchanged, with a :class:`ToolSpec` on
                          ``fn.__awf_tool__``.
``ToolSpec``              the options ``@tool`` recorded.
``FunctionToolProvider``  a :class:`~awf_mcp.ports.ToolProvider` over marked functions.
``prompt``, ``resource``  mark a function as a prompt, or as a resource or resource template
                          (:class:`PromptSpec`, :class:`ResourceSpec` on ``fn.__awf_prompt__`` /
                          ``fn.__awf_resource__``); the loader gathers them into one
                          :class:`FunctionOfferingProvider`.
``parse_docstring``       a Google-style docstring split into its description and ``Args:``.

Modules
-------
:mod:`~awf_mcp.authoring.tools`      ``@tool`` and :class:`FunctionToolProvider` (its contract:
                                     names, schemas, calls, return values);
:mod:`~awf_mcp.authoring.offerings`  ``@prompt``, ``@resource`` and :class:`FunctionOfferingProvider`;
:mod:`~awf_mcp.authoring.functions`  what a function says about itself: its name, its docstring;
:mod:`~awf_mcp.authoring.schemas`    pydantic's JSON schemas made plain for agents.

Imports: the standard library, pydantic, anyio and the public face (:mod:`awf_mcp.ports`,
:mod:`awf_mcp.concurrency`, :mod:`awf_mcp.uritemplate`) only.
"""

from awf_mcp.authoring.functions import parse_docstring
from awf_mcp.authoring.offerings import FunctionOfferingProvider, PromptSpec, ResourceSpec, prompt, resource
from awf_mcp.authoring.tools import FunctionToolProvider, ToolSpec, tool

__all__ = [
    "FunctionOfferingProvider",
    "FunctionToolProvider",
    "PromptSpec",
    "ResourceSpec",
    "ToolSpec",
    "parse_docstring",
    "prompt",
    "resource",
    "tool",
]
