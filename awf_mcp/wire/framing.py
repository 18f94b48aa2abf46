"""Newline-delimited stdio framing with bounded memory, and the claim on fds 0 and 1.

This is the byte layer under the SDK's session: it knows lines, not JSON-RPC.
The SDK's own stdio transport reads whole lines however long they are and
drops malformed ones silently; an agent's server must do neither. This module
imports only the standard library and anyio.

Contract
--------
* :func:`claim_stdio` takes the wire away from the process's standard streams
  for the duration of a ``with`` block: the wire is served from private
  duplicates of fds 0 and 1, while fd 0 is pointed at ``/dev/null`` and fd 1 at
  stderr (and ``sys.stdout`` at ``sys.stderr``). A plugin's ``print()``, or a
  child process's output, therefore never reaches the JSON-RPC stream. Claim
  *before* importing plugins: import-time prints are caught too. On the way
  out, fds 0 and 1 get back their descriptors with the blocking mode they had.
* :class:`FrameReader` yields each line as :class:`Frame` bytes (without the
  newline), an :class:`Oversized` marker for a line longer than ``max_bytes``
  (its bytes are discarded as they arrive, never buffered), then stops at EOF.
  Memory stays at about ``max_bytes`` plus a few chunks whatever the input.
* :class:`FrameWriter` writes frames in order, never interleaved, and never
  blocks the event loop on a slow reader. :meth:`FrameWriter.send` is the
  back-pressure: it waits while more than ``max_backlog`` bytes are still
  unwritten (so a reader that stops reading stops the sender, memory stays at
  ``max_backlog`` plus one frame) until :meth:`FrameWriter.stop_waiting`, which
  shutdown calls once input has ended; :meth:`FrameWriter.drain` waits (bounded)
  for the backlog at shutdown. :meth:`FrameWriter.has_room` and
  :meth:`FrameWriter.room` let a sender wait for room *before* it encodes a frame.
* :class:`Sink` is the common part of the write streams handed to the SDK in place of
  memory streams (closing, ``async with``), so that the sending task writes itself.

Where the bytes move
--------------------
When a descriptor is a pipe or a socket (what an agent gives its server), the
event loop reads and writes it itself, non-blocking: a request and its answer
cross no thread. A read is made only when the consumer asks for the next frame,
so read-ahead is what the pipe holds plus one chunk. The descriptor stays registered
with the loop from one wait to the next (:class:`_ReadWatch`), unless it becomes
readable while nobody waits. Non-blocking mode is set
only on descriptions nobody else holds: a pipe is reopened through
``/proc/self/fd`` (a new open file description of the same pipe, Linux), a
socket is never switched at all (``MSG_DONTWAIT`` per call), and only where
neither works is ``O_NONBLOCK`` set on the duplicate, and cleared again when
the reader or writer is done. Anything else (a regular file, a terminal), or an
event loop without ``add_reader``, is served by one daemon thread per
direction, as blocking reads with a small bounded read-ahead and blocking
writes; shutdown never waits for a read that is blocked.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import queue
import socket
import stat
import sys
import threading
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO, Self

import anyio
import anyio.lowlevel

MAX_MESSAGE_BYTES = 10 * 1024 * 1024
"""The largest frame accepted or sent: 10 MiB, as the Go server allowed."""

MAX_BACKLOG_BYTES = 4 * 1024 * 1024
"""Unwritten bytes above which :meth:`FrameWriter.send` waits for the reader."""

PIPE_BYTES = 1024 * 1024
"""The capacity asked for the agent's stdout pipe, so a large answer is one write, one wake-up."""

_CHUNK_BYTES = 64 * 1024  # a 256 KiB read costs 15 µs more here, allocating its buffer
_READ_AHEAD_CHUNKS = 16


@dataclass(frozen=True, slots=True)
class Frame:
    """One complete line of input, newline stripped."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line that exceeded the limit; ``size`` is how many bytes it had."""

    size: int


@dataclass(frozen=True, slots=True)
class StdioWire:
    """The private descriptors the wire is served from while stdio is claimed."""

    read_fd: int
    write_fd: int


@contextlib.contextmanager
def claim_stdio() -> Iterator[StdioWire]:
    """Serve the wire from duplicates of fds 0/1 and divert the originals; see the module docstring."""
    sys.stdout.flush()
    read_fd = os.dup(0)
    write_fd = os.dup(1)
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)
    blocking = {fd: os.get_blocking(fd) for fd in (read_fd, write_fd)}
    devnull = os.open(os.devnull, os.O_RDONLY)
    saved_stdout = sys.stdout
    try:
        os.dup2(devnull, 0)
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield StdioWire(read_fd=read_fd, write_fd=write_fd)
    finally:
        sys.stdout = saved_stdout
        with contextlib.suppress(OSError):
            for fd, was_blocking in blocking.items():
                if os.get_blocking(fd) != was_blocking:
                    os.set_blocking(fd, was_blocking)
            os.dup2(write_fd, 1)
            os.dup2(read_fd, 0)
        os.close(devnull)


class _Channel:
    """A private non-blocking end of a pipe or socket; see "Where the bytes move"."""

    def __init__(self, fd: int, *, restore_blocking: bool = False, sock: socket.socket | None = None) -> None:
        self.fd = fd
        self._restore_blocking = restore_blocking
        self._socket = sock

    def read(self, size: int) -> bytes:
        """Up to ``size`` bytes; ``b""`` at EOF; :class:`BlockingIOError` when nothing is ready."""
        if self._socket is not None:
            return self._socket.recv(size, socket.MSG_DONTWAIT)
        return os.read(self.fd, size)

    def write(self, data: bytes | memoryview) -> int:
        """Write what fits now; :class:`BlockingIOError` when nothing does."""
        if self._socket is not None:
            return self._socket.send(data, socket.MSG_DONTWAIT)
        return os.write(self.fd, data)

    def close(self) -> None:
        """Close this end (the wire's own descriptor stays open), restoring blocking mode if set here."""
        if self._socket is not None:
            self._socket.close()
            return
        if self._restore_blocking:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fd, True)
        os.close(self.fd)


def _open_channel(fd: int, *, writing: bool) -> _Channel | None:
    """A :class:`_Channel` for ``fd`` when it is a pipe or a socket and the running loop can poll it."""
    try:
        loop = asyncio.get_running_loop()
        mode = os.fstat(fd).st_mode
    except (RuntimeError, OSError):
        return None
    if type(loop).add_reader is asyncio.AbstractEventLoop.add_reader:  # a loop that cannot poll (Windows)
        return None
    if stat.S_ISSOCK(mode):
        copy = os.dup(fd)
        try:
            sock = socket.socket(fileno=copy)
        except OSError:
            os.close(copy)
            return None
        sock.set_inheritable(False)
        return _Channel(copy, sock=sock)
    if not stat.S_ISFIFO(mode):
        return None
    if writing:
        _widen_pipe(fd)
    flags = (os.O_WRONLY if writing else os.O_RDONLY) | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return _Channel(os.open(f"/proc/self/fd/{fd}", flags))  # a description of our own
    except OSError:
        pass
    duplicate = os.dup(fd)
    was_blocking = os.get_blocking(duplicate)
    os.set_blocking(duplicate, False)
    return _Channel(duplicate, restore_blocking=was_blocking)


def _widen_pipe(fd: int) -> None:
    """Let the pipe hold :data:`PIPE_BYTES`, if it holds less and the system allows it (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        if fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) < PIPE_BYTES:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


class _ReadWatch:
    """Waits until the loop reports a descriptor readable, and stays registered with the loop
    between waits: a request and the next cost no ``epoll_ctl`` each way. The loop's poll is
    level-triggered, so readiness reported while nobody waits (the consumer is busy) unregisters
    the descriptor, until the next wait registers it again: it never spins."""

    def __init__(self, fd: int) -> None:
        self._loop = asyncio.get_running_loop()
        self._fd = fd
        self._waiter: asyncio.Future[None] | None = None
        self._watching = False

    async def ready(self) -> None:
        waiter = self._waiter = self._loop.create_future()
        if not self._watching:
            self._loop.add_reader(self._fd, self._reported)
            self._watching = True
        try:
            await waiter
        finally:
            self._waiter = None

    def _reported(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        else:
            self.close()

    def close(self) -> None:
        """Unregister the descriptor (before it is closed)."""
        if self._watching:
            self._watching = False
            self._loop.remove_reader(self._fd)


def _settle(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


class FrameReader:
    """Async iterator of :class:`Frame` / :class:`Oversized` items from a file descriptor."""

    def __init__(
        self, fd: int, max_bytes: int = MAX_MESSAGE_BYTES, *, on_overflow: Callable[[], None] | None = None
    ) -> None:
        self._fd = fd
        self._max = max_bytes
        self._on_overflow = on_overflow  # called as soon as a line passes max_bytes, before its end

    async def frames(self) -> AsyncIterator[Frame | Oversized]:
        """Yield frames until EOF; see the module docstring."""
        channel = _open_channel(self._fd, writing=False)
        chunks = self._thread_chunks() if channel is None else _loop_chunks(channel)
        buffer = bytearray()
        discarding = 0
        async with contextlib.aclosing(chunks):
            async for chunk in chunks:
                start = 0
                while True:
                    newline = chunk.find(b"\n", start)
                    piece = chunk[start:] if newline < 0 else chunk[start:newline]
                    if discarding:
                        discarding += len(piece)
                    elif len(buffer) + len(piece) > self._max:
                        discarding = len(buffer) + len(piece)
                        buffer = bytearray()
                        if self._on_overflow is not None:
                            self._on_overflow()
                    else:
                        buffer += piece
                    if newline < 0:
                        break
                    start = newline + 1
                    if discarding:
                        yield Oversized(discarding)
                        discarding = 0
                    else:
                        line = bytes(buffer).strip()
                        buffer.clear()
                        if line:
                            yield Frame(line)
            if discarding:
                yield Oversized(discarding)
            elif buffer.strip():
                yield Frame(bytes(buffer).strip())

    async def _thread_chunks(self) -> AsyncGenerator[bytes, None]:
        """Chunks read by a daemon thread, at most :data:`_READ_AHEAD_CHUNKS` ahead of the consumer."""
        send, receive = anyio.create_memory_object_stream[bytes](max_buffer_size=_READ_AHEAD_CHUNKS)
        slots = threading.Semaphore(_READ_AHEAD_CHUNKS)

        def deliver(chunk: bytes) -> None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(chunk)

        def read_loop(loop: asyncio.AbstractEventLoop) -> None:
            while True:
                slots.acquire()
                try:
                    chunk = os.read(self._fd, _CHUNK_BYTES)
                except OSError:
                    chunk = b""
                try:
                    loop.call_soon_threadsafe(deliver, chunk)
                except RuntimeError:  # the loop is closed: the server has stopped
                    return
                if not chunk:
                    return

        thread = threading.Thread(
            target=read_loop, args=(asyncio.get_running_loop(),), name="awf-mcp stdin", daemon=True
        )
        thread.start()
        async with receive:
            async for chunk in receive:
                slots.release()
                if not chunk:
                    return
                yield chunk


async def _loop_chunks(channel: _Channel) -> AsyncGenerator[bytes, None]:
    """Chunks read by the event loop, one read per chunk the consumer asks for; closes ``channel``."""
    watch = _ReadWatch(channel.fd)
    try:
        waited = True
        while True:
            try:
                chunk = channel.read(_CHUNK_BYTES)
            except BlockingIOError:
                await watch.ready()
                waited = True
                continue
            except OSError:
                return
            if not chunk:
                return
            if not waited:  # input keeps coming: let the rest of the loop run between chunks
                await anyio.lowlevel.checkpoint()
            waited = False
            yield chunk
    finally:
        watch.close()
        channel.close()


class FrameWriter:
    """Writes frames to a file descriptor, in order, from the event loop or a daemon thread.

    Create it, and call every method, on the event loop thread; see the module docstring.
    """

    def __init__(self, fd: int, *, max_backlog: int = MAX_BACKLOG_BYTES) -> None:
        self._max_backlog = max_backlog
        self._backlog_bytes = 0  # accepted, not yet written (or dropped once broken)
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []  # (wake at or below, future)
        self._broken = False
        self._closed = False
        self._unbounded = False
        self._lock = threading.Lock()
        self._loop = asyncio.get_running_loop()
        self._channel = _open_channel(fd, writing=True)
        self._pending: deque[memoryview] = deque()  # the loop path's unwritten frames
        self._watching = False
        if self._channel is None:
            self._out: BinaryIO = os.fdopen(fd, "wb", buffering=0, closefd=False)
            self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
            self._thread = threading.Thread(target=self._write_loop, name="awf-mcp stdout", daemon=True)
            self._thread.start()

    @property
    def broken(self) -> bool:
        """True once the other end has gone away (a write failed)."""
        return self._broken

    @property
    def backlog(self) -> int:
        """Bytes accepted and not yet written."""
        return self._backlog_bytes

    def write(self, data: bytes) -> None:
        """Queue one frame (``data`` must already end with a newline); never waits."""
        if self._broken or self._closed:
            return
        if self._channel is None:
            with self._lock:
                self._backlog_bytes += len(data)
            self._queue.put(data)
            return
        if not self._pending:
            try:
                written = self._channel.write(data)
            except BlockingIOError:
                written = 0
            except OSError:
                self._break()
                return
            if written == len(data):
                return
            data = memoryview(data)[written:]  # type: ignore[assignment]
        self._pending.append(memoryview(data))
        self._backlog_bytes += len(data)
        if not self._watching:
            self._loop.add_writer(self._channel.fd, self._flush)
            self._watching = True

    def has_room(self) -> bool:
        """Whether the backlog is within ``max_backlog`` (or no longer bounded: input has ended)."""
        return self._unbounded or self._backlog_bytes <= self._max_backlog

    async def room(self) -> None:
        """Wait while the backlog is over ``max_backlog``, until it is down to half, as :meth:`send`
        does after queuing its frame."""
        if not self.has_room():
            await self._wait(self._max_backlog // 2)

    async def send(self, data: bytes) -> None:
        """Queue one frame, then wait while the backlog is over ``max_backlog`` (see the module docstring)."""
        self.write(data)
        if self._backlog_bytes > self._max_backlog and not self._unbounded:
            await self._wait(self._max_backlog // 2)

    def stop_waiting(self) -> None:
        """From now on :meth:`send` never waits: input has ended, and shutdown must stay bounded."""
        self._unbounded = True
        self._wake(everyone=True)

    async def drain(self, timeout: float = 1.0) -> None:
        """Wait up to ``timeout`` seconds for every queued frame to be written."""
        with anyio.move_on_after(timeout):
            await self._wait(0)

    def close(self) -> None:
        """Stop writing: the thread after the frames already queued, the loop at once."""
        if self._closed:
            return
        self._closed = True
        if self._channel is None:
            self._queue.put(None)
        else:
            self._unwatch()
            self._pending.clear()
            self._channel.close()
        self._wake(everyone=True)

    async def _wait(self, threshold: int) -> None:
        waiter = self._loop.create_future()
        with self._lock:
            self._waiters.append((threshold, waiter))
        self._wake()
        try:
            await waiter
        finally:
            with self._lock:
                self._waiters = [entry for entry in self._waiters if entry[1] is not waiter]

    def _wake(self, everyone: bool = False) -> None:
        """Settle the waiters whose threshold the backlog has reached (on the loop thread)."""
        with self._lock:
            done = everyone or self._broken or self._closed
            for threshold, waiter in self._waiters:
                if done or self._backlog_bytes <= threshold:
                    _settle(waiter)

    def _flush(self) -> None:
        """The loop path's writable callback: write what fits, in order."""
        assert self._channel is not None
        pending = self._pending
        while pending:
            view = pending[0]
            try:
                written = self._channel.write(view)
            except BlockingIOError:
                break
            except OSError:
                self._break()
                return
            self._backlog_bytes -= written
            if written < len(view):
                pending[0] = view[written:]
                break
            pending.popleft()
        if not pending:
            self._unwatch()
        self._wake()

    def _unwatch(self) -> None:
        if self._watching and self._channel is not None:
            self._loop.remove_writer(self._channel.fd)
            self._watching = False

    def _break(self) -> None:
        self._broken = True
        self._unwatch()
        self._pending.clear()
        self._backlog_bytes = 0
        self._wake()

    def _write_loop(self) -> None:
        """The thread path: blocking writes, in order, then tell waiting senders."""
        while True:
            data = self._queue.get()
            if data is None:
                return
            if not self._broken:
                try:
                    view = memoryview(data)
                    while view:
                        written = self._out.write(view)
                        view = view[written or 0 :]
                except OSError:
                    self._broken = True
            with self._lock:
                self._backlog_bytes -= len(data)
                waiting = bool(self._waiters)
            if waiting:
                with contextlib.suppress(RuntimeError):  # the loop has closed
                    self._loop.call_soon_threadsafe(self._wake)


class Sink:
    """What the SDK's ``WriteStream`` protocol asks of a write stream besides ``send``: closing,
    and use as an async context manager; and the order of writes for a subclass's ``send``
    (:meth:`in_order`). A subclass refuses or drops what comes once :attr:`closed`."""

    closed = False

    def __init__(self) -> None:
        self._turn = anyio.Lock()
        self._queued = 0

    async def in_order(self, now: Callable[[], None] | None, later: Callable[[], Awaitable[None]]) -> None:
        """``now()`` at once when given (there is room) and no sender waits: no pass of the event
        loop. Otherwise ``later()``, which waits for room and then writes, in the turn of this
        sender: one at a time, in the order they came."""
        if now is not None and not self._queued:
            now()
            return
        self._queued += 1
        try:
            async with self._turn:
                await later()
        finally:
            self._queued -= 1

    async def aclose(self) -> None:
        self.closed = True

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()
