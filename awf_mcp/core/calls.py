"""The call path: one tool call from name and raw arguments to a :class:`ToolResult`.

Both ``awf-mcp serve`` (through the SDK adapter) and ``awf-mcp tools call`` run
every call through :meth:`ToolInvoker.call`, so what a plugin author sees on the
command line is what an agent gets.

Contract
--------
* An unknown name raises :class:`~awf_mcp.errors.UnknownToolError` (the adapter
  turns it into a JSON-RPC error the client can read).
* Everything else ends in a :class:`ToolResult`, never an exception:
  arguments that are not an object or fail the tool's input schema, a policy
  hook's denial, a provider that raises (``<ExceptionType>: <message>``; a
  :class:`~awf_mcp.ports.ToolError` message verbatim), returns ``None``, calls
  ``sys.exit()``, runs past the per-call timeout, or returns a successful result
  whose structured content is missing or fails the tool's output schema — each is
  an ``isError`` result with one short sentence. Tracebacks go to the log only, at DEBUG.
* Schemas are checked by :mod:`awf_mcp.core.schemacheck` (every pattern matched by RE2).
  Arguments that the quick check (:mod:`awf_mcp.core.quickcheck`) does not accept, and
  structured content, are checked in a worker thread under the call's timeout, so no
  schema and no value stalls the event loop: a check past the timeout ends the call.
* Synchronous providers run in a worker thread that is abandoned (not waited
  for) on timeout or cancellation; the call's :class:`~awf_mcp.ports.CallContext`
  has its ``cancelled`` flag set so a cooperative tool can stop.
* Cancellation by the client propagates as the event loop's cancellation, after
  the flag is set.
* Every result fits the call's output budget (:mod:`awf_mcp.budget`): the configured
  one, else the default of the calling client. The tool sees it as
  ``current_call().output_budget`` and may size its result itself; whatever it
  returns then passes :func:`~awf_mcp.budget.fit_result`, which cuts text over the
  budget with one note and turns structured content over it into an error.
* A call's progress goes out in order; while the client does not read, at most
  :data:`MAX_PROGRESS_BACKLOG_BYTES` of it waits, the oldest dropped first (the latest
  always goes out).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import functools
import itertools
import json
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from awf_mcp.budget import budget_for_client, fit_result
from awf_mcp.concurrency import call_either, in_worker_thread
from awf_mcp.core.callrecord import CANCELLED, CallRecord
from awf_mcp.core.observability import (
    CallRequests,
    bind_upstream_requests,
    call_span,
    redact,
    unbind_upstream_requests,
)
from awf_mcp.core.quickcheck import QuickCheck, quick_check
from awf_mcp.core.registry import RegisteredTool, Registry
from awf_mcp.core.roots import ClientRoots
from awf_mcp.core.schemacheck import Validator, first_problem, linear_validator
from awf_mcp.errors import describe_exception, did_you_mean
from awf_mcp.ports import (
    LOCAL_CALLER,
    NO_CLIENT,
    AskUser,
    CallContext,
    Caller,
    ClientCannotAnswer,
    ClientChannel,
    InputRequired,
    ToolResult,
    bind_call_context,
    unbind_call_context,
)
from awf_mcp.processes.containment.policy import read_denied

log = logging.getLogger("awf_mcp.core.calls")

PROGRESS_DRAIN_SECONDS = 1.0
MAX_PROGRESS_BACKLOG_BYTES = 256 * 1024
"""The most bytes of one call's progress notifications waiting for a client that does not read (on top
of the 4 MiB the writer holds, :data:`~awf_mcp.wire.framing.MAX_BACKLOG_BYTES`); past it the oldest
waiting are dropped."""
PROGRESS_OVERHEAD_BYTES = 128
"""What one progress notification is counted as, besides its message."""

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one progress notification for the running call (the adapter provides it)."""

Policy = Callable[[str, str, Mapping[str, Any]], "str | AskUser | None"]
"""For (tool, source, arguments): a denial sentence, :class:`AskUser` to ask first, ``None`` to allow.

A policy with a true ``takes_caller`` attribute is also given ``caller=``
(a :class:`~awf_mcp.ports.Caller`)."""

CONFIRM_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "allow": {
            "type": "boolean",
            "title": "Allow this call",
            "description": "Yes runs the tool call; no refuses it.",
            "default": False,
        }
    },
    "required": ["allow"],
}
"""The form of a confirmation: one yes/no field."""

PathPolicy = Callable[[str, str, str], str | None]
"""Returns a denial sentence for (tool, source, resolved path), or ``None`` to allow."""


def _error_text(result: ToolResult) -> str | None:
    """The text an ``isError`` result carried, for the call record; ``None`` for a success."""
    if not result.is_error:
        return None
    return " ".join(c.text for c in result.content if c.type == "text")


def unknown_arguments(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str:
    """``"; unknown argument 'pathh' (did you mean 'path'?)"`` for keys the schema does not name, or ``""``.

    Told beside the validation error, whatever it is: a mistyped key usually also leaves a
    required one missing, and "'path' is a required property" alone does not say why.
    """
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return ""
    unknown = [str(key) for key in itertools.islice((k for k in arguments if k not in properties), 5)]
    notes = []
    for key in unknown:
        hint = did_you_mean(key, [str(name) for name in properties])
        notes.append(f"unknown argument {key[:100]!r}" + (f" ({hint})" if hint else ""))
    return "".join(f"; {note}" for note in notes)


class ToolInvoker:
    """Runs tool calls against a :class:`Registry`; see the module docstring."""

    def __init__(
        self,
        registry: Registry,
        *,
        timeout_seconds: float,
        policy: Policy | None = None,
        observer: Callable[[CallRecord], None] | None = None,
        output_budget: int | None = None,
        path_policy: PathPolicy | None = None,
        client_roots: ClientRoots | None = None,
    ) -> None:
        self.registry = registry
        self.client_roots = client_roots
        self.timeout_seconds = timeout_seconds
        self.policy = policy
        self.path_policy = path_policy
        self.observer = observer
        self.output_budget = output_budget
        self._validators: dict[str, tuple[Any, Any, QuickCheck | None]] = {}
        self._output_validators: dict[str, tuple[Any, Validator]] = {}

    def over(self, registry: Registry, *, kind: str) -> ToolInvoker:
        """This invoker (timeout, observer, output budget, roots) over ``registry``: the call path of
        prompts (``kind="prompt"``) and resource reads (``kind="resource"``). A policy that takes a
        ``kind`` keyword is told it."""
        clone = copy.copy(self)
        clone.registry = registry
        clone._validators = {}
        if self.policy is not None and getattr(self.policy, "takes_kind", False):
            partial = functools.partial(self.policy, kind=kind)  # type: ignore[call-arg]  # takes_kind
            partial.takes_caller = getattr(self.policy, "takes_caller", False)  # type: ignore[attr-defined]
            clone.policy = partial
        return clone

    def _path_denied(self, tool: str, source: str, path: str) -> str | None:
        """Why the file tools may not touch resolved ``path`` in a call of ``tool``: the sandbox's
        deny list (the one policy of :mod:`awf_mcp.processes.containment.policy`), then the path policy."""
        denial = read_denied(path)
        if denial is None and self.path_policy is not None:
            denial = self.path_policy(tool, source, path)
        return denial

    def budget_for(self, client_name: str | None) -> int:
        """The output budget of a call from ``client_name``: the configured one, else the client's default."""
        return self.output_budget if self.output_budget is not None else budget_for_client(client_name)

    async def call(
        self,
        name: str,
        arguments: Any,
        *,
        progress: ProgressSink | None = None,
        client_name: str | None = None,
        channel: ClientChannel = NO_CLIENT,
        session: Hashable | None = None,
        caller: Caller = LOCAL_CALLER,
    ) -> ToolResult:
        """Run tool ``name`` for ``client_name``; raises only :class:`UnknownToolError` (and cancellation).

        ``channel`` reaches the calling client; ``session`` names its session (``None``:
        nothing about the client is kept between calls); ``caller`` says who called, for the
        policy, the tool (``current_call().caller``) and the call record. On the stateless
        revision :class:`~awf_mcp.ports.InputRequired` passes through.
        """
        tool = self.registry.lookup(name)
        started = time.perf_counter()
        args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
        result: ToolResult | None = None
        confirmation: dict[str, Any] = {}
        requests = CallRequests()
        asking = False
        try:
            with call_span(name, tool.definition.source) as span:
                result = await self._precheck(tool, arguments)
                decision = None
                if result is None and self.policy is not None:
                    if getattr(self.policy, "takes_caller", False):
                        decision = self.policy(tool.name, tool.definition.source, args, caller=caller)  # type: ignore[call-arg]  # takes_caller
                    else:
                        decision = self.policy(tool.name, tool.definition.source, args)
                    if isinstance(decision, str) and decision:
                        result = ToolResult.error(decision)
                if result is None:
                    budget = self.budget_for(client_name)
                    ask = decision if isinstance(decision, AskUser) else None
                    run = _Run(tool, args, channel, session, ask, confirmation, requests, caller)
                    result = fit_result(await self._run(run, progress, budget), budget)
                span.set_attribute("tool.is_error", result.is_error)
        except InputRequired:
            asking = True
            raise
        finally:
            # A cancelled call is observed too: the audit log sees every call that ran.
            if self.observer is not None and not asking:
                self.observer(
                    CallRecord(
                        tool=name,
                        source=tool.definition.source,
                        arguments=args,
                        duration_ms=(time.perf_counter() - started) * 1000,
                        is_error=result is None or result.is_error,
                        error=CANCELLED if result is None else _error_text(result),
                        confirmation=confirmation or None,
                        upstream_requests=requests.fields(),
                        upstream_requests_omitted=requests.omitted,
                        caller=caller,
                    )
                )
        return result

    async def _precheck(self, tool: RegisteredTool, arguments: Any) -> ToolResult | None:
        if arguments is not None and not isinstance(arguments, Mapping):
            return ToolResult.error(
                f"invalid arguments for {tool.name}: expected an object, got {type(arguments).__name__}"
            )
        if self._accepts_at_once(tool, arguments or {}):
            return None  # the common case: no cancel scope, no thread
        with anyio.move_on_after(self.timeout_seconds):
            problem = await self._validate(tool, arguments or {})
            return ToolResult.error(f"invalid arguments for {tool.name}: {problem}") if problem else None
        return ToolResult.error(
            f"the arguments of {tool.name} could not be checked against its input schema within "
            f"{self.timeout_seconds:g} s; the call was not made"
        )

    def _cached_validator(self, tool: RegisteredTool) -> tuple[Any, Any, QuickCheck | None]:
        cached = self._validators.get(tool.name)
        if cached is None or cached[0] is not tool.definition:  # the registry may re-merge at runtime
            cached = (tool.definition, None, quick_check(tool.definition.input_schema))
            self._validators[tool.name] = cached
        return cached

    def _accepts_at_once(self, tool: RegisteredTool, arguments: Mapping[str, Any]) -> bool:
        """Whether the quick check accepts ``arguments``: what it accepts, jsonschema accepts too
        (see :mod:`~awf_mcp.core.quickcheck`)."""
        accepts = self._cached_validator(tool)[2]
        return accepts is not None and bool(accepts(arguments))

    async def _validate(self, tool: RegisteredTool, arguments: Mapping[str, Any]) -> str | None:
        """jsonschema's first problem with ``arguments`` (the quick check did not accept them)."""
        definition, validator, accepts = self._cached_validator(tool)
        if validator is None:  # built on first need: importing jsonschema takes a while
            from jsonschema import Draft202012Validator

            validator = linear_validator(definition.input_schema, default=Draft202012Validator)
            self._validators[tool.name] = (definition, validator, accepts)
        problem = await in_worker_thread(first_problem, validator, dict(arguments))
        if problem is None:
            return None
        return problem + unknown_arguments(definition.input_schema, arguments)

    async def _checked_output(self, tool: RegisteredTool, result: ToolResult) -> ToolResult:
        """``result``, or the error saying how its structured content fails the tool's output schema."""
        schema = tool.definition.output_schema
        if schema is None or result.is_error:
            return result
        if result.structured_content is None:
            return ToolResult.error(
                f"tool {tool.name} returned no structured content, though its output schema asks for it"
            )
        cached = self._output_validators.get(tool.name)
        if cached is None or cached[0] is not tool.definition:
            try:  # checking the schema itself takes time in proportion to its size: off the loop too
                validator = await in_worker_thread(functools.partial(linear_validator, schema, check=True))
                cached = (tool.definition, validator)
            except Exception as exc:
                return ToolResult.error(
                    f"tool {tool.name} has an invalid output schema: {describe_exception(exc)}"
                )
            self._output_validators[tool.name] = cached
        problem = await in_worker_thread(first_problem, cached[1], result.structured_content)
        if problem is None:
            return result
        return ToolResult.error(
            f"tool {tool.name} returned structured content that does not match its output schema: {problem}"
        )

    async def _run(self, run: _Run, progress: ProgressSink | None, budget: int) -> ToolResult:
        tool = run.tool
        context = CallContext(
            tool_name=tool.name,
            output_budget=budget,
            channel=run.channel,
            session=run.session,
            caller=run.caller,
        )
        context.path_denied = functools.partial(self._path_denied, tool.name, tool.definition.source)
        finish_progress: Callable[[], None] = _no_pump
        waiting = "the tool"
        pending: InputRequired | None = None
        # The task group runs the progress pump; a call without progress has no pump, and no group
        # (leaving one costs a pass of the event loop).
        async with anyio.create_task_group() if progress is not None else _NO_GROUP as group:
            if progress is not None:
                assert group is not None
                context.report_progress, finish_progress = _progress_pump(group, progress)
            token = bind_call_context(context)
            requests_token = bind_upstream_requests(run.upstream_requests)
            try:
                with anyio.fail_after(self.timeout_seconds):
                    fetched = False
                    if self.client_roots is not None:
                        waiting = "the client's roots"
                        context.roots, fetched = await self.client_roots.for_call(run.channel, run.session)
                    if run.ask is not None:
                        waiting = "the user's confirmation"
                        refusal = await self._confirm(run)
                        if refusal is not None:
                            return refusal
                    waiting = "the tool"
                    result = await self._checked_output(tool, await _attempt(tool, run.arguments))
                    if context.refused_outside_roots and not fetched and self.client_roots is not None:
                        waiting = "the client's roots"
                        before = context.roots
                        self.client_roots.forget(run.session)
                        context.roots, _ = await self.client_roots.for_call(run.channel, run.session)
                        if context.roots != before:
                            waiting = "the tool"
                            context.refused_outside_roots = False
                            result = await self._checked_output(tool, await _attempt(tool, run.arguments))
            except InputRequired as exc:
                pending = exc
                result = ToolResult.error("")
            except TimeoutError:
                context.cancelled.set()
                if waiting == "the tool":
                    message = f"tool {tool.name} timed out after {self.timeout_seconds:g} s and was cut off"
                else:
                    message = (
                        f"no answer from the client within {self.timeout_seconds:g} s while waiting for "
                        f"{waiting}; the call of {tool.name} was not made"
                    )
                    if waiting == "the user's confirmation":
                        run.confirmation["answer"] = "no answer (call timeout)"
                result = ToolResult.error(message)
            except anyio.get_cancelled_exc_class():
                context.cancelled.set()
                raise
            finally:
                unbind_upstream_requests(requests_token)
                unbind_call_context(token)
                context.report_progress = _ignore_progress
                finish_progress()
        if pending is not None:
            raise pending
        return result

    async def _confirm(self, run: _Run) -> ToolResult | None:
        """Ask the user about ``run``: ``None`` on an explicit yes, else the refusal."""
        assert run.ask is not None
        tool = run.tool.name
        shown = json.dumps(redact(dict(run.arguments)), ensure_ascii=False, sort_keys=True, default=repr)
        question = f"Allow the call of {tool}?\nArguments: {shown}\nWhy you are asked: {run.ask.reason}"
        run.confirmation["question"] = question
        if not run.channel.supports("elicitation"):
            run.confirmation["answer"] = "not asked: the client does not support elicitation"
            return ToolResult.error(
                f"call of {tool} needs the user's confirmation ({run.ask.reason}), but the client cannot "
                "ask the user (it does not support MCP elicitation), so the call was not made; "
                "run it where it can be confirmed, or change the policy"
            )
        try:
            answer = await run.channel.ask(
                "elicitation/create", {"mode": "form", "message": question, "requestedSchema": CONFIRM_SCHEMA}
            )
        except ClientCannotAnswer as exc:
            run.confirmation["answer"] = f"no answer: {exc}"
            return ToolResult.error(
                f"call of {tool} needs the user's confirmation, and asking failed ({exc}); "
                "the call was not made"
            )
        action = answer.get("action")
        content = answer.get("content")
        allowed = action == "accept" and isinstance(content, Mapping) and content.get("allow") is True
        run.confirmation["answer"] = "yes" if allowed else ("no" if action == "accept" else str(action))
        if allowed:
            return None
        how = "declined" if action in ("accept", "decline") else "cancelled"
        return ToolResult.error(f"the user {how} the call of {tool}; it was not made")


@dataclass(slots=True)
class _Run:
    """One call on its way to the tool: what it needs besides the tool's own arguments."""

    tool: RegisteredTool
    arguments: Mapping[str, Any]
    channel: ClientChannel
    session: Hashable | None
    ask: AskUser | None
    confirmation: dict[str, Any]
    upstream_requests: CallRequests
    caller: Caller


async def _attempt(tool: RegisteredTool, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the tool once: its result, or the ``isError`` result for how it failed."""
    try:
        return _as_result(tool.name, await _invoke(tool, arguments))
    except SystemExit as exc:
        return ToolResult.error(f"tool {tool.name} called sys.exit({exc.code}); the server ignores it")
    except Exception as exc:
        log.debug("tool %s raised", tool.name, exc_info=True)
        return ToolResult.error(describe_exception(exc))


async def _invoke(tool: RegisteredTool, arguments: Mapping[str, Any]) -> Any:
    return await call_either(tool.provider.call_tool, tool.original_name, arguments)


def _as_result(name: str, outcome: Any) -> ToolResult:
    if isinstance(outcome, ToolResult):
        return outcome
    if outcome is None:
        return ToolResult.error(f'tool "{name}" returned no result')
    if isinstance(outcome, str):
        return ToolResult.text(outcome)
    return ToolResult.error(f'tool "{name}" returned {type(outcome).__name__}, not a ToolResult')


_NO_GROUP: contextlib.nullcontext[None] = contextlib.nullcontext()
"""The task group of a call without progress: none."""


def _ignore_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    return None


def _no_pump() -> None:
    return None


class _ProgressBacklog:
    """Progress waiting for the client, at most :data:`MAX_PROGRESS_BACKLOG_BYTES` of it (see
    :func:`_progress_pump`): past that the oldest waiting are dropped, never the latest."""

    def __init__(self) -> None:
        self.items: collections.deque[tuple[float, float | None, str | None]] = collections.deque()
        self.bytes = 0
        self.dropped = 0
        self.closed = False
        self.wake = anyio.Event()

    @staticmethod
    def size(item: tuple[float, float | None, str | None]) -> int:
        return PROGRESS_OVERHEAD_BYTES + (len(item[2].encode("utf-8", "surrogatepass")) if item[2] else 0)

    def offer(self, item: tuple[float, float | None, str | None]) -> None:
        if self.closed:
            return
        self.items.append(item)
        self.bytes += self.size(item)
        while self.bytes > MAX_PROGRESS_BACKLOG_BYTES and len(self.items) > 1:
            self.bytes -= self.size(self.items.popleft())
            self.dropped += 1
        self.wake.set()

    def take(self) -> tuple[float, float | None, str | None] | None:
        if not self.items:
            return None
        item = self.items.popleft()
        self.bytes -= self.size(item)
        return item


def _progress_pump(
    group: anyio.abc.TaskGroup, sink: ProgressSink
) -> tuple[Callable[[float, float | None, str | None], None], Callable[[], None]]:
    """A thread-safe ``report_progress`` forwarding to ``sink``, and the function that ends it.

    Ending it lets the notifications already reported go out first (at most
    ``PROGRESS_DRAIN_SECONDS``), so a report made just before the tool returns
    is never lost. While the client does not read (``sink`` waits), at most
    :data:`MAX_PROGRESS_BACKLOG_BYTES` of notifications wait; past that the oldest waiting
    are dropped (progress is a state: the latest says it all), so the latest always goes out.
    """
    loop = asyncio.get_running_loop()
    backlog = _ProgressBacklog()

    async def pump() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            while True:
                item = backlog.take()
                if item is None:
                    if backlog.closed:
                        break
                    await backlog.wake.wait()
                    backlog.wake = anyio.Event()
                    continue
                try:
                    await sink(*item)
                except Exception:
                    log.debug("progress notification failed", exc_info=True)
        if backlog.dropped:
            log.debug("%d progress notifications dropped while the client was not reading", backlog.dropped)

    scopes: list[anyio.CancelScope] = []
    group.start_soon(pump)

    def finish() -> None:
        backlog.closed = True
        backlog.wake.set()
        for scope in scopes:
            scope.deadline = anyio.current_time() + PROGRESS_DRAIN_SECONDS

    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        item = (float(progress), None if total is None else float(total), message)
        with contextlib.suppress(RuntimeError):  # the loop has closed: the call is over
            loop.call_soon_threadsafe(backlog.offer, item)

    return report, finish
