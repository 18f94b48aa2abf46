"""A stdio upstream's ``tools/call`` written and answered beside the SDK session: :class:`DirectRequests`.

Why
---
Through the SDK's client session a request crosses its dispatcher, two memory streams and
the transport's pump, each a pass of the event loop, with a pydantic model built and dumped
on the way out and the answer routed back the same way: about 0.25 ms of the relay's time
on each forwarded call, more than the upstream itself takes to answer a simple one. A
request made here is one JSON line written on the server's stdin; its answer is taken out
of the session's read stream (:func:`awf_mcp.wire.clientstdio.stdio_streams`) before the
session would see it, and handed to the waiting call.

Contract
--------
* :meth:`DirectRequests.request` writes one JSON-RPC request and returns the ``result`` object
  of its answer (already read as a JSON-RPC message by the stdout reader); an error answer
  raises the SDK's :class:`~mcp.shared.exceptions.MCPError` with the server's code, message and
  data, as the session does; a connection that ends first (or cannot be written) raises
  ``MCPError`` with ``CONNECTION_CLOSED``. Parameters that are not JSON raise ``ValueError``
  before anything is written.
* An answer is taken where the session would have taken it: :meth:`DirectRequests.reads` is the
  session's read stream less these answers, each settled when the session's reader comes to it,
  after every message the server sent before it (a log message sent during a call reaches that
  call before its result, as through the session).
* Ids are integers from :data:`FIRST_ID` up, apart from the session's (which count from 0), so
  an answer is never taken from the session nor given to it (an id echoed as a string of its
  digits is the same id, as the session has it). An answer to an id of this range
  that no request waits for (it was cancelled) is dropped.
* A request whose caller is cancelled (the agent's cancellation, a timeout) sends the server
  ``notifications/cancelled`` for it, as the session does.
* What the caller does with the result (validation as the SDK's result types, as the session
  would) is :meth:`awf_mcp.wire.clientsession.OfferingSession.call_tool_result`'s.

Nothing here is used for a call with progress (the SDK session routes the server's progress
notifications by token), nor on HTTP transports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared._stream_protocols import ReadStream
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

FIRST_ID = 1 << 30
"""The first id of a direct request: far past any the SDK session counts to (from 0), and within
a signed 32-bit integer, which is how some servers read a numeric id."""


class DirectRequests:
    """Requests on one stdio connection that bypass the SDK session; see the module docstring."""

    def __init__(self) -> None:
        self._stdin: asyncio.StreamWriter | None = None
        self._waiting: dict[int, asyncio.Future[types.JSONRPCResponse | types.JSONRPCError]] = {}
        self._next_id = FIRST_ID
        self._closed = False

    def attach(self, stdin: asyncio.StreamWriter) -> None:
        """The server's stdin, once its pipes are open."""
        self._stdin = stdin

    @property
    def usable(self) -> bool:
        """The pipes are open and the connection has not ended."""
        return self._stdin is not None and not self._closed

    def settle(self, message: types.JSONRPCMessage) -> bool:
        """Give ``message`` to the request it answers; ``True`` when it was one of these requests'
        answers (then the session must not see it)."""
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        request_id = message.id
        if type(request_id) is str and request_id.isdigit() and len(request_id) < 20:
            request_id = int(request_id)  # a server that echoes ids as strings (the SDK takes it too)
        if type(request_id) is not int or request_id < FIRST_ID:
            return False
        waiter = self._waiting.pop(request_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(message)
        return True

    def reads(
        self, session_reads: ReadStream[SessionMessage | Exception]
    ) -> ReadStream[SessionMessage | Exception]:
        """``session_reads`` less the answers to these requests (see the module docstring)."""
        return _SessionReads(session_reads, self)

    def close(self) -> None:
        """The connection has ended: every request still waiting fails with ``CONNECTION_CLOSED``."""
        self._closed = True
        waiting, self._waiting = self._waiting, {}
        for waiter in waiting.values():
            if not waiter.done():
                waiter.set_exception(MCPError(code=types.CONNECTION_CLOSED, message="Connection closed"))

    async def request(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The ``result`` of ``method`` with ``params``; see the module docstring."""
        stdin = self._stdin
        if stdin is None or self._closed:
            raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed")
        request_id = self._next_id
        line = _line({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        self._next_id += 1
        waiter = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = waiter
        try:
            try:
                stdin.write(line)
                await stdin.drain()
            except (ConnectionError, OSError, RuntimeError):
                raise MCPError(code=types.CONNECTION_CLOSED, message="Connection closed") from None
            answer = await waiter
        except asyncio.CancelledError:
            self._cancel(stdin, request_id)
            raise
        finally:
            self._waiting.pop(request_id, None)
        if isinstance(answer, types.JSONRPCError):
            error = answer.error
            raise MCPError(code=error.code, message=error.message, data=error.data)
        result: dict[str, Any] = answer.result
        return result

    def _cancel(self, stdin: asyncio.StreamWriter, request_id: int) -> None:
        """Tell the server a request is abandoned (written now, never waited for)."""
        if self._closed:
            return
        notice = {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the caller cancelled the request"},
        }
        with contextlib.suppress(Exception):
            stdin.write(_line(notice))


class _SessionReads:
    """The session's read stream, whose reader settles the answers to direct requests in passing."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], direct: DirectRequests) -> None:
        self._inner = inner
        self._direct = direct

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if isinstance(item, Exception) or not self._direct.settle(item.message):
                return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> _SessionReads:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> _SessionReads:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _line(message: Mapping[str, Any]) -> bytes:
    """One message as a JSON line (ASCII, so no string of the agent's can break the encoding)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"
