"""HTTP connections that cannot exhaust the server: request deadlines, a connection cap, one-line logs.

Why
---
uvicorn, the HTTP server the SDK's Streamable HTTP app runs on, times out only idle
keep-alive connections (``timeout_keep_alive``, armed after a response). A request whose
headers or body never finish arriving holds its connection, and a file descriptor, for
ever (uvicorn has no request-start timeout: its issue #157). ``limit_concurrency`` answers
``503`` to *every* request once that many connections are open, the token holder's too;
``h11_max_incomplete_event_size`` bounds header bytes, not time. Once the descriptors run
out, asyncio logs a traceback per accept attempt and no client is served.

Contract
--------
:func:`guarded_protocol` is uvicorn's h11 protocol with a :class:`ConnectionGuard`:

* **Deadlines.** A request's headers must arrive within :data:`HEAD_SECONDS` of the
  connection's opening (or of the previous response), and its body within
  :data:`BODY_SECONDS` of its headers; otherwise the connection is closed. A request that
  has arrived whole is never timed out, however long its answer streams.
* **A cap.** At most :func:`connection_limit` connections are open, well below the
  open-file limit (room is left for the tools' files and processes, and for the
  connections accepted in one go: uvicorn's ``backlog`` is :data:`ACCEPT_BATCH`). A
  connection past the cap closes the open one that has waited longest for its request
  (idle or half-sent); when every other one is being answered, the new one is closed. A
  client that sends its request at once is therefore served, however many slow
  connections an attacker holds: it would be the last to be closed.
* **One line per condition.** :func:`quiet_logs` sends uvicorn's and asyncio's records to
  awf-mcp's log, each on one line without traceback (unless ``--debug``), and each kind at
  most once a minute (the next line says how many were left out); the guard's own lines too.
"""

from __future__ import annotations

import contextlib
import logging
import resource
import time
from collections.abc import Iterator
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("awf_mcp.wire.http")

HEAD_SECONDS = 10.0
"""How long a request's headers may take to arrive, from the connection's opening or the previous response."""

BODY_SECONDS = 30.0
"""How long a request's body may take to arrive once its headers have."""

ACCEPT_BATCH = 64
"""uvicorn's ``backlog``: the listen queue, and the most connections asyncio accepts in one go."""

MAX_CONNECTIONS = 1024
"""The cap on open connections whatever the open-file limit."""

REPEAT_SECONDS = 60.0
"""A log line of one kind is shown at most once in this many seconds."""


def connection_limit(open_files: int | None = None) -> int:
    """How many connections may be open at once, for a soft open-file limit (default: this process's).

    A quarter of the limit (at least 64) is kept for everything else the server opens, and
    room for two accept batches (accepted before the guard sees them).
    """
    if open_files is None:
        open_files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if open_files == resource.RLIM_INFINITY or open_files <= 0:
        return MAX_CONNECTIONS
    spare = open_files - max(64, open_files // 4) - 2 * ACCEPT_BATCH
    return max(8, min(MAX_CONNECTIONS, spare))


class ConnectionGuard:
    """The open connections, and those waiting for their request in the order they began waiting."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.open: set[GuardedH11Protocol] = set()
        self.waiting: dict[GuardedH11Protocol, None] = {}  # insertion order: longest waiting first

    def opened(self, connection: GuardedH11Protocol) -> None:
        """Count a new connection; past the cap, close the one waiting longest (or this one)."""
        self.open.add(connection)
        if len(self.open) <= self.limit:
            return
        victim = next(iter(self.waiting), connection)
        log.warning(
            "HTTP: %d connections open, the most served at once (for the open-file limit): "
            "closed the one that waited longest for its request",
            self.limit,
        )
        self.close(victim)

    def close(self, connection: GuardedH11Protocol) -> None:
        """Forget ``connection`` and close it at once, dropping whatever it had yet to send."""
        self.forget(connection)
        connection.transport.abort()

    def forget(self, connection: GuardedH11Protocol) -> None:
        """``connection`` is closed."""
        self.open.discard(connection)
        self.waiting.pop(connection, None)

    def wait_for_request(self, connection: GuardedH11Protocol) -> None:
        """``connection`` begins waiting for (part of) a request: it is now the latest to."""
        self.waiting.pop(connection, None)
        if connection in self.open:
            self.waiting[connection] = None

    def answering(self, connection: GuardedH11Protocol) -> None:
        """``connection``'s request has arrived whole."""
        self.waiting.pop(connection, None)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, with the deadlines and the cap of :attr:`guard`."""

    guard: ConnectionGuard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase: str | None = None
        self._deadline: Any = None  # asyncio.TimerHandle

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self.guard.opened(self)
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self.guard.forget(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _follow(self) -> None:
        """Arm the deadline of the phase the request is in: its headers, its body, or none (arrived)."""
        if self.transport.is_closing():
            self._disarm()
            self._phase = None
            return
        state = self.conn.their_state
        phase = "headers" if state is h11.IDLE else "body" if state is h11.SEND_BODY else None
        if phase == self._phase:
            return
        self._phase = phase
        self._disarm()
        if phase is None:
            self.guard.answering(self)
            return
        seconds = HEAD_SECONDS if phase == "headers" else BODY_SECONDS
        self._deadline = self.loop.call_later(seconds, self._expire, phase, seconds)
        self.guard.wait_for_request(self)

    def _expire(self, phase: str, seconds: float) -> None:
        self._deadline = None
        if self._phase == phase and not self.transport.is_closing():
            log.warning(
                "HTTP: closed a connection whose request %s did not arrive within %g s", phase, seconds
            )
            self.guard.close(self)


def guarded_protocol(guard: ConnectionGuard) -> type[GuardedH11Protocol]:
    """The protocol class to give uvicorn (``Config(http=...)``) for connections under ``guard``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"guard": guard})


class OneLinePerCondition(logging.Filter):
    """Each record on one line, without traceback; a record like one shown in the last minute is held back.

    Records are alike when they come from the same logger with the same format string. The
    next one shown says how many were held back since. ``tracebacks`` keeps them (``--debug``).
    """

    def __init__(self, repeat_seconds: float = REPEAT_SECONDS, *, tracebacks: bool = False) -> None:
        super().__init__()
        self.repeat_seconds = repeat_seconds
        self.tracebacks = tracebacks
        self._shown: dict[tuple[str, str], tuple[float, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, str(record.msg))
        now = time.monotonic()
        shown_at, held = self._shown.get(key, (float("-inf"), 0))
        if now - shown_at < self.repeat_seconds:
            self._shown[key] = (shown_at, held + 1)
            return False
        self._shown[key] = (now, 0)
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None and not self.tracebacks:
            from awf_mcp.errors import describe_exception

            text = f"{text}: {describe_exception(record.exc_info[1])}"
            record.exc_info, record.exc_text, record.stack_info = None, None, None
        text = " ".join(text.split())  # asyncio's accept error spans lines
        if held:
            text += f" ({held} more like it in the last {self.repeat_seconds:g} s)"
        record.msg, record.args = text, ()
        return True


@contextlib.contextmanager
def quiet_logs() -> Iterator[None]:
    """While serving: uvicorn's, asyncio's and the guard's records through :class:`OneLinePerCondition`.

    uvicorn's and asyncio's go to awf-mcp's own log handlers (WARNING and above); the
    loggers are put back as they were afterwards.
    """
    ours = logging.getLogger("awf_mcp")
    handlers = ours.handlers
    one_line = OneLinePerCondition(tracebacks=ours.isEnabledFor(logging.DEBUG))  # --debug keeps them
    saved = []
    for name in ("uvicorn", "uvicorn.error", "asyncio"):
        logger = logging.getLogger(name)
        saved.append((logger, logger.handlers[:], logger.propagate, logger.level))
        logger.handlers[:] = handlers if name != "uvicorn.error" else []
        logger.propagate = name == "uvicorn.error"  # to "uvicorn", which has the handlers
        logger.setLevel(logging.WARNING)
        logger.addFilter(one_line)
    log.addFilter(one_line)
    try:
        yield
    finally:
        log.removeFilter(one_line)
        for logger, kept, propagate, level in saved:
            logger.removeFilter(one_line)
            logger.handlers[:] = kept
            logger.propagate = propagate
            logger.setLevel(level)
