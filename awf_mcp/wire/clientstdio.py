"""An upstream server over stdio: its process, its pipes, its end.

Contract
--------
:func:`stdio_streams` is the transport :func:`awf_mcp.wire.client.connect` opens for a
server with a ``command``: the SDK session's read and write streams over the process's stdout
and stdin.

* The server starts with the user's environment
  (:func:`awf_mcp.processes.childenv.child_environment`) plus its ``env``, through
  :mod:`awf_mcp.processes.upstreamprocess`: under a keeper, in its own process group, so that
  neither it nor anything it starts (detached or not) outlives its connection or awf-mcp, even
  a ``kill -9`` of awf-mcp. A process that
  :func:`~awf_mcp.processes.upstreamprocess.launch_early` started for the same launch is used.
* Its stdout is read by the event loop (no thread): a line over 10 MiB
  (:data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`) ends the connection (the server is
  restarted on the next call), at most about twice that buffered; a line that is not
  JSON-RPC is logged and skipped.
* Its stderr goes to awf-mcp's log at INFO, each line prefixed ``[<server>]`` and cut at
  :data:`STDERR_LINE_CHARS`; the last lines are kept in the connection's
  :class:`~awf_mcp.wire.clientsession.Transcript` for the reason of a failed start.
* Closing (:func:`stop_process`): stdin is closed, then after :data:`STDIN_GRACE_SECONDS` the
  process group gets SIGTERM (the keeper then ends the server's descendants), then SIGKILL
  :data:`TERM_GRACE_SECONDS` later — within the server's one-second exit bound.

Every message this module logs or raises passes through :meth:`ServerSpec.redact`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from awf_mcp.concurrency import hand_over
from awf_mcp.core.servers import ServerSpec, launch_key
from awf_mcp.core.upstream import UpstreamFailure
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.containment.policy import active_roots
from awf_mcp.processes.upstreamprocess import claim, contained_launch, spawn
from awf_mcp.wire import upstreamhub
from awf_mcp.wire.clientsession import Transcript
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES, Sink
from awf_mcp.wire.processpipes import describe_exit, exited, lines, pipes, stderr_lines, stop_process

log = logging.getLogger("awf_mcp.upstream")

STDERR_LINE_CHARS = 2000


@contextlib.asynccontextmanager
async def stdio_streams(
    spec: ServerSpec, cwd: str, transcript: Transcript, closed: anyio.Event
) -> AsyncIterator[Any]:
    env = child_environment()
    env.update(spec.env)
    if upstreamhub.sharing():
        try:
            argv, environment = contained_launch(
                spec.command, spec.args, env, server=spec.name, sandbox=spec.sandbox, named=tuple(spec.env)
            )
        except OSError as exc:
            raise UpstreamFailure(spec.redact(_could_not_start(spec, exc))) from None
        async with _hub_streams(spec, (argv, environment, cwd), transcript, closed) as streams:
            yield streams
        return
    key = launch_key(spec, env, cwd)
    process = claim(spec.name, key)
    if process is None:
        try:
            process = spawn(
                spec.command,
                spec.args,
                env,
                cwd,
                server=spec.name,
                sandbox=spec.sandbox,
                named=tuple(spec.env),
            )
        except OSError as exc:
            raise UpstreamFailure(spec.redact(_could_not_start(spec, exc))) from None
    stdin, stdout, stderr, readers = await pipes(process)
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    relay = _Relay(spec, transcript, to_session)

    async def pump_stdout() -> None:
        try:
            async with to_session:
                if await relay.pump(stdout):
                    # EOF: say how the process ended before the session learns that the connection did.
                    await exited(process, 0.2)
                    transcript.exit = describe_exit(process.returncode)
        finally:
            closed.set()

    async def pump_stderr() -> None:
        async for raw in stderr_lines(stderr, STDERR_LINE_CHARS):
            relay.stderr_line(raw)

    async with anyio.create_task_group() as group:
        group.start_soon(pump_stdout)
        group.start_soon(pump_stderr)
        try:
            yield session_reads, LineSink(stdin)
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process(process, stdin)
            for reader in readers:  # one paused by an over-long line never reads its EOF
                reader.close()
            group.cancel_scope.cancel()


def _could_not_start(spec: ServerSpec, exc: OSError) -> str:
    return f"could not start '{spec.command}': {exc.strerror}" if exc.strerror else str(exc)


WRITE_BUFFER_BYTES = 64 * 1024
"""How much of a server's input :class:`LineSink` leaves in the pipe's buffer before senders
wait for it to drain (asyncio's own high-water mark)."""


class _Relay:
    """What the server sends, to the SDK session: its messages, its stderr, its faults."""

    def __init__(self, spec: ServerSpec, transcript: Transcript, to_session: Any) -> None:
        self.spec = spec
        self.transcript = transcript
        self.to_session = to_session
        self.prefix = f"[{spec.name}]"

    async def pump(self, stdout: asyncio.StreamReader, notes: bool = False) -> bool:
        """Deliver each line of ``stdout`` until its end (``True``) or one over the limit
        (``False``); with ``notes``, a line starting ``#`` is the shared server's
        (:mod:`awf_mcp.wire.upstreamhub`): ``#stderr LINE`` or ``#exit HOW``."""
        async for line in lines(stdout):
            if line is None:
                self.transcript.fault = f"it sent a message over the {MAX_MESSAGE_BYTES}-byte limit"
                log.warning("%s %s; closing the connection", self.prefix, self.transcript.fault)
                return False
            if notes and line.startswith(b"#"):
                word, _, rest = line[1:].partition(b" ")
                if word == b"stderr":
                    self.stderr_line(rest)
                elif word == b"exit":
                    self.transcript.exit = rest.decode("utf-8", "replace")
                continue
            await self.deliver(line)
        return True

    async def deliver(self, line: bytes) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:
            shown = self.spec.redact(line[:200].decode("utf-8", "replace"))
            self.transcript.fault = f"it printed a line that is not JSON-RPC on stdout: {shown!r}"
            log.warning("%s %s", self.prefix, self.transcript.fault)
            return
        await hand_over(self.to_session, SessionMessage(message))  # 16 wait at most

    def stderr_line(self, raw: bytes) -> None:
        line = self.spec.redact(raw[:STDERR_LINE_CHARS].decode("utf-8", "replace").rstrip())
        if line:
            self.transcript.stderr_tail.append(line)
            log.info("%s %s", self.prefix, line)


def _wire(session_message: SessionMessage) -> bytes:
    return session_message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


class LineSink(Sink):
    """The SDK client session's write stream (its ``WriteStream`` protocol) on a server's input.

    Each message is written as one JSON line by the task that sends it, in the order sent: no
    memory stream and no pump task between, which cost every call two passes of the event
    loop. While the pipe's buffer is over :data:`WRITE_BUFFER_BYTES` (a server that does not
    read), senders wait their turn, in order, and each encodes its message only once the
    buffer has drained: what waits for such a server is its callers' messages, never their
    lines. Once a write fails or the connection is closing (the server has gone), every ``send``
    raises :class:`anyio.BrokenResourceError`, as a stream whose reader has gone does; after
    :meth:`aclose`, :class:`anyio.ClosedResourceError`.

    ``opening``, when given, is called (in turn) with the first line instead of writing it, and
    returns the writer for the rest (``None`` when the connection could not be opened): the
    shared server's hub is opened with the session's first message
    (:mod:`awf_mcp.wire.upstreamhub`).
    """

    def __init__(
        self,
        writer: asyncio.StreamWriter | None = None,
        opening: Callable[[bytes], Awaitable[asyncio.StreamWriter | None]] | None = None,
    ) -> None:
        super().__init__()
        self._writer = writer
        self._opening = opening
        self._broken = False

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        if self._broken:
            raise anyio.BrokenResourceError
        writer = self._writer

        async def later() -> None:
            if self._writer is None:
                await self._open(item)
                return
            try:
                await self._writer.drain()
            except (ConnectionError, OSError, RuntimeError):
                self._broken = True
            self._write(self._writer, item)

        now = None
        if writer is not None and self._has_room(writer):
            now = functools.partial(self._write, writer, item)
        await self.in_order(now, later)

    async def _open(self, item: SessionMessage) -> None:
        self._writer = await self._opening(_wire(item)) if self._opening is not None else None
        if self._writer is None:
            self._broken = True
            raise anyio.BrokenResourceError

    def _has_room(self, writer: asyncio.StreamWriter) -> bool:
        return writer.transport.get_write_buffer_size() <= WRITE_BUFFER_BYTES

    def _write(self, writer: asyncio.StreamWriter, item: SessionMessage) -> None:
        if self._broken or writer.is_closing():
            self._broken = True
            raise anyio.BrokenResourceError
        try:
            writer.write(_wire(item))
        except (ConnectionError, OSError, RuntimeError):
            self._broken = True
            raise anyio.BrokenResourceError from None


@contextlib.asynccontextmanager
async def _hub_streams(
    spec: ServerSpec, launch: upstreamhub.Launch, transcript: Transcript, closed: anyio.Event
) -> AsyncIterator[Any]:
    """The server's process as the shared server runs it for every session with the same
    launch and the same first message (:mod:`awf_mcp.wire.upstreamhub`). The connection opens
    with the session's first message, which is part of what is shared; closing it releases the
    process (the shared server stops it when no session holds it for ``[shared] idle_seconds``)."""
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    relay = _Relay(spec, transcript, to_session)
    held: list[asyncio.StreamWriter] = []

    async def pump_out(reader: asyncio.StreamReader) -> None:
        try:
            async with to_session:
                await relay.pump(reader, notes=True)
        finally:
            closed.set()

    async def opening(first: bytes) -> asyncio.StreamWriter | None:
        try:
            reader, writer = await upstreamhub.open_shared(launch, first, active_roots())
        except OSError as exc:
            transcript.fault = spec.redact(f"the shared server could not run it: {exc}")
            log.warning("[%s] %s", spec.name, transcript.fault)
            await to_session.aclose()  # the session's reader learns that the connection is gone
            closed.set()
            return None
        held.append(writer)
        writer.write(first)
        group.start_soon(pump_out, reader)
        return writer

    async with anyio.create_task_group() as group:
        try:
            yield session_reads, LineSink(opening=opening)
        finally:
            for writer in held:
                writer.close()
            if not held:
                closed.set()
            group.cancel_scope.cancel()
