"""The SDK client adapter's mapping: upstream content and tools into domain types and back, losslessly."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from pydantic import TypeAdapter

from awf_mcp.wire.clientmapping import content_from_mcp, result_from_mcp, tool_from_mcp
from awf_mcp.wire.mapping import content_to_mcp, result_to_mcp

BLOCK: TypeAdapter[Any] = TypeAdapter(types.ContentBlock)

WIRE_BLOCKS = [
    {"type": "text", "text": "plain"},
    {
        "type": "text",
        "text": "noted",
        "annotations": {"audience": ["user"], "priority": 0.5},
        "_meta": {"k": 1},
    },
    {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
    {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav", "annotations": {"priority": 1}},
    {"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "hello"}},
    {"type": "resource", "resource": {"uri": "blob://b", "blob": "AAEC", "_meta": {"x": "y"}}},
    {
        "type": "resource_link",
        "uri": "file:///c.gz",
        "name": "c.gz",
        "title": "C",
        "description": "a link",
        "mimeType": "application/gzip",
        "size": 12,
    },
]


@pytest.mark.parametrize("wire", WIRE_BLOCKS, ids=lambda w: w["type"])
def test_every_content_block_passes_through_whole(wire: dict[str, Any]) -> None:
    block = BLOCK.validate_python(wire, by_name=False)
    relayed = content_to_mcp(content_from_mcp(block))
    assert relayed.model_dump(by_alias=True, mode="json", exclude_none=True) == block.model_dump(
        by_alias=True, mode="json", exclude_none=True
    )


def test_a_result_keeps_its_error_flag_and_structured_content() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="22 C")], is_error=True, structured_content={"temperature": 22}
    )
    relayed = result_to_mcp(result_from_mcp(result))
    assert relayed.is_error is True and relayed.structured_content == {"temperature": 22}
    assert relayed.content == result.content


def test_a_tool_keeps_description_schemas_annotations_and_title() -> None:
    tool = types.Tool(
        name="status",
        title="Git status",
        description="Show the status.",
        input_schema={"type": "object", "properties": {"repo": {"type": "string"}}},
        output_schema={"type": "object", "properties": {"clean": {"type": "boolean"}}},
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
    )
    definition = tool_from_mcp(tool, "server:git")
    assert definition.name == "status" and definition.source == "server:git"
    assert definition.description == "Show the status."
    assert definition.input_schema == tool.input_schema and definition.output_schema == tool.output_schema
    assert definition.annotations is not None
    assert (
        definition.annotations.title,
        definition.annotations.read_only,
        definition.annotations.open_world,
    ) == (
        "Git status",
        True,
        False,
    )


def test_an_http_failure_is_described_by_its_cause() -> None:
    import socket
    import ssl

    import httpx2

    from awf_mcp.wire.clienthttp import describe_http_failure

    def failure(cause: BaseException) -> httpx2.ConnectError:
        try:
            try:
                raise cause
            except BaseException as inner:
                raise httpx2.ConnectError("All connection attempts failed") from inner
        except httpx2.ConnectError as outer:
            return outer

    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate"
    url = "https://mcp.example.com/mcp"
    assert describe_http_failure(failure(untrusted), url) == (
        "TLS: the certificate of mcp.example.com is not trusted (self-signed certificate)"
    )
    gone = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert describe_http_failure(failure(gone), url) == (
        "name not resolved: mcp.example.com (Name or service not known)"
    )
    refused = ConnectionRefusedError(111, "Connect call failed")
    assert describe_http_failure(failure(refused), url) == (
        "connection refused at mcp.example.com:443 (nothing listens there)"
    )
    assert describe_http_failure(httpx2.ConnectTimeout("timed out"), url) == (
        "no answer from mcp.example.com in time (ConnectTimeout)"
    )
