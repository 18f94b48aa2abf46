"""stdio: one client served over the claimed standard descriptors, frame by frame.

Framing and limits (threat model: the peer may send anything)
--------------------------------------------------------------
A line that is not JSON gets ``-32700 Parse error`` naming the problem (JSON
nested more than about 200 levels deep, a number too long to parse, or the
parser's own reason, with its position); JSON that is not a JSON-RPC message
gets ``-32600 Invalid Request`` (with the request's id when it has one); a
line over 10 MiB gets ``-32600`` saying so, and is never buffered whole. The
server keeps serving after each of these.

At most :data:`REQUESTS_IN_FLIGHT_LIMIT` requests (``subscriptions/listen``
streams apart) are handled at once: a request past that gets ``-32603`` saying so at once
(stdin keeps being read, so cancellations and the client's answers still arrive). A
request counts from its arrival until its answer leaves, or until the client cancels it
(the SDK never answers a cancelled request). A client that sends requests but never
reads the answers therefore holds at most that many answers in awf-mcp's memory, plus
the writer's bounded backlog; once that backlog is full, stdin is no longer read.

The reply sink (:class:`ReplySink`) encodes each reply on its own (:func:`encode_reply`): a
reply that cannot be encoded, or whose frame exceeds
:data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES`, is answered with a JSON-RPC error ``-32603``
for that request id (a notification is dropped and logged), and the server keeps serving. No
frame over the limit ever leaves the server.
"""

from __future__ import annotations

import functools
import json
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from awf_mcp.concurrency import hand_over
from awf_mcp.ports import visible_text
from awf_mcp.wire.framing import (
    MAX_MESSAGE_BYTES,
    Frame,
    FrameReader,
    FrameWriter,
    Oversized,
    Sink,
    StdioWire,
)
from awf_mcp.wire.mapping import too_large_message
from awf_mcp.wire.served import ServedServer

log = logging.getLogger("awf_mcp.wire.server")

EOF_GRACE_SECONDS = 0.7
"""After stdin EOF, how long requests already received may take to answer before they are cancelled."""

REQUESTS_IN_FLIGHT_LIMIT = 64
"""On stdio, how many requests (listen streams apart) are handled at once; more are refused (:data:`BUSY`)."""

BUSY = (
    f"awf-mcp is already handling {REQUESTS_IN_FLIGHT_LIMIT} requests from this client, the most it "
    "handles at once: wait for some of their answers (or cancel them), then send this request again"
)

CANCELLED = "notifications/cancelled"
"""The client's cancellation of a request, which the SDK never answers."""


def _error_frame(request_id: Any, code: int, message: str) -> bytes:
    error = types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )
    return error.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"


def json_problem(exc: Exception) -> str | None:
    """What made the SDK's JSON parser reject a line, in words, or ``None`` when it parsed."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    for error in errors():
        if error.get("type") != "json_invalid":
            continue
        reason = str((error.get("ctx") or {}).get("error") or error.get("msg") or "")
        where = reason.partition(" at ")[2]
        at = f" (at {where})" if where else ""
        if "recursion limit" in reason:
            return (
                f"the JSON is nested too deeply{at}; "
                "at most about 200 levels of arrays and objects are accepted"
            )
        if "number out of range" in reason:
            return f"a number is too long or too large to parse{at}; send very long numbers as strings"
        return f"the line is not valid JSON: {reason}" if reason else "the line is not valid JSON"
    return None


def frame_error(data: bytes, problem: str | None = None) -> bytes:
    """The JSON-RPC error answering an input line the SDK could not accept.

    ``problem`` is :func:`json_problem` of the SDK's error: when the SDK's parser
    rejected the line, the answer is ``-32700`` with that reason.
    """
    if problem is not None:
        return _error_frame(None, types.PARSE_ERROR, f"Parse error: {problem}")
    try:
        parsed = json.loads(data)
    except RecursionError:
        return _error_frame(None, types.PARSE_ERROR, "Parse error: the JSON is nested too deeply")
    except ValueError as exc:
        reason = "a number is too long to parse" if "digits" in str(exc) else "the line is not valid JSON"
        return _error_frame(None, types.PARSE_ERROR, f"Parse error: {reason}")
    request_id = parsed.get("id") if isinstance(parsed, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, str | int):
        request_id = None
    return _error_frame(
        request_id,
        types.INVALID_REQUEST,
        "Invalid Request: not a JSON-RPC 2.0 request, notification or response",
    )


def encode_reply(reply: Any) -> bytes | None:
    """One outgoing message as a frame, never over the limit; see the module docstring.

    A response that cannot be encoded or is too large becomes a ``-32603`` error
    for its id; any other message that cannot be sent is dropped (``None``).
    """
    problem = ""
    try:
        data: bytes = reply.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
        if len(data) <= MAX_MESSAGE_BYTES:
            return data
        problem = too_large_message("the reply", len(data) - 1)
    except Exception as exc:  # a value the JSON encoder refuses: the server must not go down for it
        problem = f"the reply could not be encoded as JSON ({type(exc).__name__})"
    request_id = getattr(reply, "id", None)
    if not isinstance(reply, types.JSONRPCResponse | types.JSONRPCError) or request_id is None:
        log.warning("dropped an outgoing %s: %s", type(reply).__name__, problem)
        return None
    log.warning("answered request %r with an error: %s", request_id, problem)
    if isinstance(request_id, str):
        request_id = visible_text(request_id)
    try:
        frame = _error_frame(request_id, types.INTERNAL_ERROR, f"Internal error: {problem}")
    except Exception:
        return None
    return frame if len(frame) <= MAX_MESSAGE_BYTES else None


class ReplySink(Sink):
    """The SDK server's write stream (its ``WriteStream`` protocol) on the agent's pipe.

    Each message is encoded (:func:`encode_reply`) and queued on the :class:`FrameWriter` by the
    task that sends it, in the order sent: no memory stream and no pump task between, which
    cost every answer two passes of the event loop. While the writer's backlog is over its bound
    (a client that does not read), senders wait their turn, in order, and each encodes its
    message only when the backlog has room again: the answers nobody reads stay the SDK's
    models of the requests in flight (:data:`REQUESTS_IN_FLIGHT_LIMIT`), never their frames.
    ``answered`` is told of every message as it is queued (a request keeps its place among those
    in flight until then). After :meth:`aclose` messages are dropped.
    """

    def __init__(self, writer: FrameWriter, answered: Callable[[Any], None]) -> None:
        super().__init__()
        self._writer = writer
        self._answered = answered

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            return

        async def later() -> None:
            await self._writer.room()
            self._write(item.message)

        now = functools.partial(self._write, item.message) if self._writer.has_room() else None
        await self.in_order(now, later)

    def _write(self, message: Any) -> None:
        self._answered(message)  # only now: a request counts until its answer is queued to leave
        data = encode_reply(message)
        if data is not None:
            self._writer.write(data)


async def serve_stdio(
    server: ServedServer, wire: StdioWire, frames: AsyncIterator[Frame | Oversized] | None = None
) -> None:
    """Serve one client of ``server`` over ``wire`` until its EOF (or until cancelled).

    ``frames`` are the wire's input frames when the caller has begun reading them (the
    runtime reads the first one ahead); by default a reader of ``wire`` is made here.
    """
    if frames is None:
        frames = FrameReader(wire.read_fd, MAX_MESSAGE_BYTES).frames()
    writer = FrameWriter(wire.write_fd)
    to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)

    in_flight: set[Any] = set()
    handling: Counter[Any] = Counter()  # requests per id, listen streams apart (they stay open)

    def answered(reply: Any) -> None:
        if isinstance(reply, types.JSONRPCResponse | types.JSONRPCError):
            in_flight.discard(reply.id)
            if handling[reply.id] > 1:
                handling[reply.id] -= 1
            else:
                handling.pop(reply.id, None)

    async def pump_input() -> None:
        try:
            await read_input()
        finally:  # input has ended: shutdown must not wait for a reader that stopped reading
            writer.stop_waiting()

    async def read_input() -> None:
        async with to_session:
            async for item in frames:
                if isinstance(item, Oversized):
                    log.warning("refused a %d-byte message (limit %d bytes)", item.size, MAX_MESSAGE_BYTES)
                    await writer.send(
                        _error_frame(
                            None,
                            types.INVALID_REQUEST,
                            f"Invalid Request: message of {item.size} bytes exceeds the "
                            f"{MAX_MESSAGE_BYTES}-byte limit",
                        )
                    )
                    continue
                assert isinstance(item, Frame)
                try:
                    message = types.jsonrpc_message_adapter.validate_json(item.data, by_name=False)
                except Exception as exc:
                    await writer.send(frame_error(item.data, json_problem(exc)))
                    continue
                if isinstance(message, types.JSONRPCRequest):
                    if message.method != "subscriptions/listen":
                        if handling.total() >= REQUESTS_IN_FLIGHT_LIMIT:
                            await writer.send(_error_frame(message.id, types.INTERNAL_ERROR, BUSY))
                            continue
                        handling[message.id] += 1
                    in_flight.add(message.id)
                elif isinstance(message, types.JSONRPCNotification) and message.method == CANCELLED:
                    cancelled = (message.params or {}).get("requestId")  # never answered (SDK)
                    if isinstance(cancelled, str | int):
                        in_flight.discard(cancelled)
                        handling.pop(cancelled, None)
                await hand_over(to_session, SessionMessage(message))  # 16 wait at most
            server.end_listen_streams()  # the one client left: its listen streams end now
            with anyio.move_on_after(EOF_GRACE_SECONDS):
                while in_flight:
                    await anyio.sleep(0.005)

    async def run_session() -> None:
        await server.sdk_server.run(
            session_reads, ReplySink(writer, answered), server.sdk_server.create_initialization_options()
        )
        input_scope.cancel()

    input_scope = anyio.CancelScope()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(run_session)
            with input_scope:
                await pump_input()
    finally:
        with anyio.CancelScope(shield=True):
            await writer.drain(timeout=1.0)
        writer.close()
