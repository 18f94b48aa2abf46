"""Requests from an upstream server to its client, routed to the agent's calls.

See "Upstream requests" in :mod:`awf_mcp.core.upstream`. :class:`RequestRouting` is the
part of :class:`~awf_mcp.core.upstream.provider.UpstreamProvider` that keeps the server's
calls in flight (:class:`Flight`), answers ``roots/list`` itself, forwards sampling and
elicitation to the oldest attached call's agent, and suspends and resumes calls on the
stateless revision.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any, cast

import anyio

from awf_mcp.core.clientchannel import CLIENT_METHODS, LOG_LEVELS, RequestLog, feature_of
from awf_mcp.core.observability import (
    CallRequests,
    RequestOutcome,
    UpstreamRequest,
    json_size,
    upstream_requests_of_call,
)
from awf_mcp.core.roots import root_uri
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream.session import ClientOffer, UpstreamRequestRefused, UpstreamSession
from awf_mcp.ports import CallContext, ClientCannotAnswer, InputRequired, ToolResult

log = logging.getLogger("awf_mcp.upstream")

SUSPEND_SECONDS = 300.0
"""How long an upstream's call waits, suspended, for an agent on the stateless revision to come back
with its answer (the agent's ``request_state`` lives ten minutes)."""
MAX_PENDING_REQUESTS = 8
"""How many of one server's requests may wait for the agent at once; more are refused (a server
flooding the agent's user with questions is cut short)."""
MAX_SUSPENDED = 16
"""How many calls of one server may be suspended at once; beyond that the oldest is cancelled."""
MAX_PENDING_LOG_BYTES = 1 << 20
"""How many bytes of the server's log messages (their JSON) may wait to be sent on one agent's
request; more are dropped (a server flooding them cannot grow awf-mcp's memory)."""
LOG_SEND_SECONDS = 1.0
"""How long sending one log message on an agent's request may take (a client that does not read)."""


def request_log(channel: object) -> RequestLog | None:
    """``channel`` when it is the call's :class:`RequestLog` (the stateless revision), else ``None``.

    The answer of ``isinstance(channel, RequestLog)``, judged once per type of channel: a
    protocol's ``isinstance`` costs about 20 us, on every forwarded call.
    """
    kind = type(channel)
    speaks = _SPEAKS_REQUEST_LOG.get(kind)
    if speaks is None:
        speaks = _SPEAKS_REQUEST_LOG[kind] = isinstance(channel, RequestLog)
    return cast(RequestLog, channel) if speaks else None


_SPEAKS_REQUEST_LOG: dict[type, bool] = {}


class RequestRouting:
    """The request routing of one upstream provider; see the module docstring."""

    spec: ServerSpec
    offer: ClientOffer
    _roots: tuple[str, ...]
    _in_flight: list[Flight]
    _suspended: list[Flight]
    _asking: int
    _roots_told: tuple[str, ...] | None

    async def _follow(self, flight: Flight) -> ToolResult:
        """The agent's call waiting for ``flight``: its outcome, or :class:`InputRequired` to suspend it."""
        try:
            while True:
                await flight.wake.wait()
                flight.wake = anyio.Event()
                await flight.send_logs()
                if flight.ended:
                    if flight.failure is not None:
                        raise flight.failure
                    assert flight.outcome is not None
                    return flight.outcome
                question = flight.question
                if question is not None and not question.put and not question.answered.is_set():
                    question.put = True
                    self._suspend(flight)
                    raise question.asked
        except InputRequired:
            raise
        except BaseException:
            flight.abandon()  # the agent's call was cancelled or timed out: so is the upstream call
            raise

    def _suspend(self, flight: Flight) -> None:
        flight.attached = False
        flight.suspended_at = time.monotonic()
        self._suspended.append(flight)
        while len(self._suspended) > MAX_SUSPENDED:
            oldest = self._suspended.pop(0)
            log.info(
                "server '%s': gave up a suspended call of %s (too many suspended)",
                self.spec.name,
                oldest.tool,
            )
            oldest.abandon()

    def _resumable(self, tool: str, arguments: Mapping[str, Any]) -> Flight | None:
        """The oldest suspended call of ``tool`` with ``arguments`` whose question is still open."""
        now = time.monotonic()
        for flight in list(self._suspended):
            if now - flight.suspended_at > SUSPEND_SECONDS:
                self._suspended.remove(flight)
                flight.abandon()
        for flight in self._suspended:
            question = flight.question
            if (
                flight.tool == tool
                and flight.arguments == arguments
                and question
                and not question.answered.is_set()
            ):
                return flight
        return None

    async def _resume(self, flight: Flight, context: CallContext) -> ToolResult:
        """The agent's retry of a suspended call: its answer goes upstream, and the call is followed again."""
        question = flight.question
        assert question is not None
        asked = question.asked
        try:
            answer: Mapping[str, Any] | None = await context.channel.ask(asked.method, asked.params)
            refusal = ""
        except ClientCannotAnswer as exc:
            answer, refusal = None, f"awf-mcp could not forward {asked.method}: {exc}"
        # (an InputRequired here, the agent retrying without the answer, leaves the call suspended)
        if flight in self._suspended:
            self._suspended.remove(flight)
        flight.context = context
        # The call that ended with input_required has no record: its requests go into the retry's.
        requests = upstream_requests_of_call()
        requests.take_over(flight.requests)
        flight.requests = requests
        flight.attached = True
        flight.question = None
        question.settle(answer, refusal)
        return await self._follow(flight)

    async def _announce_roots(self, session: UpstreamSession, context: CallContext) -> None:
        """``notifications/roots/list_changed`` when this call's roots differ from those last told."""
        roots = context.roots if context.roots is not None else self._roots
        if self._roots_told is not None and roots != self._roots_told and "roots" in self.offer:
            self._roots_told = None
            await session.roots_changed()

    def _log_to_calls(self, level: str, logger: str, data: Any) -> None:
        """A log message of the server, to each agent's request following one of its calls that asked
        for that level (the stateless revision's per-request log delivery)."""
        for flight in self._in_flight:
            wanted = flight.log_level()
            if flight.attached and wanted is not None and LOG_LEVELS.index(level) >= LOG_LEVELS.index(wanted):
                flight.queue_log(level, logger, data)

    def _oldest_attached(self) -> Flight | None:
        return next((flight for flight in self._in_flight if flight.attached), None)

    def roots(self) -> tuple[str, ...]:
        """The roots an upstream's ``roots/list`` is answered with; see the module docstring."""
        flight = self._oldest_attached()
        confined = flight.context.roots if flight is not None else None
        return confined if confined is not None else self._roots

    async def answer(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The result for the server's request ``method``; see "Upstream requests" in the module docstring.

        Raises :class:`UpstreamRequestRefused` with the sentence the server is sent. The request
        goes into the record of the call it is routed to (the oldest attached one), whatever its
        outcome.
        """
        flight = self._oldest_attached()
        request = UpstreamRequest(method=method, request_bytes=json_size(params))
        if flight is not None:
            flight.requests.add(request)
        during = "outside any call"
        if flight is not None:
            during = f"during {flight.context.tool_name or 'a call'}"
        try:
            result = await self._route(method, params, flight, request)
        except UpstreamRequestRefused as exc:
            request.finish("refused", reason=str(exc))
            log.info("server '%s' asked %s %s: refused: %s", self.spec.name, method, during, exc)
            raise
        request.finish(_outcome(method, result), answer=result)
        how = "forwarded to the agent" if request.forwarded else "answered by awf-mcp"
        log.info("server '%s' asked %s %s: %s, %s", self.spec.name, method, during, how, request.outcome)
        return result

    async def _route(
        self, method: str, params: Mapping[str, Any], flight: Flight | None, request: UpstreamRequest
    ) -> Mapping[str, Any]:
        """Answer one request of the server: awf-mcp itself, the agent of ``flight``, or a refusal."""
        name = self.spec.name
        feature = CLIENT_METHODS.get(method)
        if feature is None:
            raise UpstreamRequestRefused(
                f"awf-mcp does not answer {method} from server '{name}': it is not a request a server may "
                "send its client",
                unsupported=True,
            )
        if feature == "roots":
            self._roots_told = self.roots()
            return {"roots": [{"uri": root_uri(root)} for root in self._roots_told]}
        if feature not in self.offer:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': it did not advertise {feature} to this "
                "server, because the agent did not declare it",
                unsupported=True,
            )
        if flight is None:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': none of the server's tool calls, prompts "
                "or reads is running, and awf-mcp forwards such a request to the agent only during one"
            )
        if self._asking >= MAX_PENDING_REQUESTS:
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method} from server '{name}': {MAX_PENDING_REQUESTS} of its requests "
                "already wait for the agent; ask again once they are answered"
            )
        self._asking += 1
        try:
            return await flight.ask(method, params, request)
        finally:
            self._asking -= 1


def _outcome(method: str, result: Mapping[str, Any]) -> RequestOutcome:
    """How a request the server got an answer to ended: an elicitation may be declined or cancelled."""
    if method == "elicitation/create":
        action = result.get("action")
        if action == "decline":
            return "declined"
        if action == "cancel":
            return "cancelled"
    return "answered"


class Question:
    """A request of the server that ended the agent's call with ``input_required``, waiting for the retry."""

    def __init__(self, asked: InputRequired) -> None:
        self.asked = asked
        self.put = False
        """The agent's call has ended with it (the agent was asked)."""
        self.answered = anyio.Event()
        self.answer: Mapping[str, Any] | None = None
        self.refusal = ""

    def settle(self, answer: Mapping[str, Any] | None, refusal: str = "") -> None:
        if not self.answered.is_set():
            self.answer, self.refusal = answer, refusal
            self.answered.set()


class Flight:
    """One call forwarded to the server, while it runs: the agent's channel for the server's requests.

    ``attached`` while an agent's call follows it; a suspended flight (the agent's call ended with
    ``input_required``) waits for the agent's retry with its ``question`` open.
    """

    def __init__(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        context: CallContext,
        requests: CallRequests,
    ) -> None:
        self.tool = tool
        self.arguments = dict(arguments)
        self.context = context
        self.requests = requests
        """The upstream requests of the agent's call that follows it now (its record lists them)."""
        self.attached = True
        self.ended = False
        self.outcome: ToolResult | None = None
        self.failure: Exception | None = None
        self.question: Question | None = None
        self.suspended_at = 0.0
        self.wake = anyio.Event()
        self.task: asyncio.Task[None] | None = None
        self._asking: set[anyio.CancelScope] = set()
        self._logs: list[tuple[str, str, Any, int]] = []
        self._log_bytes = 0

    def log_level(self) -> str | None:
        """The log level the agent's request following this call asked for, if any."""
        channel = request_log(self.context.channel)
        return channel.log_level() if channel is not None else None

    def queue_log(self, level: str, logger: str, data: Any) -> None:
        """Have the agent's request send this log message (dropped past :data:`MAX_PENDING_LOG_BYTES`)."""
        size = json_size(data) + len(logger)
        if self._log_bytes + size > MAX_PENDING_LOG_BYTES:
            log.debug("a log message of %d bytes is dropped: too many wait", size)
            return
        self._logs.append((level, logger, data, size))
        self._log_bytes += size
        self.wake.set()

    async def send_logs(self) -> None:
        """Send the log messages waiting, on the agent's request that follows this call now."""
        while self._logs:
            level, logger, data, size = self._logs.pop(0)
            self._log_bytes -= size
            channel = request_log(self.context.channel)
            if channel is None:
                continue
            try:
                with anyio.move_on_after(LOG_SEND_SECONDS):
                    await channel.log(level, logger, data)
            except Exception as exc:  # the agent gone meanwhile
                log.debug("a log message was not sent: %s: %s", type(exc).__name__, exc)

    def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        """Progress of the upstream call, to whichever agent call follows it now."""
        if self.attached:
            self.context.report_progress(progress, total, message)

    def end(self) -> None:
        """The upstream call is over: a request still waiting for the agent is abandoned."""
        self.ended = True
        for scope in self._asking:
            scope.cancel()
        self.wake.set()

    def abandon(self) -> None:
        """Cancel the upstream call (no agent call will take its outcome)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()

    async def ask(
        self, method: str, params: Mapping[str, Any], request: UpstreamRequest
    ) -> Mapping[str, Any]:
        """The agent's answer to ``method``; raises :class:`UpstreamRequestRefused`.

        ``request`` is marked ``forwarded`` once the agent is asked.
        """
        channel = self.context.channel
        feature = feature_of(method, params) or CLIENT_METHODS[method]
        if not channel.supports(feature):
            raise UpstreamRequestRefused(
                f"awf-mcp refused {method}: the agent does not support {feature}", unsupported=True
            )
        call = self.context.tool_name or "the call"
        with anyio.CancelScope() as scope:
            self._asking.add(scope)
            if self.ended:
                scope.cancel()
            try:
                try:
                    request.forwarded = True
                    return await channel.ask(method, params)
                except ClientCannotAnswer as exc:
                    raise UpstreamRequestRefused(f"awf-mcp could not forward {method}: {exc}") from None
                except InputRequired as asked:
                    question = Question(asked)
                self.question = question
                self.wake.set()
                with anyio.move_on_after(SUSPEND_SECONDS):
                    await question.answered.wait()
                question.settle(
                    None,
                    f"awf-mcp refused {method}: the agent did not come back with an answer within "
                    f"{SUSPEND_SECONDS:g} s",
                )
                if question.answer is None:
                    raise UpstreamRequestRefused(question.refusal)
                return question.answer
            finally:
                self._asking.discard(scope)
        raise UpstreamRequestRefused(
            f"awf-mcp refused {method}: {call} ended (answered, timed out or cancelled) "
            "before the agent answered"
        )
