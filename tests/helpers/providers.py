"""In-process providers for unit tests of the registry, the call path and the adapter."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from awf_mcp.ports import ToolAnnotations, ToolContent, ToolDefinition, ToolError, ToolResult

OBJECT = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}


def definition(name: str, source: str = "plugin:demo", **extra: Any) -> ToolDefinition:
    """A definition with the usual one-string-argument schema."""
    return ToolDefinition(name=name, description=f"{name} tool", input_schema=OBJECT, source=source, **extra)


class StaticProvider:
    """Lists fixed definitions and answers by name from a table of behaviours."""

    def __init__(self, *definitions: ToolDefinition, answers: Mapping[str, Any] | None = None) -> None:
        self.definitions = list(definitions)
        self.answers = dict(answers or {})
        self.closed = 0
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def list_tools(self) -> list[ToolDefinition]:
        return self.definitions

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        self.calls.append((name, dict(arguments)))
        answer = self.answers.get(name, ToolResult.text(f"{name}:{arguments.get('text', '')}"))
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(arguments)
        return answer

    def close(self) -> None:
        self.closed += 1


class AsyncProvider(StaticProvider):
    """The same, with coroutine methods."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().call_tool(name, arguments)

    async def close(self) -> None:  # type: ignore[override]
        self.closed += 1


IMAGE = ToolResult(content=[ToolContent.of_image(b"\x89PNG\r\n\x1a\n", "image/png")])
ANNOTATED = definition(
    "demo_annotated",
    annotations=ToolAnnotations(title="Annotated", read_only=True, destructive=False, idempotent=True),
)
__all__ = ["ANNOTATED", "IMAGE", "AsyncProvider", "StaticProvider", "ToolError", "definition"]


async def call_with_budget(provider: Any, name: str, budget: int, **arguments: Any) -> str:
    """The text of a successful call of ``name``, made as if by a client whose output budget is ``budget``."""
    from awf_mcp.ports import CallContext, bind_call_context, unbind_call_context

    token = bind_call_context(CallContext(tool_name=name, output_budget=budget))
    try:
        result = await provider.call_tool(name, arguments)
    finally:
        unbind_call_context(token)
    assert isinstance(result, ToolResult) and not result.is_error, result.content
    return "".join(item.text for item in result.content)


async def call_outcome(provider: Any, name: str, arguments: Mapping[str, Any]) -> tuple[bool, str]:
    """``(refused, text)`` of one call: an error result and a raised :class:`ToolError` both count."""
    try:
        result = await provider.call_tool(name, arguments)
    except ToolError as exc:
        return True, str(exc)
    assert isinstance(result, ToolResult)
    return result.is_error, "\n".join(item.text for item in result.content)
