"""Observing tool calls: structured call logs, the audit log, and OpenTelemetry spans.

Contract
--------
* :class:`JsonLogFormatter` renders a log record as one JSON object per line
  (``ts``, ``level``, ``logger``, ``message`` and any ``call`` fields), for
  ``--log-format json``.
* :class:`AuditLog` appends one JSONL record per finished call to a file:
  ``ts``, ``tool``, ``source``, ``duration_ms``, ``is_error``, ``error``, ``caller``
  (who called: :meth:`~awf_mcp.ports.Caller.fields`), ``arguments``, for a call the
  user was asked to confirm, ``confirmation`` (``question``, ``answer``), and for a call
  during which its upstream server asked its client things, ``upstream_requests`` and,
  past the bound, ``upstream_requests_omitted`` (below) (the format is documented in
  ``docs/audit.md``). Argument
  values under secret-looking keys (token, password, secret, key,
  authorization, credential, cookie, session) are replaced by ``"***"``; the
  error text and every argument string longer than :data:`MAX_VALUE_CHARS`
  are truncated with a note. Each
  record is a single ``write(2)`` on an ``O_APPEND`` descriptor, under a lock,
  so concurrent calls never interleave lines — not even across processes
  sharing the file.
* :class:`UpstreamRequest` is one request an upstream server made of its client during
  a call (``sampling/createMessage``, ``elicitation/create``, ``roots/list``): its method,
  whether the agent was asked (``forwarded``), its ``outcome`` (``answered``,
  ``declined``, ``cancelled``, ``refused`` with the ``reason`` the server was sent),
  ``duration_ms``, and the sizes of the request and of the answer in bytes of JSON —
  never their content: a sampling prompt, an elicitation's question or answer may
  hold the user's data. The call path gives each call a :class:`CallRequests`
  (:func:`bind_upstream_requests`); the upstream provider adds each request to that of
  the call it routed the request to (:func:`upstream_requests_of_call`). A call's record
  lists at most :data:`MAX_RECORDED_REQUESTS` and counts the rest
  (``upstream_requests_omitted``). A request still
  open when the call's record is written is recorded as refused, because the call
  ended before the agent answered (which is what the server is then told).
* :func:`call_span` opens one OpenTelemetry span per call (``tools/call NAME``)
  with attributes ``tool.name``, ``tool.source`` and, at the end,
  ``tool.is_error``. Without a configured tracer provider the span is the API's invalid
  one (a no-op), made current in a few microseconds.
* :func:`configure_logging` sends the ``awf_mcp`` loggers to stderr or a file, as
  text or JSON lines; a bad level, format or file is a :class:`~awf_mcp.errors.UserError`.
  It imports nothing heavy, so ``serve`` can set up logging before the SDK loads.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import functools
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from awf_mcp.errors import UserError
from awf_mcp.ports import inert_json, inert_text

if TYPE_CHECKING:
    from awf_mcp.core.callrecord import CallRecord

MAX_VALUE_CHARS = 1000
MASK = "***"
SECRET_KEY = re.compile(r"token|passw|secret|key|authorization|credential|cookie|session", re.IGNORECASE)


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def truncate(text: str) -> str:
    """``text``, cut to :data:`MAX_VALUE_CHARS` with a note saying how much was left out."""
    if len(text) > MAX_VALUE_CHARS:
        return f"{text[:MAX_VALUE_CHARS]}... ({len(text) - MAX_VALUE_CHARS} more characters)"
    return text


def redact(value: Any, key: str | None = None) -> Any:
    """``value`` with secrets masked and long strings truncated, recursively."""
    if key is not None and SECRET_KEY.search(key) and value is not None:
        return MASK
    if isinstance(value, str):
        return truncate(value)
    if isinstance(value, dict):
        return {str(k): redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(item) for item in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(repr(value))


def call_fields(record: CallRecord) -> dict[str, Any]:
    """The fields of a call log record (without arguments); a long error text is truncated."""
    return {
        "tool": record.tool,
        "source": record.source,
        "duration_ms": round(record.duration_ms, 3),
        "is_error": record.is_error,
        "error": truncate(record.error) if record.error else record.error,
        "caller": record.caller.fields(),
    }


RequestOutcome = Literal["answered", "declined", "cancelled", "refused"]

MAX_RECORDED_REQUESTS = 100
"""How many upstream requests one call's record lists; more are counted in ``upstream_requests_omitted``."""

CALL_ENDED = "the call ended before the agent answered"
"""The reason of a request still waiting for the agent when its call's record is written."""


def json_size(value: Any) -> int:
    """How many bytes ``value`` takes as UTF-8 JSON (what the audit log records instead of content)."""
    return len(json.dumps(value, ensure_ascii=False, default=repr).encode())


@dataclass(slots=True)
class UpstreamRequest:
    """One request an upstream server made of its client during a call; see the module docstring."""

    method: str
    request_bytes: int
    forwarded: bool = False
    """Whether the agent was asked (``roots/list`` is answered by awf-mcp, refusals mostly before)."""
    outcome: RequestOutcome | None = None
    """``None`` while the request waits for an answer."""
    reason: str | None = None
    answer_bytes: int | None = None
    duration_ms: float | None = None
    started: float = field(default_factory=time.perf_counter)

    def finish(
        self, outcome: RequestOutcome, *, reason: str | None = None, answer: Mapping[str, Any] | None = None
    ) -> None:
        """Record how the request ended: ``answer`` is the result the server was sent (measured, not kept)."""
        if self.outcome is not None:
            return
        self.outcome = outcome
        self.reason = reason
        self.answer_bytes = None if answer is None else json_size(answer)
        self.duration_ms = (time.perf_counter() - self.started) * 1000

    def fields(self) -> dict[str, Any]:
        """The request as the audit log shows it; an open one is refused (:data:`CALL_ENDED`)."""
        open_ = self.outcome is None
        duration = (time.perf_counter() - self.started) * 1000 if open_ else self.duration_ms or 0.0
        reason = CALL_ENDED if open_ else self.reason
        return {
            "method": truncate(self.method),
            "forwarded": self.forwarded,
            "outcome": "refused" if open_ else self.outcome,
            "reason": truncate(reason) if reason else None,
            "duration_ms": round(duration, 3),
            "request_bytes": self.request_bytes,
            "answer_bytes": None if open_ else self.answer_bytes,
        }


class CallRequests:
    """The upstream requests of one call, as its record lists them.

    At most :data:`MAX_RECORDED_REQUESTS` are kept; more are only counted (``omitted``), so a
    server flooding its client during a long call cannot grow the record without bound.
    """

    def __init__(self) -> None:
        self.requests: list[UpstreamRequest] = []
        self.omitted = 0

    def add(self, request: UpstreamRequest) -> None:
        """Record ``request`` (or count it, past the bound)."""
        if len(self.requests) < MAX_RECORDED_REQUESTS:
            self.requests.append(request)
        else:
            self.omitted += 1

    def take_over(self, other: CallRequests) -> None:
        """Record ``other``'s requests too (a call that has no record of its own), leaving it empty."""
        for request in other.requests:
            self.add(request)
        self.omitted += other.omitted
        other.requests, other.omitted = [], 0

    def fields(self) -> tuple[dict[str, Any], ...]:
        """Each kept request as the audit log shows it, in the order asked."""
        return tuple(request.fields() for request in self.requests)


RequestsToken = contextvars.Token["CallRequests | None"]

_call_requests: contextvars.ContextVar[CallRequests | None] = contextvars.ContextVar(
    "awf_mcp_upstream_requests", default=None
)


def bind_upstream_requests(requests: CallRequests) -> RequestsToken:
    """Make ``requests`` where the running call's upstream requests go; returns the reset token."""
    return _call_requests.set(requests)


def unbind_upstream_requests(token: RequestsToken) -> None:
    """Undo :func:`bind_upstream_requests`."""
    _call_requests.reset(token)


def upstream_requests_of_call() -> CallRequests:
    """The running call's upstream requests; outside a call, a fresh collection nobody records."""
    requests = _call_requests.get()
    return requests if requests is not None else CallRequests()


class JsonLogFormatter(logging.Formatter):
    """One JSON object per log line; a call record's fields are included when present."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": _now(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        call = getattr(record, "call", None)
        if isinstance(call, dict):
            payload.update(call)
        if record.exc_info:
            payload["traceback"] = self.formatException(record.exc_info)
        return inert_json(json.dumps(payload, ensure_ascii=False))


class TextLogFormatter(logging.Formatter):
    """``awf-mcp: LEVEL: message``, the message made inert (:func:`~awf_mcp.ports.inert_text`): a name
    from an upstream holding a newline, an ANSI escape or a bidirectional override shows as escapes
    and can neither start a line of its own nor restyle or reorder the terminal."""

    def __init__(self) -> None:
        super().__init__("awf-mcp: %(levelname)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:
        return inert_text(super().formatMessage(record))


AuditSink = Callable[[Mapping[str, Any]], None]
_audit_sinks: list[AuditSink] = []


def send_audit_events_to(sink: AuditSink) -> None:
    """Have every :func:`audit_event` of this process written by ``sink`` (the audit log's ``event``)."""
    _audit_sinks.append(sink)


def audit_event(fields: Mapping[str, Any]) -> None:
    """Record something that is not a call (an upstream tool held back) in the audit log, if there is one."""
    for sink in list(_audit_sinks):
        sink(fields)


class AuditLog:
    """Appends one redacted JSONL record per call to ``path``; see the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        self._lock = threading.Lock()

    def __call__(self, record: CallRecord) -> None:
        entry = {"ts": _now(), **call_fields(record), "arguments": redact(dict(record.arguments))}
        if record.confirmation:
            entry["confirmation"] = dict(record.confirmation)
        if record.upstream_requests:
            entry["upstream_requests"] = [dict(request) for request in record.upstream_requests]
        if record.upstream_requests_omitted:
            entry["upstream_requests_omitted"] = record.upstream_requests_omitted
        self._append(entry)

    def event(self, fields: Mapping[str, Any]) -> None:
        """Append one record that is not a call: ``ts`` and ``fields`` (``event`` says what happened)."""
        self._append({"ts": _now(), **redact(dict(fields))})

    def _append(self, entry: Mapping[str, Any]) -> None:
        line = (inert_json(json.dumps(entry, ensure_ascii=False, default=repr)) + "\n").encode()
        with self._lock:
            written = os.write(self._fd, line)
            if written != len(line):  # a short write on a regular file means the disk is full
                os.write(self._fd, line[written:])

    def close(self) -> None:
        """Close the file."""
        with contextlib.suppress(OSError):
            os.close(self._fd)


@contextlib.contextmanager
def call_span(tool: str, source: str) -> Iterator[Any]:
    """An OpenTelemetry span around one call; yields the span (set ``tool.is_error`` on it).

    While no tracer provider is configured, the span is the API's invalid one, made current as the
    API's no-op tracer would, without its layers of context managers (they cost more than the rest
    of the call path's bookkeeping).
    """
    from opentelemetry import trace

    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        with trace.use_span(trace.INVALID_SPAN, end_on_exit=True) as span:
            yield span
        return
    with _tracer().start_as_current_span(
        f"tools/call {tool}", attributes={"tool.name": tool, "tool.source": source}
    ) as span:
        yield span


@functools.cache
def _tracer() -> Any:
    from opentelemetry import trace

    return trace.get_tracer("awf_mcp")


def configure_logging(level: str, log_format: str = "text", log_file: str | None = None) -> None:
    """Send the ``awf_mcp`` loggers to stderr (or ``log_file``), as text or JSON lines."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise UserError(f"unknown log level '{level}'; use DEBUG, INFO, WARNING or ERROR")
    if log_format not in ("text", "json"):
        raise UserError(f"unknown log format '{log_format}'; use text or json")
    handler: logging.Handler
    if log_file:
        try:
            handler = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot open log file {log_file}: {exc.strerror or exc}") from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(TextLogFormatter())
    root = logging.getLogger("awf_mcp")
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    root.propagate = False
