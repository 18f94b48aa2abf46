"""awf_mcp.wire.clientstdio.LineSink: the SDK client session's write stream on a server's input.

A real pipe stands for the server's stdin: the sink writes each message as a line in the order
sent, holds at most one line past its bound for a server that does not read, and reports a
server that has gone as a broken stream.
"""

from __future__ import annotations

import asyncio
import json
import os

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage

from awf_mcp.wire.clientstdio import WRITE_BUFFER_BYTES, LineSink

pytestmark = pytest.mark.anyio


def notification(index: int, size: int) -> SessionMessage:
    message = types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"n": index, "pad": "x" * size}
    )
    return SessionMessage(message)


async def pipe_writer() -> tuple[int, asyncio.StreamWriter]:
    """A pipe's read end (a descriptor) and a StreamWriter on its write end."""
    read_fd, write_fd = os.pipe()
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(loop), os.fdopen(write_fd, "wb", buffering=0)
    )
    return read_fd, asyncio.StreamWriter(transport, protocol, None, loop)


def read_lines(fd: int, count: int) -> list[bytes]:
    data = b""
    while data.count(b"\n") < count:
        chunk = os.read(fd, 1 << 20)
        assert chunk, "the pipe ended early"
        data += chunk
    return data.splitlines()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_a_server_that_does_not_read_holds_one_line_past_the_bound_and_order_is_kept() -> None:
    read_fd, writer = await pipe_writer()
    sink = LineSink(writer)
    size = 100 * 1024
    try:
        async with anyio.create_task_group() as group:
            for index in range(40):
                group.start_soon(sink.send, notification(index, size))
            await anyio.sleep(0.3)  # nothing reads: the senders are stuck behind the bound
            buffered = writer.transport.get_write_buffer_size()
            assert buffered <= WRITE_BUFFER_BYTES + size + 1024, buffered
            lines = await anyio.to_thread.run_sync(read_lines, read_fd, 40)
        assert [json.loads(line)["params"]["n"] for line in lines] == list(range(40))
    finally:
        writer.close()
        os.close(read_fd)


async def test_a_server_that_has_gone_is_a_broken_stream_and_a_closed_sink_refuses() -> None:
    read_fd, writer = await pipe_writer()
    sink = LineSink(writer)
    await sink.send(notification(0, 10))
    os.close(read_fd)
    with pytest.raises(anyio.BrokenResourceError):
        for index in range(1, 200):  # the closed pipe is seen at the next write or drain
            await sink.send(notification(index, 64 * 1024))
            await anyio.sleep(0.01)
    with pytest.raises(anyio.BrokenResourceError):
        await sink.send(notification(0, 10))
    await sink.aclose()
    with pytest.raises(anyio.ClosedResourceError):
        await sink.send(notification(0, 10))
    writer.close()


async def test_the_first_line_opens_the_connection_once_and_a_failed_opening_breaks_it() -> None:
    read_fd, writer = await pipe_writer()
    opened: list[bytes] = []

    async def opening(first: bytes) -> asyncio.StreamWriter | None:
        opened.append(first)
        await anyio.sleep(0.05)  # the others wait their turn meanwhile
        writer.write(first)
        return writer

    sink = LineSink(opening=opening)
    async with anyio.create_task_group() as group:
        for index in range(3):
            group.start_soon(sink.send, notification(index, 10))
            await anyio.sleep(0)
    assert len(opened) == 1
    lines = await anyio.to_thread.run_sync(read_lines, read_fd, 3)
    assert [json.loads(line)["params"]["n"] for line in lines] == [0, 1, 2]
    writer.close()
    os.close(read_fd)

    async def failing(first: bytes) -> asyncio.StreamWriter | None:
        opened.append(first)
        return None

    broken = LineSink(opening=failing)
    for _ in range(2):
        with pytest.raises(anyio.BrokenResourceError):
            await broken.send(notification(0, 10))
    assert len(opened) == 2  # one more opening, not two
