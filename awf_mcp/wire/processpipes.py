"""A process's standard streams on the event loop: reading its lines, stopping it.

Contract
--------
Shared by an upstream run by a session (:mod:`awf_mcp.wire.clientstdio`) and one run by the
shared server's hub (:mod:`awf_mcp.wire.upstreamhub`):

* :func:`pipes`: the event loop's writer for a process's stdin and readers for its stdout and
  stderr, with no thread; the stdout reader holds at most about twice
  :data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`.
* :func:`lines`: each non-empty line, ``None`` for one over that limit (then it stops).
* :func:`stderr_lines`: each line of a stderr, of which at most ``keep`` bytes of an unended
  line are held between reads.
* :func:`stop_process`: stdin closed, then after :data:`STDIN_GRACE_SECONDS` the process group
  gets SIGTERM (its keeper then ends the server's descendants), SIGKILL
  :data:`TERM_GRACE_SECONDS` later.
* :func:`describe_exit`: how a process ended, as a sentence's end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from asyncio.streams import FlowControlMixin
from collections.abc import AsyncIterator

import anyio

from awf_mcp.processes.upstreamprocess import KEEPER_GRACE_SECONDS
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES

STDIN_GRACE_SECONDS = 0.2
TERM_GRACE_SECONDS = KEEPER_GRACE_SECONDS + 0.3
"""After SIGTERM, the time the server's keeper has to end what it left before the group is SIGKILLed."""


async def exited(process: subprocess.Popen[bytes], seconds: float) -> bool:
    with anyio.move_on_after(seconds):
        while process.poll() is None:
            await anyio.sleep(0.01)
    return process.poll() is not None


def kill_group(process: subprocess.Popen[bytes], signum: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


async def stop_process(process: subprocess.Popen[bytes], stdin: asyncio.StreamWriter) -> None:
    """Close stdin, then SIGTERM and SIGKILL the process group after short graces."""
    with contextlib.suppress(Exception):
        stdin.close()
    if not await exited(process, STDIN_GRACE_SECONDS):
        kill_group(process, signal.SIGTERM)
        if not await exited(process, TERM_GRACE_SECONDS):
            kill_group(process, signal.SIGKILL)
    kill_group(process, signal.SIGKILL)  # whatever the server left in its group


def describe_exit(code: int | None) -> str:
    if code is None:
        return "it closed its stdout"
    if code < 0:
        try:
            return f"it was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"it was killed by signal {-code}"
    return f"it exited with code {code}"


async def pipes(
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


async def lines(stdout: asyncio.StreamReader) -> AsyncIterator[bytes | None]:
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


async def stderr_lines(stderr: asyncio.StreamReader, keep: int) -> AsyncIterator[bytes]:
    """Each line of ``stderr`` (without its newline) until its end; of a line not yet ended,
    only the last ``keep`` bytes are held between reads."""
    pending = b""
    while chunk := await stderr.read(65536):
        *whole, pending = (pending + chunk).split(b"\n")
        pending = pending[-keep:]
        for line in whole:
            yield line
