"""The stdio framing over real pipes: lines, oversized lines, partial lines, EOF, bounded read-ahead."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import threading
import time
from collections.abc import Iterator

import anyio
import pytest

from awf_mcp.wire import framing
from awf_mcp.wire.framing import Frame, FrameReader, FrameWriter, Oversized

pytestmark = pytest.mark.anyio


@pytest.fixture
def pipe() -> Iterator[tuple[int, int]]:
    read_fd, write_fd = os.pipe()
    yield read_fd, write_fd
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            os.close(fd)


def feed(write_fd: int, *pieces: bytes, pause: float = 0.0, close: bool = True) -> threading.Thread:
    """Write ``pieces`` to the pipe from a thread (pausing between them), then close it."""

    def run() -> None:
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(write_fd, view) :]
            if pause:
                time.sleep(pause)
        if close:
            os.close(write_fd)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


async def collect(read_fd: int, max_bytes: int = framing.MAX_MESSAGE_BYTES) -> list[Frame | Oversized]:
    with anyio.fail_after(20):
        return [item async for item in FrameReader(read_fd, max_bytes).frames()]


async def test_lines_become_frames_without_newlines_and_blank_lines_are_skipped(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b'{"a": 1}\n\n   \n{not json at all\n  padded  \r\n')
    assert await collect(read_fd) == [Frame(b'{"a": 1}'), Frame(b"{not json at all"), Frame(b"padded")]


async def test_a_line_split_across_writes_is_one_frame(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b'{"jsonrpc": "2.', b'0", "id"', b": 1}\n{", b"}\n", pause=0.05)
    assert await collect(read_fd) == [Frame(b'{"jsonrpc": "2.0", "id": 1}'), Frame(b"{}")]


async def test_a_last_line_without_newline_is_delivered_at_eof(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b"one\ntwo")
    assert await collect(read_fd) == [Frame(b"one"), Frame(b"two")]


async def test_eof_at_once_yields_nothing(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    os.close(write_fd)
    assert await collect(read_fd) == []


async def test_an_oversized_line_is_reported_with_its_size_and_the_next_line_served(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b"small\n", b"x" * 5000 + b"\n", b"after\n")
    assert await collect(read_fd, max_bytes=1000) == [Frame(b"small"), Oversized(5000), Frame(b"after")]


async def test_an_oversized_line_cut_by_eof_is_still_reported(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b"y" * 3000)
    assert await collect(read_fd, max_bytes=1000) == [Oversized(3000)]


async def test_a_line_of_exactly_the_limit_is_accepted(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    feed(write_fd, b"z" * 1000 + b"\n", b"z" * 1001 + b"\n")
    assert await collect(read_fd, max_bytes=1000) == [Frame(b"z" * 1000), Oversized(1001)]


async def test_an_oversized_line_is_never_buffered_whole(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    chunk = b"w" * (1 << 20)
    feed(write_fd, *([chunk] * 64), b"\nok\n")
    reader = FrameReader(read_fd, max_bytes=1 << 20)
    with anyio.fail_after(30):
        items = [item async for item in reader.frames()]
    assert items == [Oversized(64 << 20), Frame(b"ok")]


async def test_read_ahead_is_bounded_while_the_consumer_is_slow(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    flags = fcntl.fcntl(write_fd, fcntl.F_GETFL)
    fcntl.fcntl(write_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)
    line = b"q" * 1023 + b"\n"
    accepted = 0
    reader = FrameReader(read_fd)
    frames = reader.frames()
    os.write(write_fd, line)
    with anyio.fail_after(10):
        assert await frames.__anext__() == Frame(line[:-1])
    block = line * 256
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:  # keep writing while the reader thread takes what it may
        try:
            accepted += os.write(write_fd, block)
        except OSError as exc:
            assert exc.errno == errno.EAGAIN
            await anyio.sleep(0.05)
    pipe_capacity = fcntl.fcntl(write_fd, 1032)  # F_GETPIPE_SZ
    bound = pipe_capacity + (framing._READ_AHEAD_CHUNKS + 2) * framing._CHUNK_BYTES
    assert accepted <= bound, f"the reader took {accepted} bytes with nobody consuming (bound {bound})"
    os.close(write_fd)
    with anyio.fail_after(20):
        rest = [item async for item in frames]
    assert len(rest) == accepted // len(line) and all(item == Frame(line[:-1]) for item in rest)


async def test_the_writer_keeps_order_and_drains(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    writer = FrameWriter(write_fd)
    received = bytearray()

    def read_all() -> None:
        while chunk := os.read(read_fd, 1 << 16):
            received.extend(chunk)

    thread = threading.Thread(target=read_all, daemon=True)
    thread.start()
    for index in range(200):
        writer.write(f"{index}\n".encode())
    await writer.drain(timeout=5)
    writer.close()
    os.close(write_fd)
    thread.join(5)
    assert received.decode().split() == [str(index) for index in range(200)]
    assert not writer.broken


async def test_the_writer_notices_a_reader_that_went_away(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    os.close(read_fd)
    writer = FrameWriter(write_fd)
    writer.write(b"lost\n")
    await writer.drain(timeout=5)
    writer.close()
    assert writer.broken
