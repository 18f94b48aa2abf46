"""The SDK adapter in-process: mapping to MCP types, error paths, and the stdio framing over real pipes."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.registry import RegisteredTool, Registry
from awf_mcp.ports import ToolDefinition, ToolResult, visible_text
from awf_mcp.wire import server as server_module
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES, StdioWire
from awf_mcp.wire.mapping import RESULT_BYTE_LIMIT, ResultTooLarge, result_size, result_to_mcp, tool_to_mcp
from awf_mcp.wire.server import McpServer
from awf_mcp.wire.stdio import encode_reply, frame_error, json_problem
from tests.helpers.providers import ANNOTATED, IMAGE, StaticProvider, definition

pytestmark = pytest.mark.anyio


def make_server(provider: StaticProvider) -> McpServer:
    tools = [RegisteredTool(d, provider, d.name) for d in provider.list_tools()]
    return McpServer(ToolInvoker(Registry(tools), timeout_seconds=5), version="9.9")


def demo_provider() -> StaticProvider:
    def explode(arguments: Any) -> ToolResult:
        raise RuntimeError("inner")

    return StaticProvider(
        definition("demo_echo"),
        definition("demo_image"),
        definition("demo_structured"),
        definition("demo_raise"),
        ANNOTATED,
        answers={
            "demo_image": IMAGE,
            "demo_structured": ToolResult(
                content=ToolResult.text('{"a": 1}').content, structured_content={"a": 1}
            ),
            "demo_raise": explode,
        },
    )


def test_an_empty_schema_becomes_an_object_schema() -> None:
    tool = tool_to_mcp(ToolDefinition(name="x_y", description="d", input_schema={}))
    assert tool.input_schema == {"type": "object"}


def test_annotations_become_hints() -> None:
    tool = tool_to_mcp(ANNOTATED)
    assert tool.annotations is not None
    assert (tool.annotations.read_only_hint, tool.annotations.destructive_hint) == (True, False)
    assert tool.annotations.title == "Annotated"


async def test_in_memory_client_lists_and_calls() -> None:
    server = make_server(demo_provider())
    async with Client(server.sdk_server) as client:
        listed = await client.list_tools()
        assert [t.name for t in listed.tools] == sorted(t.name for t in listed.tools)
        echo = await client.call_tool("demo_echo", {"text": "hi"})
        assert echo.content[0].text == "demo_echo:hi"  # type: ignore[union-attr]
        image = await client.call_tool("demo_image", {"text": "x"})
        assert image.content[0].type == "image" and image.content[0].mime_type == "image/png"  # type: ignore[union-attr]
        structured = await client.call_tool("demo_structured", {"text": "x"})
        assert structured.structured_content == {"a": 1}
        failed = await client.call_tool("demo_raise", {"text": "x"})
        assert failed.is_error and failed.content[0].text == "RuntimeError: inner"  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="unknown tool 'ghost'"):
            await client.call_tool("ghost", {})


def test_frame_error_distinguishes_parse_errors_from_invalid_requests() -> None:
    parse = json.loads(frame_error(b"{oops"))
    assert parse["error"]["code"] == -32700 and parse["id"] is None
    invalid = json.loads(frame_error(b'{"id": 4, "method": 7}'))
    assert invalid["error"]["code"] == -32600 and invalid["id"] == 4
    odd_id = json.loads(frame_error(b'{"id": true}'))
    assert odd_id["id"] is None


class PipeClient:
    """Raw JSON-RPC lines over a pair of pipes to an in-process server."""

    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd = write_fd
        self.reader = os.fdopen(read_fd, "rb")

    async def send(self, data: bytes | dict[str, Any]) -> None:
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        await anyio.to_thread.run_sync(os.write, self.write_fd, raw + b"\n")

    async def send_large(self, data: bytes) -> None:
        def write_all() -> None:
            view = memoryview(data)
            while view:
                view = view[os.write(self.write_fd, view[: 1 << 20]) :]

        await anyio.to_thread.run_sync(write_all)

    async def receive(self) -> dict[str, Any]:
        line = await anyio.to_thread.run_sync(self.reader.readline)
        assert line, "server closed its output"
        return json.loads(line)

    def close(self) -> None:
        os.close(self.write_fd)


@asynccontextmanager
async def served_over_pipes(server: McpServer) -> AsyncIterator[PipeClient]:
    to_server_r, to_server_w = os.pipe()
    to_client_r, to_client_w = os.pipe()
    client = PipeClient(to_server_w, to_client_r)
    async with anyio.create_task_group() as group:

        async def run() -> None:
            await server.serve_stdio(StdioWire(read_fd=to_server_r, write_fd=to_client_w))
            os.close(to_client_w)

        group.start_soon(run)
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"},
                },
            }
        )
        assert (await client.receive())["result"]["serverInfo"]["name"] == "awf-mcp-server"
        await client.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield client
        client.close()
    os.close(to_server_r)
    client.reader.close()


async def test_framing_answers_bad_lines_and_keeps_serving() -> None:
    async with served_over_pipes(make_server(demo_provider())) as client:
        await client.send(b"this is not json")
        assert (await client.receive())["error"]["code"] == -32700
        await client.send({"id": 9, "nonsense": True})
        reply = await client.receive()
        assert reply["error"]["code"] == -32600 and reply["id"] == 9
        await client.send(b"   ")
        await client.send({"jsonrpc": "2.0", "id": 1, "method": "ping"})
        assert (await client.receive()) == {"jsonrpc": "2.0", "id": 1, "result": {}}


async def test_an_oversized_line_is_refused_and_the_next_one_served() -> None:
    async with served_over_pipes(make_server(demo_provider())) as client:
        huge = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"pad":"' + b"x" * (11 << 20) + b'"}}'
        await client.send_large(huge + b"\n")
        reply = await client.receive()
        assert reply["error"]["code"] == -32600 and "exceeds" in reply["error"]["message"]
        await client.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert (await client.receive())["id"] == 3


async def test_a_request_in_flight_at_eof_is_still_answered() -> None:
    async with served_over_pipes(make_server(demo_provider())) as client:
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "demo_echo", "arguments": {"text": "z"}},
            }
        )
        client.close()
        reply = await client.receive()
        assert reply["id"] == 5 and reply["result"]["content"][0]["text"] == "demo_echo:z"
        client.close = lambda: None  # type: ignore[method-assign]


# ---------------------------------------------------------------- output that must not take the server down


def test_lone_surrogates_become_visible_escapes() -> None:
    assert visible_text("caf\udce9.txt") == "caf\\xe9.txt"
    assert visible_text("a\ud800b\udfff") == "a\\ud800b\\udfff"
    assert visible_text("plain é ✓") == "plain é ✓"


def test_a_result_with_surrogates_everywhere_encodes() -> None:
    result = ToolResult(
        content=ToolResult.text("caf\udce9").content,
        structured_content={"k\udce9": ["v\ud800", {"\udfff": "x"}]},
    )
    encoded = json.loads(result_to_mcp(result).model_dump_json(by_alias=True))
    assert encoded["content"][0]["text"] == "caf\\xe9"
    assert encoded["structuredContent"] == {"k\\xe9": ["v\\ud800", {"\\udfff": "x"}]}


def test_a_definition_with_surrogates_encodes() -> None:
    tool = tool_to_mcp(
        ToolDefinition(
            name="x_y",
            description="reads caf\udce9",
            input_schema={"type": "object", "properties": {"p": {"description": "\ud800"}}},
        )
    )
    encoded = tool.model_dump_json(by_alias=True)
    assert "caf\\\\xe9" in encoded and "\\\\ud800" in encoded


def test_a_result_over_the_limit_is_measured_without_encoding_it_whole() -> None:
    with pytest.raises(ResultTooLarge) as caught:
        result_size(ToolResult.text("x" * (MAX_MESSAGE_BYTES + 1)))
    assert caught.value.size > MAX_MESSAGE_BYTES
    many = ToolResult(content=[ToolResult.text("y" * (1 << 20)).content[0] for _ in range(12)])
    with pytest.raises(ResultTooLarge):
        result_size(many)
    escaped = ToolResult(content=[], structured_content={"data": "\n" * (6 << 20)})
    with pytest.raises(ResultTooLarge):  # 6 Mi characters, 12 MiB once escaped
        result_size(escaped)
    assert result_size(ToolResult.text("z" * 1000)) < 2000


def test_an_oversized_result_becomes_an_error_naming_size_and_limit() -> None:
    mapped = result_to_mcp(ToolResult.text("x" * (20 << 20)), "demo_big")
    assert mapped.is_error
    text = mapped.content[0].text  # type: ignore[union-attr]
    assert "demo_big" in text and "at least 20,97" in text and f"{MAX_MESSAGE_BYTES:,}" in text


def test_a_reply_that_cannot_be_encoded_becomes_an_error_for_its_id() -> None:
    bad = types.JSONRPCResponse(jsonrpc="2.0", id=7, result={"text": "\udce9"})
    reply = json.loads(encode_reply(bad) or b"")
    assert reply["id"] == 7 and reply["error"]["code"] == -32603
    assert "could not be encoded" in reply["error"]["message"]


def test_a_reply_over_the_frame_limit_becomes_an_error_for_its_id() -> None:
    big = types.JSONRPCResponse(jsonrpc="2.0", id="r", result={"text": "x" * MAX_MESSAGE_BYTES})
    frame = encode_reply(big) or b""
    assert len(frame) < 1000
    reply = json.loads(frame)
    assert reply["id"] == "r" and reply["error"]["code"] == -32603
    assert f"{MAX_MESSAGE_BYTES:,}-byte" in reply["error"]["message"]


def test_a_notification_that_cannot_be_encoded_is_dropped() -> None:
    note = types.JSONRPCNotification(jsonrpc="2.0", method="x", params={"m": "\udce9"})
    assert encode_reply(note) is None


async def test_the_output_pump_survives_a_reply_it_cannot_encode(monkeypatch: pytest.MonkeyPatch) -> None:
    def unsanitized(result: ToolResult, tool_name: str = "") -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(text="caf\udce9")], is_error=False)

    monkeypatch.setattr(server_module, "result_to_mcp", unsanitized)
    async with served_over_pipes(make_server(demo_provider())) as client:
        await client.send(
            {
                "jsonrpc": "2.0",
                "id": 4,
                "method": "tools/call",
                "params": {"name": "demo_echo", "arguments": {"text": "a"}},
            }
        )
        reply = await client.receive()
        assert reply["id"] == 4 and reply["error"]["code"] == -32603
        await client.send({"jsonrpc": "2.0", "id": 5, "method": "ping"})
        assert (await client.receive()) == {"jsonrpc": "2.0", "id": 5, "result": {}}


# ---------------------------------------------------------------- what is wrong with a line


def _sdk_problem(data: bytes) -> str | None:
    try:
        types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    except Exception as exc:
        return json_problem(exc)
    return None


@pytest.mark.parametrize("depth", [210, 900, 5000])
def test_json_nested_too_deep_is_a_parse_error_that_says_so(depth: int) -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    reply = json.loads(frame_error(line, _sdk_problem(line)))
    assert reply["error"]["code"] == -32700
    assert "nested too deeply" in reply["error"]["message"]


def test_a_5000_digit_number_is_a_parse_error_that_says_so() -> None:
    line = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"7" * 5000 + b"}}"
    reply = json.loads(frame_error(line, _sdk_problem(line)))
    assert reply["error"]["code"] == -32700 and "number is too long" in reply["error"]["message"]
    fallback = json.loads(frame_error(line))
    assert "number is too long" in fallback["error"]["message"]


def test_valid_json_that_is_not_json_rpc_is_still_an_invalid_request() -> None:
    line = b'{"jsonrpc":"2.0","id":3,"method":7}'
    assert _sdk_problem(line) is None
    assert json.loads(frame_error(line, _sdk_problem(line)))["error"]["code"] == -32600


def test_only_a_result_that_could_pass_the_limit_is_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    import awf_mcp.wire.mapping as mapping_module

    measured: list[ToolResult] = []
    real_size = mapping_module.result_size
    monkeypatch.setattr(
        mapping_module, "result_size", lambda result: measured.append(result) or real_size(result)
    )
    small = ToolResult.text("\n" * (RESULT_BYTE_LIMIT // 6 - 200))  # every character escaped: still within
    assert not result_to_mcp(small).is_error and measured == []
    near = ToolResult.text("\n" * (RESULT_BYTE_LIMIT // 2))  # within, but only measuring can tell
    assert result_to_mcp(near).is_error and measured == [near]
    structured = ToolResult(content=[], structured_content={"a": "b"})
    assert not result_to_mcp(structured).is_error and measured[-1] is structured
