"""An upstream server's wire types as domain types: what :mod:`awf_mcp.wire.client` reads.

The inverse of :mod:`awf_mcp.wire.mapping` (which maps awf-mcp's own answers onto the wire), for
what an upstream MCP server sends: its tools, prompts, resources and resource templates become
:class:`~awf_mcp.ports.ToolDefinition`, :class:`~awf_mcp.ports.PromptDefinition` and
:class:`~awf_mcp.ports.ResourceDefinition` with their names and URIs unchanged (the provider
prefixes them), their ``_meta`` less :data:`RESERVED_META`; a call's result becomes a
:class:`~awf_mcp.ports.ToolResult` keeping every item, flag and structured value (a content
block's fields without a domain slot go to ``extra``, so the block reaches the agent whole);
a server's capabilities become the set of what it offers besides tools (:func:`offers_of`).

Pure functions over the SDK's types (``mcp_types``): no I/O, nothing kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import mcp_types as types

from awf_mcp.ports import (
    PromptArgument,
    PromptDefinition,
    ResourceDefinition,
    ToolAnnotations,
    ToolContent,
    ToolDefinition,
    ToolResult,
)


def tool_from_mcp(tool: types.Tool, source: str) -> ToolDefinition:
    """The domain definition of an upstream tool, name unchanged (the provider prefixes it)."""
    annotations = None
    hints = tool.annotations
    if hints is not None or tool.title:
        annotations = ToolAnnotations(
            title=(hints.title if hints is not None and hints.title else None) or tool.title,
            read_only=hints.read_only_hint if hints is not None else None,
            destructive=hints.destructive_hint if hints is not None else None,
            idempotent=hints.idempotent_hint if hints is not None else None,
            open_world=hints.open_world_hint if hints is not None else None,
        )
    return ToolDefinition(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema),
        source=source,
        annotations=annotations,
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        meta=upstream_meta(tool.meta),
        icons=icons_from_mcp(tool.icons),
    )


RESERVED_META = frozenset({"anthropic/alwaysLoad", "anthropic/searchHint"})
"""``_meta`` keys that steer the agent's own client (what it loads, what it defers): awf-mcp's to
set for what it serves, never an upstream's."""


def upstream_meta(meta: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """An upstream item's ``_meta``, less :data:`RESERVED_META` (``None`` when nothing is left)."""
    kept = {key: value for key, value in (meta or {}).items() if key not in RESERVED_META}
    return kept or None


def icons_from_mcp(icons: Sequence[types.Icon] | None) -> tuple[dict[str, Any], ...]:
    """An upstream item's ``icons`` as JSON objects (MCP's names)."""
    return tuple(icon.model_dump(by_alias=True, exclude_none=True, mode="json") for icon in icons or ())


def offers_of(capabilities: types.ServerCapabilities) -> frozenset[str]:
    """What a server offers besides tools (:data:`~awf_mcp.core.upstream.session.OFFERS`), from its
    capabilities."""
    offers = set()
    if capabilities.prompts is not None:
        offers.add("prompts")
        if capabilities.prompts.list_changed:
            offers.add("prompts_changed")
    if capabilities.resources is not None:
        offers.add("resources")
        if capabilities.resources.subscribe:
            offers.add("subscribe")
        if capabilities.resources.list_changed:
            offers.add("resources_changed")
    if capabilities.completions is not None:
        offers.add("completions")
    if capabilities.logging is not None:
        offers.add("logging")
    return frozenset(offers)


def context_arguments(params: types.CompleteRequestParams) -> dict[str, str] | None:
    """The already-filled arguments of a completion request, when it has any."""
    return params.context.arguments if params.context is not None else None


def prompt_from_mcp(prompt: types.Prompt, source: str) -> PromptDefinition:
    """The domain definition of an upstream prompt, name unchanged (the provider prefixes it)."""
    return PromptDefinition(
        name=prompt.name,
        description=prompt.description or "",
        arguments=tuple(
            PromptArgument(name=a.name, description=a.description or "", required=bool(a.required))
            for a in prompt.arguments or ()
        ),
        source=source,
        title=prompt.title,
        meta=upstream_meta(prompt.meta),
        icons=icons_from_mcp(prompt.icons),
    )


def resource_from_mcp(resource: types.Resource | types.ResourceTemplate, source: str) -> ResourceDefinition:
    """The domain definition of an upstream resource or resource template, its URI (template) unchanged."""
    template = isinstance(resource, types.ResourceTemplate)
    return ResourceDefinition(
        uri=resource.uri_template if isinstance(resource, types.ResourceTemplate) else resource.uri,
        name=resource.name,
        description=resource.description or "",
        mime_type=resource.mime_type or "",
        source=source,
        template=template,
        title=resource.title,
        size=None if isinstance(resource, types.ResourceTemplate) else resource.size,
        meta=upstream_meta(resource.meta),
        icons=icons_from_mcp(resource.icons),
        annotations=(
            resource.annotations.model_dump(by_alias=True, exclude_none=True, mode="json")
            if resource.annotations is not None
            else None
        ),
    )


def contents_from_mcp(contents: types.TextResourceContents | types.BlobResourceContents) -> ToolContent:
    """One content of a read resource as a ``resource`` item."""
    if isinstance(contents, types.BlobResourceContents):
        return ToolContent(
            type="resource", uri=contents.uri, mime_type=contents.mime_type or "", data=contents.blob
        )
    return ToolContent(
        type="resource", uri=contents.uri, mime_type=contents.mime_type or "", text=contents.text
    )


_KNOWN_CONTENT_FIELDS = {"type", "text", "data", "mimeType", "uri", "name"}


def content_from_mcp(block: Any) -> ToolContent:
    """The domain item for an MCP content block; fields without a domain slot go to ``extra``."""
    if type(block) is types.TextContent and block.annotations is None and block.meta is None:
        return ToolContent(type="text", text=block.text)  # the common case, without a dump
    wire: dict[str, Any] = block.model_dump(by_alias=True, mode="json", exclude_none=True)
    kind = wire["type"]
    extra = {key: value for key, value in wire.items() if key not in _KNOWN_CONTENT_FIELDS}
    if kind == "resource":
        resource = dict(extra.pop("resource"))
        item = ToolContent(
            type="resource",
            uri=resource.pop("uri"),
            mime_type=resource.pop("mimeType", ""),
            text=resource.pop("text", ""),
            data=resource.pop("blob", ""),
        )
        if resource:
            extra["resource"] = resource
    else:
        item = ToolContent(
            type=kind,
            text=wire.get("text", ""),
            data=wire.get("data", ""),
            mime_type=wire.get("mimeType", ""),
            uri=wire.get("uri", ""),
            name=wire.get("name", ""),
        )
    if not extra:
        return item
    return ToolContent(
        type=item.type,
        text=item.text,
        data=item.data,
        mime_type=item.mime_type,
        uri=item.uri,
        name=item.name,
        extra=extra,
    )


def result_from_mcp(result: types.CallToolResult) -> ToolResult:
    """The domain result for an upstream ``CallToolResult``: every item, flag and structured value."""
    return ToolResult(
        content=[content_from_mcp(block) for block in result.content],
        is_error=bool(result.is_error),
        structured_content=result.structured_content,
    )
