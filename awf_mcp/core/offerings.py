"""A provider of prompts and resources, and its prompts and reads as the call path runs them.

Contract
--------
* A provider offers prompts, resources or resource templates when it has the methods of
  :class:`OfferingProvider` (upstream servers; plugins through :mod:`awf_mcp.authoring`).
* The catalog (:mod:`awf_mcp.core.catalog`) runs a prompt's get and a resource's read through
  the call path of tools (:class:`~awf_mcp.core.calls.ToolInvoker`), as the ``call_tool`` of
  a :class:`PromptRunner` (each prompt a tool whose arguments are string properties) or of a
  :class:`ResourceRunner` (the URI its one argument).
* Either result passes :func:`fit_contents`: its text is cut to the call's output budget
  (:mod:`awf_mcp.budget`) with one note, each message keeping its role and each content its URI.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from awf_mcp import budget
from awf_mcp.ports import (
    PROMPT_ROLES,
    PromptDefinition,
    ResourceDefinition,
    ToolContent,
    ToolDefinition,
    ToolResult,
)


@runtime_checkable
class OfferingProvider(Protocol):
    """A provider of prompts and resources (upstream servers, plugins)."""

    def list_prompts(self) -> Sequence[PromptDefinition]:
        """The prompts, named ``<plugin>_<prompt>``."""
        ...

    def list_resources(self) -> Sequence[ResourceDefinition]:
        """The resources."""
        ...

    def list_resource_templates(self) -> Sequence[ResourceDefinition]:
        """The resource templates."""
        ...

    async def get_prompt(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """The prompt's messages (see :class:`~awf_mcp.ports.PromptDefinition`)."""
        ...

    async def read_resource(self, uri: str) -> ToolResult:
        """The resource's contents (see :class:`~awf_mcp.ports.ResourceDefinition`)."""
        ...


def _prompt_tool(prompt: PromptDefinition) -> ToolDefinition:
    """A prompt as the registry and the call path know items: its arguments as string properties."""
    properties = {
        a.name: {"type": "string", **({"description": a.description} if a.description else {})}
        for a in prompt.arguments
    }
    required = [a.name for a in prompt.arguments if a.required]
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return ToolDefinition(
        name=prompt.name, description=prompt.description, input_schema=schema, source=prompt.source
    )


class PromptRunner:
    """A provider's prompts as the call path runs them (``call_tool`` gets the prompt, fitted)."""

    def __init__(self, provider: OfferingProvider) -> None:
        self.provider = provider

    def list_tools(self) -> list[ToolDefinition]:
        return [_prompt_tool(prompt) for prompt in self.provider.list_prompts()]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return fit_contents(await self.provider.get_prompt(name, arguments))

    def close(self) -> None:
        return None


class ResourceRunner:
    """One provider's resource reads as the call path runs them (``call_tool`` reads, fitted)."""

    def __init__(self, provider: OfferingProvider) -> None:
        self.provider = provider

    def list_tools(self) -> list[ToolDefinition]:
        return []

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        return fit_contents(await self.provider.read_resource(str(arguments.get("uri", name))))

    def close(self) -> None:
        return None


def fit_contents(result: ToolResult) -> ToolResult:
    """``result``'s text (of every item, resource contents included) cut to the call's output budget,
    with one note: the items keep their type, URI and role; an item left without room is dropped."""
    limit = budget.current_budget()
    total = sum(budget.size(item.text) for item in result.content)
    if result.is_error or total <= limit:
        return result
    room = max(limit - 400, 0)
    kept: list[ToolContent] = []
    roles = list((result.structured_content or {}).get(PROMPT_ROLES) or [])
    kept_roles: list[str] = []
    shown = 0
    for index, item in enumerate(result.content):
        if item.text and room <= 0:
            continue
        if item.text:
            text = budget.head_lines(item.text, room)
            room -= budget.size(text)
            shown += budget.size(text)
            item = replace(item, text=text)
        kept.append(item)
        kept_roles.append(roles[index] if index < len(roles) else "user")
    note = budget.note(
        f"output cut to {shown:,} of {total:,} bytes to fit this client's output budget of {limit:,} bytes"
    )
    last = kept[-1] if kept else None
    if last is not None and last.type == "resource" and not last.data:
        kept[-1] = replace(last, text=last.text + "\n" + note)
    else:
        kept.append(ToolContent.of_text(note))
        kept_roles.append("user")
    structured = result.structured_content
    if isinstance(structured, Mapping) and PROMPT_ROLES in structured:
        structured = {**structured, PROMPT_ROLES: kept_roles}
    return ToolResult(content=kept, is_error=result.is_error, structured_content=structured)
