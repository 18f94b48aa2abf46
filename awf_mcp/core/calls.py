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
  ``sys.exit()``, or runs past the per-call timeout — each is an ``isError``
  result with one short sentence. Tracebacks go to the log only, at DEBUG.
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
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from awf_mcp.budget import budget_for_client, fit_result
from awf_mcp.core.observability import call_span
from awf_mcp.core.registry import RegisteredTool, Registry
from awf_mcp.errors import describe_exception
from awf_mcp.ports import (
    CallContext,
    ToolResult,
    bind_call_context,
    unbind_call_context,
)

log = logging.getLogger("awf_mcp.core.calls")

PROGRESS_DRAIN_SECONDS = 1.0
#: The error of a call the client cancelled (it gets no result: the SDK answers nothing).
CANCELLED = "cancelled by the client"

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one progress notification for the running call (the adapter provides it)."""

Policy = Callable[[str, str, Mapping[str, Any]], str | None]
"""Returns a denial sentence for (tool, source, arguments), or ``None`` to allow."""

PathPolicy = Callable[[str, str, str], str | None]
"""Returns a denial sentence for (tool, source, resolved path), or ``None`` to allow."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """What one finished call looked like; handed to the ``observer``.

    Every call that reached a tool gives one record — results, errors, denials, timeouts,
    and cancellations (``error`` = :data:`CANCELLED`). An unknown tool name gives none.
    """

    tool: str
    source: str
    arguments: Mapping[str, Any]
    duration_ms: float
    is_error: bool
    error: str | None


def _error_text(result: ToolResult) -> str | None:
    """The text an ``isError`` result carried, for the call record; ``None`` for a success."""
    if not result.is_error:
        return None
    return " ".join(c.text for c in result.content if c.type == "text")


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
    ) -> None:
        self.registry = registry
        self.timeout_seconds = timeout_seconds
        self.policy = policy
        self.path_policy = path_policy
        self.observer = observer
        self.output_budget = output_budget
        self._validators: dict[str, Any] = {}

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
    ) -> ToolResult:
        """Run tool ``name`` for ``client_name``; raises only :class:`UnknownToolError` (and cancellation)."""
        tool = self.registry.lookup(name)
        started = time.perf_counter()
        args: Mapping[str, Any] = arguments if isinstance(arguments, Mapping) else {}
        result: ToolResult | None = None
        try:
            with call_span(name, tool.definition.source) as span:
                result = self._precheck(tool, arguments)
                if result is None:
                    budget = self.budget_for(client_name)
                    result = fit_result(await self._run(tool, args, progress, budget), budget)
                span.set_attribute("tool.is_error", result.is_error)
        finally:
            # A cancelled call is observed too: the audit log sees every call that ran.
            if self.observer is not None:
                self.observer(
                    CallRecord(
                        tool=name,
                        source=tool.definition.source,
                        arguments=args,
                        duration_ms=(time.perf_counter() - started) * 1000,
                        is_error=result is None or result.is_error,
                        error=CANCELLED if result is None else _error_text(result),
                    )
                )
        return result

    def _precheck(self, tool: RegisteredTool, arguments: Any) -> ToolResult | None:
        if arguments is not None and not isinstance(arguments, Mapping):
            return ToolResult.error(
                f"invalid arguments for {tool.name}: expected an object, got {type(arguments).__name__}"
            )
        problem = self._validate(tool, arguments or {})
        if problem:
            return ToolResult.error(f"invalid arguments for {tool.name}: {problem}")
        if self.policy is not None:
            denial = self.policy(tool.name, tool.definition.source, arguments or {})
            if denial:
                return ToolResult.error(denial)
        return None

    def _validate(self, tool: RegisteredTool, arguments: Mapping[str, Any]) -> str | None:
        cached = self._validators.get(tool.name)
        if cached is not None and cached[0] is tool.definition:  # the registry may re-merge at runtime
            validator = cached[1]
        else:
            from jsonschema import Draft202012Validator

            validator = Draft202012Validator(dict(tool.definition.input_schema))
            self._validators[tool.name] = (tool.definition, validator)
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if not errors:
            return None
        error = errors[0]
        where = ".".join(str(part) for part in error.path)
        return f"{where}: {error.message}" if where else str(error.message)

    async def _run(
        self, tool: RegisteredTool, arguments: Mapping[str, Any], progress: ProgressSink | None, budget: int
    ) -> ToolResult:
        context = CallContext(tool_name=tool.name, output_budget=budget)
        if self.path_policy is not None:
            context.path_denied = functools.partial(self.path_policy, tool.name, tool.definition.source)
        finish_progress: Callable[[], None] = _no_pump
        async with anyio.create_task_group() as group:
            if progress is not None:
                context.report_progress, finish_progress = _progress_pump(group, progress)
            token = bind_call_context(context)
            try:
                with anyio.fail_after(self.timeout_seconds):
                    outcome = await _invoke(tool, arguments)
                result = _as_result(tool.name, outcome)
            except TimeoutError:
                context.cancelled.set()
                result = ToolResult.error(
                    f"tool {tool.name} timed out after {self.timeout_seconds:g} s and was cut off"
                )
            except anyio.get_cancelled_exc_class():
                context.cancelled.set()
                raise
            except SystemExit as exc:
                result = ToolResult.error(
                    f"tool {tool.name} called sys.exit({exc.code}); the server ignores it"
                )
            except Exception as exc:
                log.debug("tool %s raised", tool.name, exc_info=True)
                result = ToolResult.error(describe_exception(exc))
            finally:
                unbind_call_context(token)
                context.report_progress = _ignore_progress
                finish_progress()
        return result


async def _invoke(tool: RegisteredTool, arguments: Mapping[str, Any]) -> Any:
    method = tool.provider.call_tool
    name = tool.original_name
    if inspect.iscoroutinefunction(method):
        return await method(name, arguments)
    outcome = await anyio.to_thread.run_sync(method, name, arguments, abandon_on_cancel=True)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


def _as_result(name: str, outcome: Any) -> ToolResult:
    if isinstance(outcome, ToolResult):
        return outcome
    if outcome is None:
        return ToolResult.error(f'tool "{name}" returned no result')
    if isinstance(outcome, str):
        return ToolResult.text(outcome)
    return ToolResult.error(f'tool "{name}" returned {type(outcome).__name__}, not a ToolResult')


def _ignore_progress(progress: float, total: float | None = None, message: str | None = None) -> None:
    return None


def _no_pump() -> None:
    return None


def _progress_pump(
    group: anyio.abc.TaskGroup, sink: ProgressSink
) -> tuple[Callable[[float, float | None, str | None], None], Callable[[], None]]:
    """A thread-safe ``report_progress`` forwarding to ``sink``, and the function that ends it.

    Ending it lets the notifications already reported go out first (at most
    ``PROGRESS_DRAIN_SECONDS``), so a report made just before the tool returns
    is never lost.
    """
    loop = asyncio.get_running_loop()
    send, receive = anyio.create_memory_object_stream[tuple[float, float | None, str | None]](
        max_buffer_size=math.inf
    )

    async def pump() -> None:
        with anyio.CancelScope() as scope:
            scopes.append(scope)
            async with receive:
                async for progress, total, message in receive:
                    try:
                        await sink(progress, total, message)
                    except Exception:
                        log.debug("progress notification failed", exc_info=True)

    scopes: list[anyio.CancelScope] = []
    group.start_soon(pump)

    def finish() -> None:
        send.close()
        for scope in scopes:
            scope.deadline = anyio.current_time() + PROGRESS_DRAIN_SECONDS

    def report(progress: float, total: float | None = None, message: str | None = None) -> None:
        item = (float(progress), None if total is None else float(total), message)
        with contextlib.suppress(RuntimeError):  # the loop has closed: the call is over
            loop.call_soon_threadsafe(_offer, send, item)

    return report, finish


def _offer(send: Any, item: tuple[float, float | None, str | None]) -> None:
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        send.send_nowait(item)
