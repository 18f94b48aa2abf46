"""The call path: validation, policy, exceptions, timeouts, progress, cancellation."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
import pytest

from awf_mcp.core.callrecord import CANCELLED, CallRecord
from awf_mcp.core.calls import ToolInvoker, describe_exception
from awf_mcp.core.registry import RegisteredTool, Registry
from awf_mcp.errors import UnknownToolError
from awf_mcp.ports import ToolDefinition, ToolError, ToolResult, current_call
from tests.helpers.providers import AsyncProvider, StaticProvider, definition

pytestmark = pytest.mark.anyio


def invoker_for(provider: StaticProvider, **kwargs: Any) -> ToolInvoker:
    tools = [RegisteredTool(d, provider, d.name) for d in provider.list_tools()]
    kwargs.setdefault("timeout_seconds", 5.0)
    return ToolInvoker(Registry(tools), **kwargs)


async def test_a_sync_provider_is_called_with_its_arguments() -> None:
    provider = StaticProvider(definition("demo_a"))
    result = await invoker_for(provider).call("demo_a", {"text": "hi"})
    assert result.content[0].text == "demo_a:hi" and not result.is_error
    assert provider.calls == [("demo_a", {"text": "hi"})]


async def test_an_async_provider_is_awaited() -> None:
    result = await invoker_for(AsyncProvider(definition("demo_a"))).call("demo_a", {"text": "x"})
    assert result.content[0].text == "demo_a:x"


async def test_missing_required_argument_is_refused_before_the_provider_runs() -> None:
    provider = StaticProvider(definition("demo_a"))
    result = await invoker_for(provider).call("demo_a", {})
    assert result.is_error and "'text' is a required property" in result.content[0].text
    assert provider.calls == []


async def test_wrong_argument_type_names_the_argument() -> None:
    result = await invoker_for(StaticProvider(definition("demo_a"))).call("demo_a", {"text": 5})
    assert result.is_error and result.content[0].text.startswith("invalid arguments for demo_a: text:")


async def test_arguments_that_are_not_an_object_are_refused() -> None:
    result = await invoker_for(StaticProvider(definition("demo_a"))).call("demo_a", ["x"])
    assert result.is_error and "expected an object, got list" in result.content[0].text


async def test_unknown_tool_raises() -> None:
    with pytest.raises(UnknownToolError):
        await invoker_for(StaticProvider(definition("demo_a"))).call("demo_b", {})


@pytest.mark.parametrize(
    ("answer", "text"),
    [
        (ValueError("bad\ntrace"), "ValueError: bad"),
        (ToolError("file not found: x"), "file not found: x"),
        (RuntimeError(), "RuntimeError"),
        (None, 'tool "demo_a" returned no result'),
        (42, 'tool "demo_a" returned int, not a ToolResult'),
        (SystemExit(2), "called sys.exit(2)"),
    ],
)
async def test_failures_become_error_results(answer: Any, text: str) -> None:
    provider = StaticProvider(definition("demo_a"), answers={"demo_a": answer})
    result = await invoker_for(provider).call("demo_a", {"text": "x"})
    assert result.is_error and text in result.content[0].text


async def test_a_plain_string_is_accepted_as_text() -> None:
    provider = StaticProvider(definition("demo_a"), answers={"demo_a": "plain"})
    assert (await invoker_for(provider).call("demo_a", {"text": "x"})).content[0].text == "plain"


async def test_policy_denial_is_an_error_and_the_provider_never_runs() -> None:
    provider = StaticProvider(definition("demo_a"))

    def policy(tool: str, source: str, arguments: Mapping[str, Any]) -> str | None:
        return "no" if arguments.get("text") == "rm" else None

    invoker = invoker_for(provider, policy=policy)
    denied = await invoker.call("demo_a", {"text": "rm"})
    allowed = await invoker.call("demo_a", {"text": "ls"})
    assert denied.is_error and denied.content[0].text == "no"
    assert not allowed.is_error and provider.calls == [("demo_a", {"text": "ls"})]


async def test_a_hung_sync_tool_is_cut_off_and_flagged() -> None:
    seen = threading.Event()

    def hang(arguments: Mapping[str, Any]) -> ToolResult:
        context = current_call()
        context.cancelled.wait(5)
        seen.set()
        return ToolResult.text("late")

    provider = StaticProvider(definition("demo_a"), answers={"demo_a": hang})
    started = time.monotonic()
    result = await invoker_for(provider, timeout_seconds=0.2).call("demo_a", {"text": "x"})
    assert result.is_error and "timed out after 0.2 s" in result.content[0].text
    assert time.monotonic() - started < 3
    assert seen.wait(2), "the worker thread should have seen the cancellation flag"


async def test_cancellation_sets_the_flag_and_propagates() -> None:
    flags: list[threading.Event] = []

    def hang(arguments: Mapping[str, Any]) -> ToolResult:
        flags.append(current_call().cancelled)
        time.sleep(0.5)
        return ToolResult.text("late")

    invoker = invoker_for(StaticProvider(definition("demo_a"), answers={"demo_a": hang}))
    with anyio.move_on_after(0.1):
        await invoker.call("demo_a", {"text": "x"})
    assert flags and flags[0].is_set()


async def test_progress_reported_from_a_thread_reaches_the_sink() -> None:
    def work(arguments: Mapping[str, Any]) -> ToolResult:
        for step in range(3):
            current_call().report_progress(step + 1, 3, f"step {step + 1}")
        time.sleep(0.05)
        return ToolResult.text("done")

    seen: list[tuple[float, float | None, str | None]] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    invoker = invoker_for(StaticProvider(definition("demo_a"), answers={"demo_a": work}))
    await invoker.call("demo_a", {"text": "x"}, progress=sink)
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


async def test_the_observer_sees_one_record_per_call() -> None:
    records: list[CallRecord] = []
    provider = StaticProvider(definition("demo_a"), answers={"demo_b": ValueError("x")})
    invoker = invoker_for(provider, observer=records.append)
    await invoker.call("demo_a", {"text": "ok"})
    await invoker.call("demo_a", {})
    assert [(r.tool, r.is_error) for r in records] == [("demo_a", False), ("demo_a", True)]
    assert records[1].error is not None and "required" in records[1].error
    assert records[0].source == "plugin:demo" and records[0].duration_ms >= 0


async def test_a_cancelled_call_is_observed_as_cancelled() -> None:
    records: list[CallRecord] = []

    def hang(arguments: Mapping[str, Any]) -> ToolResult:
        time.sleep(0.5)
        return ToolResult.text("late")

    invoker = invoker_for(
        StaticProvider(definition("demo_a"), answers={"demo_a": hang}), observer=records.append
    )
    with anyio.move_on_after(0.1):
        await invoker.call("demo_a", {"text": "x"})
    assert [(r.tool, r.is_error, r.error) for r in records] == [("demo_a", True, CANCELLED)]


def test_describe_exception_keeps_the_first_line_only() -> None:
    assert describe_exception(KeyError("k")) == "KeyError: 'k'"
    assert describe_exception(ValueError("one\ntwo")) == "ValueError: one"


async def test_progress_reported_just_before_returning_is_not_lost() -> None:
    def work(arguments: Mapping[str, Any]) -> ToolResult:
        current_call().report_progress(1, 1, "last")
        return ToolResult.text("done")

    seen: list[str | None] = []

    async def sink(progress: float, total: float | None, message: str | None) -> None:
        await anyio.sleep(0.01)  # sending a notification takes a moment
        seen.append(message)

    invoker = invoker_for(StaticProvider(definition("demo_a"), answers={"demo_a": work}))
    for _ in range(20):
        await invoker.call("demo_a", {"text": "x"}, progress=sink)
    assert seen == ["last"] * 20


async def test_structured_content_is_checked_against_the_output_schema() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "string", "pattern": "(a+)+$"}},
        "required": ["n"],
    }
    answers = {
        "demo_good": ToolResult(content=[], structured_content={"n": "aaa"}),
        "demo_evil": ToolResult(content=[], structured_content={"n": "a" * 40 + "!"}),
        "demo_none": ToolResult.text("no structure"),
        "demo_failed": ToolResult.error("it failed"),
    }
    provider = StaticProvider(*(definition(name, output_schema=schema) for name in answers), answers=answers)
    invoker = invoker_for(provider)
    assert not (await invoker.call("demo_good", {"text": "x"})).is_error
    evil = await invoker.call("demo_evil", {"text": "x"})
    assert evil.is_error and "does not match its output schema: n: " in evil.content[0].text
    missing = await invoker.call("demo_none", {"text": "x"})
    assert missing.is_error and "returned no structured content" in missing.content[0].text
    assert (await invoker.call("demo_failed", {"text": "x"})).content[0].text == "it failed"


async def test_a_check_past_the_timeout_ends_the_call_before_the_tool_runs() -> None:
    slow = {"type": "object", "properties": {"s": {"type": "string", "pattern": "[ab]*a[ab]{200}x"}}}
    provider = StaticProvider(ToolDefinition(name="demo_a", description="slow", input_schema=slow))
    halves = bytes(b"ab"[n & 1] for n in range(256))
    value = random.Random(7).randbytes(4 << 20).translate(halves).decode()  # RE2 needs seconds here
    result = await invoker_for(provider, timeout_seconds=0.2).call("demo_a", {"s": value})
    assert (
        result.is_error
        and "could not be checked against its input schema within 0.2 s" in result.content[0].text
    )
    assert provider.calls == []


def test_unknown_arguments_are_named_within_bounds() -> None:
    from awf_mcp.core.calls import unknown_arguments

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert unknown_arguments(schema, {"pathh": 1}) == "; unknown argument 'pathh' (did you mean 'path'?)"
    assert unknown_arguments(schema, {"path": 1}) == ""
    assert unknown_arguments({"type": "object"}, {"x": 1}) == ""
    flood = {"p" * 1_000_000: 0} | {f"k{i}": i for i in range(10_000)}
    note = unknown_arguments(schema, flood)
    assert note.count("unknown argument") == 5 and len(note.encode()) < 1_000
