"""A stdio upstream's tools/call beside the SDK session: one line out, its answer taken before the session."""

from __future__ import annotations

import json
import math
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from awf_mcp.wire.clientdirect import FIRST_ID, DirectRequests

pytestmark = pytest.mark.anyio


class Stdin:
    """What DirectRequests writes to: the lines, as JSON."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        assert data.endswith(b"\n") and data.count(b"\n") == 1
        self.lines.append(json.loads(data))

    async def drain(self) -> None:
        return None


def opened() -> tuple[DirectRequests, Stdin]:
    direct, stdin = DirectRequests(), Stdin()
    direct.attach(stdin)  # type: ignore[arg-type]
    return direct, stdin


def answer(request_id: Any, result: dict[str, Any]) -> types.JSONRPCMessage:
    return types.jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "id": request_id, "result": result}
    )


async def test_a_request_is_one_line_and_its_answer_is_taken_from_the_session() -> None:
    direct, stdin = opened()
    results: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await direct.request("tools/call", {"name": "echo", "arguments": {"m": "é"}}))

        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        [line] = stdin.lines
        assert line == {
            "jsonrpc": "2.0",
            "id": FIRST_ID,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"m": "é"}},
        }
        assert direct.settle(answer(FIRST_ID, {"content": []})) is True
    assert results == [{"content": []}]


async def test_the_sessions_messages_are_not_taken() -> None:
    direct, _ = opened()
    assert direct.settle(answer(0, {})) is False
    assert direct.settle(answer(7, {})) is False
    assert direct.settle(answer(str(FIRST_ID - 1), {})) is False
    assert direct.settle(answer(f"x{FIRST_ID}", {})) is False
    request = types.jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "id": FIRST_ID, "method": "roots/list"}
    )
    assert direct.settle(request) is False


async def test_an_error_answer_is_the_sessions_error() -> None:
    direct, _ = opened()
    failures: list[MCPError] = []

    async def call() -> None:
        try:
            await direct.request("tools/call", {"name": "x"})
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        error = {"jsonrpc": "2.0", "id": FIRST_ID, "error": {"code": -32602, "message": "no such tool"}}
        assert direct.settle(types.jsonrpc_message_adapter.validate_python(error))
    [failure] = failures
    assert failure.error.code == -32602 and failure.error.message == "no such tool"


async def test_a_connection_that_ends_fails_the_waiting_request_and_the_next() -> None:
    direct, _ = opened()
    failures: list[MCPError] = []

    async def call() -> None:
        try:
            await direct.request("tools/call", {"name": "x"})
        except MCPError as exc:
            failures.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        direct.close()
    assert [f.error.code for f in failures] == [types.CONNECTION_CLOSED]
    assert not direct.usable
    with pytest.raises(MCPError):
        await direct.request("tools/call", {"name": "x"})


async def test_a_cancelled_request_is_cancelled_upstream_and_its_late_answer_dropped() -> None:
    direct, stdin = opened()
    with anyio.move_on_after(0.05):
        await direct.request("tools/call", {"name": "slow"})
    request, notice = stdin.lines
    assert notice == {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": request["id"], "reason": "the caller cancelled the request"},
    }
    assert direct.settle(answer(request["id"], {"content": []})) is True  # not handed to the session


async def test_arguments_that_are_not_json_write_nothing() -> None:
    direct, stdin = opened()
    with pytest.raises(ValueError):
        await direct.request("tools/call", {"name": "x", "arguments": {"n": math.nan}})
    assert stdin.lines == []


async def test_an_id_echoed_as_a_string_is_the_same_id() -> None:
    direct, _ = opened()
    results: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await direct.request("tools/call", {"name": "echo"}))

        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        assert direct.settle(answer(str(FIRST_ID), {"content": []})) is True
    assert results == [{"content": []}]


async def test_an_answer_is_settled_when_the_sessions_reader_reaches_it_after_what_came_before() -> None:
    from mcp.shared.message import SessionMessage

    direct, _ = opened()
    send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](8)
    reads = direct.reads(receive)
    log = types.jsonrpc_message_adapter.validate_python(
        {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}}
    )
    results: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await direct.request("tools/call", {"name": "echo"}))

        group.start_soon(call)
        await anyio.wait_all_tasks_blocked()
        for message in (log, answer(FIRST_ID, {"content": []}), answer(3, {})):
            send.send_nowait(SessionMessage(message))
        send.close()
        await anyio.wait_all_tasks_blocked()
        assert results == []  # nobody has read yet: the answer waits behind the log message
        first = await reads.receive()
        assert isinstance(first, SessionMessage) and first.message is log and results == []
        rest = [item async for item in reads]  # the direct answer is taken out, the session's stays
        assert [item.message.id for item in rest if isinstance(item, SessionMessage)] == [3]  # type: ignore[union-attr]
    assert results == [{"content": []}]
