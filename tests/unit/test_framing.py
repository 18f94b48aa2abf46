"""The stdio framing over real pipes: lines, oversized lines, partial lines, EOF, bounded read-ahead."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

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


# ---------------------------------------------------------------- which path, and what it leaves behind


def wire_threads() -> set[str]:
    return {thread.name for thread in threading.enumerate() if thread.name.startswith("awf-mcp std")}


def frame_of(index: int, size: int) -> bytes:
    """A frame whose every byte can be checked: its index, then a pattern that depends on it."""
    head = f"{index:06d}:".encode()
    return head + bytes(48 + (index + position) % 26 for position in range(size - len(head) - 1)) + b"\n"


def check_frames(received: bytes, count: int, size: int) -> None:
    lines = received.split(b"\n")
    assert lines[-1] == b"" and len(lines) - 1 == count, (len(lines) - 1, count)
    for index, line in enumerate(lines[:-1]):
        assert line + b"\n" == frame_of(index, size), f"frame {index} lost, cut or interleaved"


async def test_a_pipe_is_read_on_the_event_loop_without_a_thread_or_a_shared_nonblocking_flag(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    frames = FrameReader(read_fd).frames()
    os.write(write_fd, b"one\n")
    with anyio.fail_after(10):
        assert await frames.__anext__() == Frame(b"one")
    assert wire_threads() == set()
    assert os.get_blocking(read_fd), "O_NONBLOCK leaked onto the wire's own descriptor"
    os.write(write_fd, b"two\n")
    os.close(write_fd)
    with anyio.fail_after(10):
        assert [item async for item in frames] == [Frame(b"two")]
    assert os.get_blocking(read_fd)


class CountingLoop:
    """Counts the running loop's ``add_reader`` and ``remove_reader`` calls, and the readiness
    callbacks they register."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.added = self.removed = self.reported = 0
        loop = asyncio.get_running_loop()
        add, remove = loop.add_reader, loop.remove_reader

        def counted_add(fd: int, callback: Any, *args: Any) -> None:
            def reported(*given: Any) -> None:
                self.reported += 1
                callback(*given)

            self.added += 1
            add(fd, reported, *args)

        def counted_remove(fd: int) -> bool:
            self.removed += 1
            return remove(fd)

        monkeypatch.setattr(loop, "add_reader", counted_add)
        monkeypatch.setattr(loop, "remove_reader", counted_remove)


def counted_reader(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> tuple[int, CountingLoop, AsyncIterator[Frame | Oversized]]:
    """The pipe's write end, the loop's counts, and the frames of its read end."""
    read_fd, write_fd = pipe
    return write_fd, CountingLoop(monkeypatch), FrameReader(read_fd).frames()


async def test_the_read_watch_stays_registered_between_requests(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fd, counts, frames = counted_reader(pipe, monkeypatch)
    with anyio.fail_after(20):
        for index in range(50):  # each request arrives while the reader waits for it
            asyncio.get_running_loop().call_soon(os.write, write_fd, b"request %d\n" % index)
            assert await frames.__anext__() == Frame(b"request %d" % index)
        os.close(write_fd)
        assert [item async for item in frames] == []
    assert counts.added == 1  # not once a request
    assert counts.removed == 1  # at the end, before the descriptor is closed


async def test_the_read_watch_does_not_spin_while_the_consumer_is_busy(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    write_fd, counts, frames = counted_reader(pipe, monkeypatch)
    with anyio.fail_after(20):
        os.write(write_fd, b"first\n")
        assert await frames.__anext__() == Frame(b"first")
        os.write(write_fd, b"second\n")  # readable while nobody waits for a frame
        await anyio.sleep(0.3)  # the poll is level-triggered: a watch left registered fires on every pass
        assert counts.reported <= 2
        assert await frames.__anext__() == Frame(b"second")
        os.close(write_fd)
        assert [item async for item in frames] == []


async def test_stdin_in_odd_chunks_gives_the_same_frames(pipe: tuple[int, int]) -> None:
    read_fd, write_fd = pipe
    data = b"".join(frame_of(index, 10 + index * 37 % 3000) for index in range(300))
    sizes = [1, 2, 3, 4093, 1, 65536, 7, 100_000, 5]
    pieces, position = [], 0
    while position < len(data):
        size = sizes[len(pieces) % len(sizes)]
        pieces.append(data[position : position + size])
        position += size
    feed(write_fd, *pieces)
    assert await collect(read_fd) == [Frame(line) for line in data.split(b"\n") if line]


async def test_a_socket_is_served_on_the_loop_and_stays_blocking() -> None:
    import socket

    ours, theirs = socket.socketpair()
    with ours, theirs:
        writer = FrameWriter(ours.fileno())
        frames = FrameReader(ours.fileno()).frames()
        theirs.sendall(b'{"id": 1}\n')
        with anyio.fail_after(10):
            assert await frames.__anext__() == Frame(b'{"id": 1}')
        await writer.send(b'{"id": 1, "result": {}}\n')
        await writer.drain(timeout=5)
        assert theirs.recv(100) == b'{"id": 1, "result": {}}\n'
        assert wire_threads() == set()
        assert ours.getblocking() and os.get_blocking(ours.fileno())
        theirs.shutdown(socket.SHUT_WR)
        with anyio.fail_after(10):
            assert [item async for item in frames] == []
        writer.close()


def spy_on_channels(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """What each reader or writer got from ``_open_channel``: ``None`` means the thread path."""
    opened: list[object] = []
    real = framing._open_channel

    def spy(fd: int, *, writing: bool) -> object:
        opened.append(real(fd, writing=writing))
        return opened[-1]

    monkeypatch.setattr(framing, "_open_channel", spy)
    return opened


async def test_a_regular_file_is_read_by_the_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened = spy_on_channels(monkeypatch)
    source = tmp_path / "input.jsonl"
    source.write_bytes(b'{"a": 1}\n\n{"b": 2}\nlast')
    fd = os.open(source, os.O_RDONLY)
    try:
        assert await collect(fd) == [Frame(b'{"a": 1}'), Frame(b'{"b": 2}'), Frame(b"last")]
    finally:
        os.close(fd)
    assert opened == [None]


async def test_stdout_a_regular_file_is_written_by_the_thread_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    opened = spy_on_channels(monkeypatch)
    target = tmp_path / "out.jsonl"
    fd = os.open(target, os.O_WRONLY | os.O_CREAT)
    try:
        writer = FrameWriter(fd)
        assert opened == [None] and "awf-mcp stdout" in wire_threads()
        for index in range(500):
            await writer.send(frame_of(index, 3000))
        await writer.drain(timeout=10)
        assert writer.backlog == 0
        writer.close()
    finally:
        os.close(fd)
    check_frames(target.read_bytes(), 500, 3000)


# ---------------------------------------------------------------- a reader that is slow, or stops reading


async def test_a_slow_reader_gets_every_frame_in_order_and_the_backlog_stays_bounded(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    writer = FrameWriter(write_fd, max_backlog=200_000)
    received = bytearray()

    def read_slowly() -> None:
        while chunk := os.read(read_fd, 50_000):
            received.extend(chunk)
            time.sleep(0.002)

    thread = threading.Thread(target=read_slowly, daemon=True)
    thread.start()
    largest = 0
    with anyio.fail_after(60):
        for index in range(300):
            await writer.send(frame_of(index, 30_000))  # 9 MB in all, through a pipe of at most 1 MiB
            largest = max(largest, writer.backlog)
        await writer.drain(timeout=30)
    assert writer.backlog == 0 and not writer.broken
    assert largest <= 200_000 + 30_000, f"the backlog reached {largest} bytes"
    writer.close()
    os.close(write_fd)
    thread.join(10)
    check_frames(bytes(received), 300, 30_000)


async def test_a_reader_that_stops_reading_stops_the_sender_until_told_to_stop_waiting(
    pipe: tuple[int, int],
) -> None:
    read_fd, write_fd = pipe
    writer = FrameWriter(write_fd, max_backlog=100_000)
    capacity = fcntl.fcntl(write_fd, 1032)  # F_GETPIPE_SZ
    sent = 0

    async def keep_sending() -> None:
        nonlocal sent
        for index in range(1000):
            await writer.send(frame_of(index, 10_000))
            sent += 1

    async with anyio.create_task_group() as group:
        group.start_soon(keep_sending)
        await anyio.sleep(0.5)
        held = sent
        assert held * 10_000 <= capacity + 100_000 + 10_000, f"{held} frames accepted with nobody reading"
        assert writer.backlog <= 100_000 + 10_000
        await anyio.sleep(0.2)
        assert sent == held, "the sender went on while nobody read"
        writer.stop_waiting()  # input has ended: shutdown may no longer wait for the reader
        with anyio.fail_after(10):
            while sent < 1000:
                await anyio.sleep(0.01)
    received = bytearray()
    os.set_blocking(read_fd, False)
    with contextlib.suppress(BlockingIOError):
        while len(received) < capacity:  # what the pipe held is whole frames, in order
            received.extend(os.read(read_fd, 1 << 20))
    assert len(received) > capacity // 2
    whole = bytes(received[: received.rindex(b"\n") + 1])
    check_frames(whole, whole.count(b"\n"), 10_000)
    writer.close()


async def test_drain_gives_up_after_its_timeout_when_nobody_reads(pipe: tuple[int, int]) -> None:
    _, write_fd = pipe
    writer = FrameWriter(write_fd)
    capacity = fcntl.fcntl(write_fd, 1032)  # F_GETPIPE_SZ
    writer.write(b"x" * (capacity + 100_000) + b"\n")
    started = time.monotonic()
    await writer.drain(timeout=0.3)
    assert 0.25 <= time.monotonic() - started < 3
    assert writer.backlog > 0
    writer.close()


async def test_without_proc_a_pipe_gets_o_nonblock_on_a_duplicate_cleared_when_done(
    pipe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    read_fd, write_fd = pipe
    real_open = os.open

    def no_proc(path: str, *args: object, **kwargs: object) -> int:
        if str(path).startswith("/proc/self/fd/"):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", no_proc)
    writer = FrameWriter(write_fd)
    frames = FrameReader(read_fd).frames()
    await writer.send(b"through the duplicate\n")
    with anyio.fail_after(10):
        assert await frames.__anext__() == Frame(b"through the duplicate")
    assert not os.get_blocking(read_fd) and not os.get_blocking(write_fd)  # one description, shared
    assert wire_threads() == set()
    writer.close()
    assert os.get_blocking(write_fd)
    os.close(write_fd)
    with anyio.fail_after(10):
        assert [item async for item in frames] == []
    assert os.get_blocking(read_fd)


def test_claim_stdio_gives_fds_0_and_1_back_blocking() -> None:
    script = (
        "import os, sys\n"
        "from awf_mcp.wire.framing import claim_stdio\n"
        "with claim_stdio() as wire:\n"
        "    os.set_blocking(wire.read_fd, False)\n"  # as a reader cut short would leave it
        "    os.set_blocking(wire.write_fd, False)\n"
        "    print('claimed', file=sys.stderr)\n"
        "sys.stderr.write(f'{os.get_blocking(0)} {os.get_blocking(1)}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], input=b"", capture_output=True, timeout=60, check=True
    )
    assert done.stderr.decode().split() == ["claimed", "True", "True"], done.stderr
