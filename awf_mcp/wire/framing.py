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
  *before* importing plugins: import-time prints are caught too.
* :class:`FrameReader` yields each line as :class:`Frame` bytes (without the
  newline), an :class:`Oversized` marker for a line longer than ``max_bytes``
  (its bytes are discarded as they arrive, never buffered), then stops at EOF.
  A daemon thread does the blocking reads with a small bounded read-ahead, so
  memory stays at about ``max_bytes`` plus a few chunks whatever the input, and
  shutdown never waits for a read that is blocked.
* :class:`FrameWriter` writes frames in order from a daemon thread, so a slow
  reader on the other end never blocks the event loop; :meth:`FrameWriter.drain`
  waits (bounded) for queued frames at shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO

import anyio
import anyio.to_thread

MAX_MESSAGE_BYTES = 10 * 1024 * 1024
"""The largest frame accepted or sent: 10 MiB, as the Go server allowed."""

_CHUNK_BYTES = 256 * 1024
_READ_AHEAD_CHUNKS = 4


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
            os.dup2(write_fd, 1)
            os.dup2(read_fd, 0)
        os.close(devnull)


class FrameReader:
    """Async iterator of :class:`Frame` / :class:`Oversized` items from a file descriptor."""

    def __init__(
        self, fd: int, max_bytes: int = MAX_MESSAGE_BYTES, *, on_overflow: Callable[[], None] | None = None
    ) -> None:
        self._fd = fd
        self._max = max_bytes
        self._on_overflow = on_overflow  # called as soon as a line passes max_bytes, before its end
        self._send, self._receive = anyio.create_memory_object_stream[bytes](
            max_buffer_size=_READ_AHEAD_CHUNKS
        )
        self._slots = threading.Semaphore(_READ_AHEAD_CHUNKS)

    def _deliver(self, chunk: bytes) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(chunk)

    def _read_loop(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            self._slots.acquire()
            try:
                chunk = os.read(self._fd, _CHUNK_BYTES)
            except OSError:
                chunk = b""
            try:
                loop.call_soon_threadsafe(self._deliver, chunk)
            except RuntimeError:  # the loop is closed: the server has stopped
                return
            if not chunk:
                return

    async def frames(self) -> AsyncIterator[Frame | Oversized]:
        """Yield frames until EOF; see the module docstring."""
        thread = threading.Thread(
            target=self._read_loop, args=(asyncio.get_running_loop(),), name="awf-mcp stdin", daemon=True
        )
        thread.start()
        buffer = bytearray()
        discarding = 0
        async with self._receive:
            async for chunk in self._receive:
                self._slots.release()
                if not chunk:
                    break
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


class FrameWriter:
    """Writes frames to a file descriptor, in order, from a daemon thread."""

    def __init__(self, fd: int) -> None:
        self._out: BinaryIO = os.fdopen(fd, "wb", buffering=0, closefd=False)
        self._queue: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._idle = threading.Event()
        self._idle.set()
        self._pending = 0
        self._lock = threading.Lock()
        self._broken = False
        self._thread = threading.Thread(target=self._write_loop, name="awf-mcp stdout", daemon=True)
        self._thread.start()

    def _write_loop(self) -> None:
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
                self._pending -= 1
                if self._pending == 0:
                    self._idle.set()

    @property
    def broken(self) -> bool:
        """True once the other end has gone away (a write failed)."""
        return self._broken

    def write(self, data: bytes) -> None:
        """Queue one frame (``data`` must already end with a newline)."""
        with self._lock:
            self._pending += 1
            self._idle.clear()
        self._queue.put(data)

    async def drain(self, timeout: float = 1.0) -> None:
        """Wait up to ``timeout`` seconds for every queued frame to be written."""
        with anyio.move_on_after(timeout):
            await anyio.to_thread.run_sync(self._idle.wait, abandon_on_cancel=True)

    def close(self) -> None:
        """Stop the writer thread after the frames already queued."""
        self._queue.put(None)
