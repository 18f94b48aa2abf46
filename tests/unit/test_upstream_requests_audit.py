"""An upstream server's requests in the audit record of the call they were routed to.

The routing is driven as in tests/unit/test_upstream_requests.py (its held session and
recording channels), with each call given its own list of requests the way the call path
gives it (:func:`bind_upstream_requests`); the audit line itself is checked through
:class:`AuditLog` and through :class:`ToolInvoker`. The real server and agent are in
tests/e2e/test_upstream_requests.py.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.core.callrecord import CallRecord
from awf_mcp.core.observability import (
    CALL_ENDED,
    MAX_RECORDED_REQUESTS,
    MAX_VALUE_CHARS,
    AuditLog,
    CallRequests,
    UpstreamRequest,
    bind_upstream_requests,
    json_size,
    unbind_upstream_requests,
    upstream_requests_of_call,
)
from awf_mcp.core.upstream import UpstreamProvider, UpstreamRequestRefused
from awf_mcp.ports import CallContext, ClientCannotAnswer, ToolResult
from tests.helpers.providers import AsyncProvider, definition
from tests.unit.test_calls import invoker_for
from tests.unit.test_upstream_requests import SAMPLE, Channel, HeldSession, hold, provider, stateless

pytestmark = pytest.mark.anyio

ELICIT = {"mode": "form", "message": "Your name?", "requestedSchema": {"type": "object"}}


async def held_call(
    upstream: UpstreamProvider, context: CallContext, requests: CallRequests, arguments: Any = None
) -> ToolResult:
    """One call of the held tool whose upstream requests go to ``requests`` (as the call path does)."""
    token = bind_upstream_requests(requests)
    try:
        return await hold(upstream, context, arguments)
    finally:
        unbind_upstream_requests(token)


async def during_a_call(
    channel: Channel, method: str, params: Mapping[str, Any], offer: Any = None
) -> tuple[list[dict[str, Any]], Mapping[str, Any] | UpstreamRequestRefused]:
    """Ask ``method`` during one held call on ``channel``: the call's requests, and what the server got."""
    session = HeldSession()
    upstream = await provider(session, offer) if offer is not None else await provider(session)
    requests = CallRequests()
    got: Mapping[str, Any] | UpstreamRequestRefused
    async with anyio.create_task_group() as group:
        group.start_soon(held_call, upstream, CallContext(tool_name="up_hold", channel=channel), requests)
        await anyio.sleep(0.01)
        try:
            got = await upstream.answer(method, params)
        except UpstreamRequestRefused as exc:
            got = exc
        session.release.set()
    await upstream.close()
    return list(requests.fields()), got


async def test_an_answered_sampling_request_is_recorded_by_size_never_by_content() -> None:
    channel = Channel(
        "agent", {"role": "assistant", "model": "m", "content": {"type": "text", "text": "secret"}}
    )
    recorded, got = await during_a_call(channel, "sampling/createMessage", SAMPLE)
    assert isinstance(got, Mapping)
    [entry] = recorded
    assert entry == {
        "method": "sampling/createMessage",
        "forwarded": True,
        "outcome": "answered",
        "reason": None,
        "duration_ms": entry["duration_ms"],
        "request_bytes": json_size(SAMPLE),
        "answer_bytes": json_size(got),
    }
    assert entry["duration_ms"] >= 0
    shown = json.dumps(recorded)
    assert '"hi"' not in shown and "secret" not in shown  # the prompt's and the answer's text


@pytest.mark.parametrize(
    ("action", "outcome"), [("accept", "answered"), ("decline", "declined"), ("cancel", "cancelled")]
)
async def test_an_elicitation_is_recorded_with_the_users_choice(action: str, outcome: str) -> None:
    channel = Channel("agent", {"action": action}, features=("elicitation",))
    [entry], _ = await during_a_call(channel, "elicitation/create", ELICIT)
    assert (entry["method"], entry["forwarded"], entry["outcome"]) == ("elicitation/create", True, outcome)


async def test_a_request_the_agent_did_not_declare_is_recorded_refused_and_never_forwarded() -> None:
    channel = Channel("agent", {"model": "m"})
    [entry], got = await during_a_call(channel, "sampling/createMessage", SAMPLE, offer={})
    assert isinstance(got, UpstreamRequestRefused)
    assert entry["outcome"] == "refused" and entry["forwarded"] is False
    assert entry["reason"] == str(got) and "did not advertise sampling" in entry["reason"]
    assert entry["answer_bytes"] is None
    assert channel.asked == []


async def test_a_request_the_agent_answered_with_an_error_is_recorded_forwarded_and_refused() -> None:
    channel = Channel("agent", ClientCannotAnswer("the client answered with an error: the user said no"))
    [entry], got = await during_a_call(channel, "sampling/createMessage", SAMPLE)
    assert isinstance(got, UpstreamRequestRefused)
    assert (entry["forwarded"], entry["outcome"]) == (True, "refused")
    assert entry["reason"].endswith("the user said no")


async def test_roots_list_is_recorded_as_answered_by_awf_mcp() -> None:
    [entry], got = await during_a_call(Channel("agent", {}), "roots/list", {})
    assert got == {"roots": [{"uri": "file:///configured"}]}
    assert (entry["method"], entry["forwarded"], entry["outcome"]) == ("roots/list", False, "answered")
    assert entry["answer_bytes"] == json_size(got)


async def test_a_request_goes_into_the_record_of_the_call_it_was_routed_to() -> None:
    session = HeldSession()
    upstream = await provider(session)
    first = CallRequests()
    second = CallRequests()
    async with anyio.create_task_group() as group:
        context = CallContext(tool_name="up_hold", channel=Channel("first", {"model": "m"}))
        group.start_soon(held_call, upstream, context, first)
        await anyio.sleep(0.01)
        context = CallContext(tool_name="up_hold", channel=Channel("second", {"model": "m"}))
        group.start_soon(held_call, upstream, context, second)
        await anyio.sleep(0.01)
        await upstream.answer("sampling/createMessage", SAMPLE)
        session.release.set()
    assert [request.method for request in first.requests] == ["sampling/createMessage"]
    assert second.requests == []
    await upstream.close()


async def test_a_request_outside_any_call_goes_into_no_record() -> None:
    upstream = await provider(HeldSession())
    requests = CallRequests()
    token = bind_upstream_requests(requests)  # a call of something else is running meanwhile
    try:
        with pytest.raises(
            UpstreamRequestRefused, match="none of the server's tool calls, prompts or reads is running"
        ):
            await upstream.answer("sampling/createMessage", SAMPLE)
    finally:
        unbind_upstream_requests(token)
    assert requests.requests == []
    await upstream.close()


async def test_a_request_still_waiting_when_its_call_ends_is_recorded_refused() -> None:
    session = HeldSession()
    upstream = await provider(session)
    requests = CallRequests()
    at_the_end: list[dict[str, Any]] = []

    async def call() -> None:
        await held_call(upstream, CallContext(tool_name="up_hold", channel=Channel("hangs")), requests)
        at_the_end.extend(requests.fields())  # what the call's record shows

    async def ask() -> None:
        with pytest.raises(UpstreamRequestRefused):
            await upstream.answer("sampling/createMessage", SAMPLE)

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(0.01)
        group.start_soon(ask)
        await anyio.sleep(0.02)
        session.release.set()
    [entry] = at_the_end  # still open then (recorded as CALL_ENDED) or already refused: the same sense
    assert (entry["forwarded"], entry["outcome"]) == (True, "refused")
    assert entry["reason"].endswith("before the agent answered")
    [request] = requests.requests
    assert request.outcome == "refused" and "up_hold ended" in (request.reason or "")
    await upstream.close()


async def test_on_the_stateless_revision_the_retrys_record_has_the_request() -> None:
    session = HeldSession()
    upstream = await provider(session)
    first = CallRequests()
    retried = CallRequests()

    async def round_one() -> None:
        with pytest.raises(BaseException, match="key-1"):
            await held_call(upstream, CallContext(tool_name="up_hold", channel=stateless("first")), first)

    async def upstream_asks() -> None:
        await upstream.answer("sampling/createMessage", SAMPLE)

    async with anyio.create_task_group() as group:
        group.start_soon(round_one)
        await anyio.sleep(0.01)
        group.start_soon(upstream_asks)
        await anyio.sleep(0.05)
        retry = CallContext(tool_name="up_hold", channel=Channel("retry", {"model": "m"}))
        group.start_soon(held_call, upstream, retry, retried)
        await anyio.sleep(0.05)
        session.release.set()
    [entry] = retried.fields()
    assert (entry["method"], entry["forwarded"], entry["outcome"]) == (
        "sampling/createMessage",
        True,
        "answered",
    )
    await upstream.close()


def test_the_audit_line_lists_the_requests_and_omits_the_field_when_there_were_none(tmp_path: Path) -> None:
    answered = UpstreamRequest(method="sampling/createMessage", request_bytes=120, forwarded=True)
    answered.finish("answered", answer={"model": "m"})
    refused = UpstreamRequest(method="elicitation/create", request_bytes=80)
    refused.finish("refused", reason="x" * (MAX_VALUE_CHARS + 10))
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    audit(CallRecord("up_ask", "server:up", {}, 3.0, False, None))
    fields = (answered.fields(), refused.fields())
    audit(CallRecord("up_ask", "server:up", {}, 3.0, False, None, upstream_requests=fields))
    audit.close()
    plain, asked = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert "upstream_requests" not in plain  # the format of a call without requests is unchanged
    first, second = asked["upstream_requests"]
    assert first["outcome"] == "answered" and first["answer_bytes"] == json_size({"model": "m"})
    assert second["outcome"] == "refused" and second["reason"].endswith("(10 more characters)")


def test_a_request_still_open_is_shown_refused_because_its_call_ended() -> None:
    request = UpstreamRequest(method="elicitation/create", request_bytes=10, forwarded=True)
    shown = request.fields()
    assert (shown["outcome"], shown["reason"], shown["answer_bytes"]) == ("refused", CALL_ENDED, None)
    assert shown["duration_ms"] >= 0 and request.outcome is None  # showing it settles nothing


def test_a_request_is_finished_once() -> None:
    request = UpstreamRequest(method="sampling/createMessage", request_bytes=1)
    request.finish("refused", reason="first")
    request.finish("answered", answer={})
    assert (request.outcome, request.reason, request.answer_bytes) == ("refused", "first", None)


class AskingProvider(AsyncProvider):
    """Each call's "upstream" asks ``roots/list`` once, the way :class:`UpstreamProvider` records it."""

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> Any:
        request = UpstreamRequest(method="roots/list", request_bytes=2)
        upstream_requests_of_call().add(request)
        request.finish("answered", answer={"roots": []})
        return await super().call_tool(name, arguments)


async def test_the_call_path_puts_the_calls_requests_into_its_record() -> None:
    records: list[CallRecord] = []
    invoker = invoker_for(AskingProvider(definition("demo_a"), definition("demo_b")), observer=records.append)
    await invoker.call("demo_a", {"text": "x"})
    await invoker.call("demo_b", {"text": "y"})
    first, second = records
    assert [entry["method"] for entry in first.upstream_requests] == ["roots/list"]
    assert [entry["method"] for entry in second.upstream_requests] == ["roots/list"]  # its own, not both
    assert upstream_requests_of_call().requests == []  # outside a call: nothing is collected


def test_a_calls_record_lists_so_many_requests_and_counts_the_rest(tmp_path: Path) -> None:
    flood, earlier = CallRequests(), CallRequests()
    earlier.add(UpstreamRequest(method="roots/list", request_bytes=2))
    earlier.omitted = 3
    for _ in range(MAX_RECORDED_REQUESTS + 5):
        flood.add(UpstreamRequest(method="x" * (MAX_VALUE_CHARS + 1), request_bytes=2))
    flood.take_over(earlier)  # a stateless retry takes over the requests of the round before
    assert (len(flood.requests), flood.omitted) == (MAX_RECORDED_REQUESTS, 5 + 1 + 3)
    assert (earlier.requests, earlier.omitted) == ([], 0)
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    fields = flood.fields()
    audit(
        CallRecord(
            "up_ask",
            "server:up",
            {},
            3.0,
            False,
            None,
            upstream_requests=fields,
            upstream_requests_omitted=flood.omitted,
        )
    )
    audit.close()
    entry = json.loads((tmp_path / "audit.jsonl").read_text())
    assert len(entry["upstream_requests"]) == MAX_RECORDED_REQUESTS
    assert entry["upstream_requests_omitted"] == 9
    assert len(entry["upstream_requests"][0]["method"]) < MAX_VALUE_CHARS + 100  # a method is text too
