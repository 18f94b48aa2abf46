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
import logging
import os
import signal
import subprocess
from asyncio.streams import FlowControlMixin
from collections.abc import AsyncIterator
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from awf_mcp.core.servers import ServerSpec, launch_key
from awf_mcp.core.upstream import UpstreamFailure
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.upstreamprocess import KEEPER_GRACE_SECONDS, claim, spawn
from awf_mcp.wire.clientsession import Transcript
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES

log = logging.getLogger("awf_mcp.upstream")

STDIN_GRACE_SECONDS = 0.2
TERM_GRACE_SECONDS = KEEPER_GRACE_SECONDS + 0.3
"""After SIGTERM, the time the server's keeper has to end what it left before the group is SIGKILLed."""
STDERR_LINE_CHARS = 2000


async def _exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while process.poll() is None:
            await anyio.sleep(0.01)
    return process.poll() is not None


def _kill_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_process(process: subprocess.Popen[bytes], stdin: asyncio.StreamWriter) -> None:
    """Close stdin, then SIGTERM and SIGKILL the process group after short graces."""
    with contextlib.suppress(Exception):
        stdin.close()
    if not await _exited(process, STDIN_GRACE_SECONDS):
        _kill_group(process, signal.SIGTERM)
        if not await _exited(process, TERM_GRACE_SECONDS):
            _kill_group(process, signal.SIGKILL)
    _kill_group(process, signal.SIGKILL)  # whatever the server left in its group


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "it closed its stdout"
    if code < 0:
        try:
            return f"it was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"it was killed by signal {-code}"
    return f"it exited with code {code}"


async def _pipes(
    process: subprocess.Popen[bytes],
) -> tuple[asyncio.StreamWriter, asyncio.StreamReader, asyncio.StreamReader, list[asyncio.BaseTransport]]:
    """The event loop's writer for the process's stdin, readers for its stdout and stderr, and
    the readers' transports (to close once the process is stopped).

    Both are read by the event loop itself, with no thread: a forwarded call's answer reaches
    the session without a hand-over between threads. The stdout reader holds at most about
    twice :data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES` before it stops reading.
    """
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(FlowControlMixin, process.stdin)
    stdin = asyncio.StreamWriter(transport, protocol, None, loop)
    stdout = asyncio.StreamReader(limit=MAX_MESSAGE_BYTES)
    out, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdout), process.stdout)
    stderr = asyncio.StreamReader(limit=1 << 16)
    err, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stderr), process.stderr)
    return stdin, stdout, stderr, [out, err]


async def _lines(stdout: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
    """Each non-empty line of ``stdout`` (stripped), ``None`` for one over the limit (then stops)."""
    while True:
        try:
            line = await stdout.readuntil(b"\n")
        except asyncio.LimitOverrunError:
            yield None
            return
        except asyncio.IncompleteReadError as exc:  # EOF: a last line without its newline
            if exc.partial.strip():
                yield exc.partial.strip()
            return
        if line.strip():
            yield line.strip()


@contextlib.asynccontextmanager
async def stdio_streams(
    spec: ServerSpec, cwd: str, transcript: Transcript, closed: anyio.Event
) -> AsyncIterator[Any]:
    env = child_environment()
    env.update(spec.env)
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
            reason = f"could not start '{spec.command}': {exc.strerror}" if exc.strerror else str(exc)
            raise UpstreamFailure(spec.redact(reason)) from None
    stdin, stdout, stderr, readers = await _pipes(process)

    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](16)
    prefix = f"[{spec.name}]"

    async def pump_stdout() -> None:
        try:
            async with to_session:
                async for line in _lines(stdout):
                    if line is None:
                        transcript.fault = f"it sent a message over the {MAX_MESSAGE_BYTES}-byte limit"
                        log.warning("%s %s; closing the connection", prefix, transcript.fault)
                        return
                    await deliver(line)
                # EOF: say how the process ended before the session learns that the connection did.
                await _exited(process, 0.2)
                transcript.exit = _describe_exit(process.returncode)
        finally:
            closed.set()

    async def deliver(line: bytes) -> None:
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except Exception:
            shown = spec.redact(line[:200].decode("utf-8", "replace"))
            transcript.fault = f"it printed a line that is not JSON-RPC on stdout: {shown!r}"
            log.warning("%s %s", prefix, transcript.fault)
            return
        try:  # without a pass of the event loop while the session keeps up (16 messages wait at most)
            to_session.send_nowait(SessionMessage(message))
        except anyio.WouldBlock:
            await to_session.send(SessionMessage(message))

    async def pump_stdin() -> None:
        async with from_session:
            async for session_message in from_session:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
                except (ConnectionError, OSError, RuntimeError):
                    return

    async def pump_stderr() -> None:
        pending = b""
        while chunk := await stderr.read(65536):
            *lines, pending = (pending + chunk).split(b"\n")
            pending = pending[-STDERR_LINE_CHARS:]
            for raw in lines:
                line = spec.redact(raw[:STDERR_LINE_CHARS].decode("utf-8", "replace").rstrip())
                if line:
                    transcript.stderr_tail.append(line)
                    log.info("%s %s", prefix, line)

    async with anyio.create_task_group() as group:
        group.start_soon(pump_stdout)
        group.start_soon(pump_stdin)
        group.start_soon(pump_stderr)
        try:
            yield session_reads, session_writes
        finally:
            with anyio.CancelScope(shield=True):
                await stop_process(process, stdin)
            for reader in readers:  # one paused by an over-long line never reads its EOF
                reader.close()
            group.cancel_scope.cancel()
