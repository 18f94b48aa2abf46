"""The mapping of awf-mcp's domain types to MCP wire types, within the frame limit.

Mapping
-------
* :class:`~awf_mcp.ports.ToolDefinition` -> ``Tool`` (an empty schema becomes
  ``{"type": "object"}``; annotations become ``*Hint`` fields).
* :class:`~awf_mcp.ports.ToolResult` -> ``CallToolResult`` (text, image, audio,
  embedded resource and resource link items, ``isError``, ``structuredContent``).

Output (threat model: a tool or plugin may return anything)
-----------------------------------------------------------
* Every string mapped to the wire (text, structured content keys and values,
  error messages, progress messages, tool names, descriptions and schemas) has
  its lone surrogates (undecodable bytes of a file name, ``"\\udce9"``)
  replaced by a visible escape (``\\xe9`` for an undecodable byte,
  ``\\ud800`` otherwise), so no such string can fail the encoding.
* A tool result whose encoding would exceed :data:`RESULT_BYTE_LIMIT` becomes an
  ``isError`` result saying how big it was and what the limit is. Its size is
  measured before anything is encoded, string by string, stopping at the limit,
  so the memory used to measure is bounded whatever the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from awf_mcp.ports import (
    PROMPT_ROLES,
    PromptDefinition,
    ResourceDefinition,
    ToolContent,
    ToolDefinition,
    ToolResult,
    visible_text,
)
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES

RESULT_BYTE_LIMIT = MAX_MESSAGE_BYTES - 64 * 1024
"""The largest encoded tool result sent; the rest of the frame limit is kept for the envelope."""


def wire_value(value: Any) -> Any:
    """A JSON-like value with :func:`~awf_mcp.ports.visible_text` applied to every string, keys included."""
    if isinstance(value, str):
        return visible_text(value)
    if isinstance(value, dict):
        return {visible_text(k) if isinstance(k, str) else k: wire_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [wire_value(item) for item in value]
    return value


class ResultTooLarge(Exception):
    """A value's encoding exceeds the byte limit; ``size`` is how much was counted before stopping."""

    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _add_json_size(value: Any, total: int, limit: int) -> int:
    """``total`` plus the JSON size of ``value``; raises :class:`ResultTooLarge` once over ``limit``."""
    if isinstance(value, str):
        if total + len(value) > limit:  # every character takes at least one byte
            raise ResultTooLarge(total + len(value))
        total += len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    elif isinstance(value, dict):
        total += 2
        for key, item in value.items():
            total = _add_json_size(item, _add_json_size(str(key), total + 2, limit), limit)
    elif isinstance(value, list | tuple):
        total += 2
        for item in value:
            total = _add_json_size(item, total + 1, limit)
    else:
        total += len(json.dumps(value, default=str))
    if total > limit:
        raise ResultTooLarge(total)
    return total


def result_size(result: ToolResult, limit: int = RESULT_BYTE_LIMIT) -> int:
    """About how many bytes ``result`` takes as JSON; raises :class:`ResultTooLarge` past ``limit``.

    Strings are measured one at a time and a string longer than the room left
    is never encoded, so measuring needs memory for one string of at most
    ``limit`` characters, whatever the result holds.
    """
    total = 64
    for item in result.content:
        total = _add_json_size(item.text or item.data, total + 48, limit)
        total = _add_json_size(item.mime_type, total, limit)
    if result.structured_content is not None:
        total = _add_json_size(result.structured_content, total + 24, limit)
    return total


def surely_within(result: ToolResult, limit: int = RESULT_BYTE_LIMIT) -> bool:
    """True when ``result`` cannot encode past ``limit``, told without encoding anything.

    A JSON string takes at most 6 bytes a character (``\\uXXXX``), so plain text
    and image items whose characters, times six, fit are within it; anything
    else (structured content, other items) is left to :func:`result_size`.
    """
    if result.structured_content is not None:
        return False
    total = 64
    for item in result.content:
        if item.type not in ("text", "image") or item.extra:
            return False
        total += 64 + 6 * (len(item.text) + len(item.data) + len(item.mime_type))
    return total <= limit


def tool_to_mcp(definition: ToolDefinition) -> types.Tool:
    """The MCP ``Tool`` for a domain definition."""
    schema = wire_value(dict(definition.input_schema)) or {"type": "object"}
    schema.setdefault("type", "object")
    annotations = None
    if definition.annotations is not None:
        a = definition.annotations
        annotations = types.ToolAnnotations(
            title=None if a.title is None else visible_text(a.title),
            read_only_hint=a.read_only,
            destructive_hint=a.destructive,
            idempotent_hint=a.idempotent,
            open_world_hint=a.open_world,
        )
    return types.Tool(
        name=visible_text(definition.name),
        description=visible_text(definition.description),
        input_schema=schema,
        output_schema=wire_value(dict(definition.output_schema)) if definition.output_schema else None,
        annotations=annotations,
        **carried(definition.meta, definition.icons),
    )


def carried(
    meta: Mapping[str, Any] | None, icons: Sequence[Mapping[str, Any]], annotations: Any = None
) -> dict[str, Any]:
    """The ``_meta``, ``icons`` (and resource ``annotations``) of an item, for its MCP type: what an
    upstream gave, every string made encodable; nothing for what it did not give."""
    fields: dict[str, Any] = {}
    if meta:
        fields["_meta"] = wire_value(dict(meta))
    if icons:
        fields["icons"] = [wire_value(dict(icon)) for icon in icons]
    if annotations:
        fields["annotations"] = wire_value(dict(annotations))
    return fields


def content_to_wire(item: ToolContent) -> dict[str, Any]:
    """The MCP wire form (a JSON object) of a domain content item; ``extra`` fields kept."""
    wire: dict[str, Any] = dict(item.extra or {})
    wire["type"] = item.type
    if item.type == "text":
        wire["text"] = item.text
    elif item.type in ("image", "audio"):
        wire.update(data=item.data, mimeType=item.mime_type)
    elif item.type == "resource":
        resource: dict[str, Any] = {"uri": item.uri}
        if item.mime_type:
            resource["mimeType"] = item.mime_type
        if item.data:
            resource["blob"] = item.data
        else:
            resource["text"] = item.text
        wire["resource"] = {**wire.get("resource", {}), **resource}
    else:
        wire.update(uri=item.uri, name=item.name)
        if item.mime_type:
            wire["mimeType"] = item.mime_type
    return wire


_CONTENT_BLOCK: TypeAdapter[types.ContentBlock] = TypeAdapter(types.ContentBlock)


def content_to_mcp(item: ToolContent) -> types.ContentBlock:
    """The MCP content block for a domain content item, every string made encodable."""
    if item.type == "text" and not item.extra:  # ASCII (a flag, no scan) holds no lone surrogate
        return types.TextContent(text=item.text if item.text.isascii() else visible_text(item.text))
    if item.type == "image" and not item.extra:
        return types.ImageContent(data=visible_text(item.data), mime_type=visible_text(item.mime_type))
    return _CONTENT_BLOCK.validate_python(wire_value(content_to_wire(item)), by_name=False)


def result_to_mcp(result: ToolResult, tool_name: str = "the tool") -> types.CallToolResult:
    """The MCP ``CallToolResult`` for a domain result, within :data:`RESULT_BYTE_LIMIT`.

    A result over the limit becomes an ``isError`` result that says so.
    """
    try:
        if not surely_within(result):
            result_size(result)
    except ResultTooLarge as exc:
        result = ToolResult.error(too_large_message(f"the result of {tool_name}", exc.size))
    except (RecursionError, TypeError, ValueError) as exc:
        result = ToolResult.error(f"the result of {tool_name} cannot be encoded as JSON: {exc}")
    return types.CallToolResult(
        content=[content_to_mcp(item) for item in result.content],
        is_error=result.is_error,
        structured_content=wire_value(result.structured_content),
    )


def too_large_message(what: str, size: int) -> str:
    """The sentence for a reply over the frame limit (``size`` may be a lower bound)."""
    return (
        f"{visible_text(what)} is at least {size:,} bytes encoded, over the {MAX_MESSAGE_BYTES:,}-byte "
        "message limit, so it was not sent; ask for less (a narrower path, pattern, range or LIMIT)"
    )


def prompt_to_mcp(prompt: PromptDefinition) -> types.Prompt:
    """The MCP ``Prompt`` for a domain definition."""
    return types.Prompt(
        name=visible_text(prompt.name),
        title=None if prompt.title is None else visible_text(prompt.title),
        description=visible_text(prompt.description) or None,
        arguments=[
            types.PromptArgument(
                name=visible_text(a.name),
                description=visible_text(a.description) or None,
                required=a.required,
            )
            for a in prompt.arguments
        ]
        or None,
        **carried(prompt.meta, prompt.icons),
    )


def resource_to_mcp(resource: ResourceDefinition) -> types.Resource:
    """The MCP ``Resource`` for a domain definition (its URI unchanged)."""
    return types.Resource(
        uri=visible_text(resource.uri),
        name=visible_text(resource.name),
        title=None if resource.title is None else visible_text(resource.title),
        description=visible_text(resource.description) or None,
        mime_type=visible_text(resource.mime_type) or None,
        size=resource.size,
        **carried(resource.meta, resource.icons, resource.annotations),
    )


def template_to_mcp(template: ResourceDefinition) -> types.ResourceTemplate:
    """The MCP ``ResourceTemplate`` for a domain definition (its template unchanged)."""
    return types.ResourceTemplate(
        uri_template=visible_text(template.uri),
        name=visible_text(template.name),
        title=None if template.title is None else visible_text(template.title),
        description=visible_text(template.description) or None,
        mime_type=visible_text(template.mime_type) or None,
        **carried(template.meta, template.icons, template.annotations),
    )


def _within_limit(result: ToolResult, what: str) -> None:
    """Raise :class:`MCPError` saying so when ``result`` would not fit in one frame."""
    try:
        if not surely_within(result):
            result_size(result)
    except ResultTooLarge as exc:
        raise MCPError(code=types.INTERNAL_ERROR, message=too_large_message(what, exc.size)) from None
    except (RecursionError, TypeError, ValueError) as exc:
        raise MCPError(
            code=types.INTERNAL_ERROR, message=f"{what} cannot be encoded as JSON: {exc}"
        ) from None


def _failed(result: ToolResult) -> MCPError:
    text = " ".join(item.text for item in result.content if item.type == "text") or "it failed"
    return MCPError(code=types.INTERNAL_ERROR, message=visible_text(text))


def prompt_result_to_mcp(result: ToolResult, name: str) -> types.GetPromptResult:
    """The MCP ``GetPromptResult`` of a prompt result (see :class:`~awf_mcp.ports.PromptDefinition`);
    an error result, or one over the frame limit, raises :class:`MCPError` with its sentence."""
    if result.is_error:
        raise _failed(result)
    _within_limit(result, f"prompt {name}")
    structured = result.structured_content if isinstance(result.structured_content, dict) else {}
    roles = list(structured.get(PROMPT_ROLES) or [])
    messages = [
        types.PromptMessage(
            role="assistant" if index < len(roles) and roles[index] == "assistant" else "user",
            content=content_to_mcp(item),
        )
        for index, item in enumerate(result.content)
    ]
    description = structured.get("description")
    return types.GetPromptResult(
        description=visible_text(description) if isinstance(description, str) and description else None,
        messages=messages,
    )


def read_result_to_mcp(result: ToolResult, uri: str) -> types.ReadResourceResult:
    """The MCP ``ReadResourceResult`` of a read (``resource`` items; a ``text`` item, such as the note
    of a cut, is text of ``uri``); an error result, or one over the frame limit (a large blob), raises
    :class:`MCPError` with its sentence."""
    if result.is_error:
        raise _failed(result)
    _within_limit(result, f"resource {uri}")
    contents: list[types.TextResourceContents | types.BlobResourceContents] = []
    for item in result.content:
        at = visible_text(item.uri or uri)
        mime = visible_text(item.mime_type) or None
        if item.type == "resource" and item.data:
            contents.append(types.BlobResourceContents(uri=at, mime_type=mime, blob=visible_text(item.data)))
        elif item.type in ("resource", "text"):
            contents.append(types.TextResourceContents(uri=at, mime_type=mime, text=visible_text(item.text)))
        elif item.data:
            contents.append(types.BlobResourceContents(uri=at, mime_type=mime, blob=visible_text(item.data)))
    return types.ReadResourceResult(contents=contents)
