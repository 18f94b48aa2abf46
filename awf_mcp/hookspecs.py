"""The pluggy hook specifications of awf-mcp (project name and entry-point group ``awf_mcp``).

A plugin is a module with functions marked ``@awf_mcp.hookimpl`` whose names
match the specs below. Hooks take keyword arguments only, so adding one later
breaks no plugin: an implementation may accept any subset of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

from awf_mcp.ports import AskUser, Caller, PluginContext

PROJECT_NAME = "awf_mcp"
"""pluggy project name."""
ENTRY_POINT_GROUP = PROJECT_NAME
"""The entry-point group plugins declare (``[project.entry-points.awf_mcp]``)."""

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Called once at start-up, per plugin: contribute tools with ``plugin.register(...)``."""


@hookspec
def awf_mcp_register_prompts(plugin: PluginContext) -> None:
    """Called once at start-up, per plugin, after ``awf_mcp_register_tools``: contribute prompts with
    ``plugin.register(fn)`` of ``@awf_mcp.prompt`` functions (named ``<plugin>_<prompt>`` and merged
    like tools). Registering them from ``awf_mcp_register_tools`` works too."""


@hookspec
def awf_mcp_register_resources(plugin: PluginContext) -> None:
    """Called once at start-up, per plugin: contribute resources and resource templates with
    ``plugin.register(fn)`` of ``@awf_mcp.resource(uri)`` functions (or a provider object with
    ``list_resources``, ``list_resource_templates``, ``read_resource``, ``list_prompts`` and
    ``get_prompt``, for sets that change). A URI two providers offer is read from the first."""


@hookspec
def awf_mcp_instructions() -> str | None:
    """Called once at start-up: a short paragraph for the server's instructions, or ``None``.

    Clients show the instructions to the model before its first call: say what the plugin's
    tools are for and how to use them well, in a few sentences.
    """


@hookspec
def awf_mcp_authorize_call(
    tool: str, source: str, arguments: Mapping[str, Any], kind: str, caller: Caller
) -> str | AskUser | None:
    """Called before every tool call; return a reason string to deny it, ``None`` to allow.

    ``caller`` (a :class:`~awf_mcp.ports.Caller`) says who made the call: ``kind`` ``local``
    on stdio, ``anonymous`` on HTTP without a token, ``token`` with ``token_name`` for a
    static token, ``oauth`` with ``subject``, ``issuer``, ``client_id`` and the configured
    ``claims`` (``caller.groups``) for an authorization server's access token. An
    implementation that does not take ``caller`` is asked alike for every caller.

    Getting a prompt and reading a resource ask too: ``kind`` tells them apart (``tool`` for a
    call, ``prompt`` for ``prompts/get`` with ``tool`` the prompt's name, ``resource`` for
    ``resources/read`` with ``tool`` the URI and ``arguments`` ``{"uri": URI}``). An
    implementation that does not take ``kind`` is asked about every one of them alike.

    Return ``AskUser(reason)`` to have the user confirm the call first: the tool, its
    arguments (redacted as in the audit log) and ``reason`` are put to the user through
    the agent's client (MCP elicitation), and the call runs only on an explicit yes. A
    client that cannot ask gets a denial that says why. Any plugin's denial wins over asking.
    """


@hookspec
def awf_mcp_authorize_path(tool: str, source: str, path: str) -> str | None:
    """Called for every resolved path a built-in file tool or Bash ``cwd`` is about to touch.

    ``path`` is absolute with every symbolic link followed (``.env/`` and
    ``sub/../.env`` both arrive as ``/root/.env``); Grep and Glob ask about every
    file and directory their walk would read or list. Return a reason string to
    refuse the path (a path argument is refused with it, a walked entry is
    skipped), ``None`` to allow it. It runs in the tool's worker thread, often:
    keep it fast.
    """
