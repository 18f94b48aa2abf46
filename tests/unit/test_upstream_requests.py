"""The routing of an upstream server's requests: which call's agent channel answers, and the refusals.

:meth:`UpstreamProvider.answer` is driven directly, with calls held in flight through the
provider's ``Connect`` seam (an in-process session whose calls wait) and a recording
:class:`~awf_mcp.ports.ClientChannel` per call; the SDK adapter and a real upstream are
tested in tests/e2e/test_upstream_requests.py. Also :func:`offer_from_first_message`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio
import pytest

from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream import (
    ClientOffer,
    ProgressCallback,
    UpstreamProvider,
    UpstreamRequestRefused,
)
from awf_mcp.ports import (
    CallContext,
    ClientCannotAnswer,
    ClientFeature,
    InputRequired,
    ToolDefinition,
    ToolResult,
    bind_call_context,
    unbind_call_context,
)
from awf_mcp.wire.client import offer_from_first_message

pytestmark = pytest.mark.anyio

SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
SAMPLING = {"sampling": {}, "elicitation": {"form": {}}}


class HeldSession:
    """A connection whose calls wait until released; each call's tool name is its label."""

    def __init__(self) -> None:
        self.closed = anyio.Event()
        self.instructions: str | None = None
        self.on_tools_changed: Any = None
        self.offers: frozenset[str] = frozenset()  # tools only
        self.on_offerings_changed: Any = None
        self.on_resource_updated: Any = None
        self.on_log: Any = None
        self.on_request: Any = None
        self.release = anyio.Event()
        self.offered: ClientOffer | None = None
        self.roots_changes = 0

    async def handshake(self, offer: ClientOffer) -> None:
        self.offered = offer

    async def roots_changed(self) -> None:
        self.roots_changes += 1

    def reason(self) -> str:
        return ""

    async def tool_pages(self) -> AsyncIterator[list[ToolDefinition]]:
        yield [ToolDefinition(name="hold", description="", input_schema={"type": "object"})]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressCallback | None
    ) -> ToolResult:
        await self.release.wait()
        return ToolResult.text("done")


class Channel:
    """A recording agent channel: ``answer`` is its result, or an exception to raise, or ``None`` to hang."""

    def __init__(
        self, label: str, answer: Any = None, features: tuple[ClientFeature, ...] = ("sampling",)
    ) -> None:
        self.label = label
        self.answer = answer
        self.features = features
        self.asked: list[tuple[str, Mapping[str, Any]]] = []

    def supports(self, feature: ClientFeature) -> bool:
        return feature in self.features

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        self.asked.append((method, params))
        if isinstance(self.answer, BaseException):
            raise self.answer
        if self.answer is None:
            await anyio.sleep_forever()
        return {"answered by": self.label, **self.answer}


async def provider(session: HeldSession, offer: ClientOffer = SAMPLING) -> UpstreamProvider:
    @contextlib.asynccontextmanager
    async def connect(spec: ServerSpec, cwd: str) -> AsyncIterator[HeldSession]:
        yield session

    upstream = UpstreamProvider(
        ServerSpec(name="up", command="x"), connect, roots=["/configured"], offer=offer
    )
    await upstream.start()
    return upstream


async def hold(upstream: UpstreamProvider, context: CallContext, arguments: Any = None) -> ToolResult:
    token = bind_call_context(context)
    try:
        return await upstream.call_tool("up_hold", arguments or {})
    finally:
        unbind_call_context(token)


async def test_a_request_goes_to_the_oldest_call_in_flight_and_its_answer_back_unchanged() -> None:
    session = HeldSession()
    upstream = await provider(session)
    assert session.offered == SAMPLING
    first, second = Channel("first", {"model": "m"}), Channel("second", {"model": "m"})
    async with anyio.create_task_group() as group:
        group.start_soon(hold, upstream, CallContext(tool_name="up_hold", channel=first))
        await anyio.sleep(0.01)
        group.start_soon(hold, upstream, CallContext(tool_name="up_hold", channel=second))
        await anyio.sleep(0.01)
        answer = await upstream.answer("sampling/createMessage", SAMPLE)
        session.release.set()
    assert answer == {"answered by": "first", "model": "m"}
    assert first.asked == [("sampling/createMessage", SAMPLE)] and not second.asked
    await upstream.close()


async def test_with_no_call_in_flight_a_request_is_refused() -> None:
    upstream = await provider(HeldSession())
    with pytest.raises(
        UpstreamRequestRefused, match="none of the server's tool calls, prompts or reads is running"
    ):
        await upstream.answer("sampling/createMessage", SAMPLE)
    await upstream.close()


@pytest.mark.parametrize(
    ("offer", "channel", "expected", "unsupported"),
    [
        ({}, Channel("c", {}), "it did not advertise sampling to this server", True),
        (SAMPLING, Channel("c", {}, features=()), "the agent does not support sampling", True),
        (
            SAMPLING,
            Channel("c", ClientCannotAnswer("the client answered with an error: no")),
            "could not forward sampling/createMessage: the client answered with an error: no",
            False,
        ),
    ],
)
async def test_refusals_say_why_in_one_sentence(
    offer: ClientOffer, channel: Channel, expected: str, unsupported: bool
) -> None:
    session = HeldSession()
    upstream = await provider(session, offer)
    async with anyio.create_task_group() as group:
        group.start_soon(hold, upstream, CallContext(tool_name="up_hold", channel=channel))
        await anyio.sleep(0.01)
        with pytest.raises(UpstreamRequestRefused, match=expected) as refused:
            await upstream.answer("sampling/createMessage", SAMPLE)
        session.release.set()
    assert refused.value.unsupported is unsupported
    await upstream.close()


async def test_a_request_waiting_for_the_agent_is_refused_when_its_call_ends() -> None:
    session = HeldSession()
    upstream = await provider(session)
    outcome: list[BaseException] = []

    async def ask() -> None:
        try:
            await upstream.answer("sampling/createMessage", SAMPLE)
        except UpstreamRequestRefused as exc:
            outcome.append(exc)

    async with anyio.create_task_group() as group:
        group.start_soon(hold, upstream, CallContext(tool_name="up_hold", channel=Channel("hangs")))
        await anyio.sleep(0.01)
        group.start_soon(ask)
        await anyio.sleep(0.05)
        assert not outcome  # still waiting for the agent
        session.release.set()  # the call ends (answered here; a timeout or cancellation ends it the same way)
    assert len(outcome) == 1
    assert "up_hold ended (answered, timed out or cancelled) before the agent answered" in str(outcome[0])
    await upstream.close()


async def test_roots_are_the_oldest_calls_roots_or_the_configured_ones() -> None:
    session = HeldSession()
    upstream = await provider(session, {})
    assert await upstream.answer("roots/list", {}) == {"roots": [{"uri": "file:///configured"}]}
    async with anyio.create_task_group() as group:
        context = CallContext(tool_name="up_hold", roots=("/agent/a b", "/agent/c"))
        group.start_soon(hold, upstream, context)
        await anyio.sleep(0.01)
        listed = await upstream.answer("roots/list", {})
        session.release.set()
    assert listed == {"roots": [{"uri": "file:///agent/a%20b"}, {"uri": "file:///agent/c"}]}
    await upstream.close()


async def test_a_call_with_other_roots_than_those_last_told_announces_the_change() -> None:
    session = HeldSession()
    session.release.set()  # calls answer at once
    upstream = await provider(session, {"roots": {"listChanged": True}})
    await hold(upstream, CallContext(tool_name="up_hold", roots=("/a",)))
    assert session.roots_changes == 0  # nothing told yet: nothing to change
    assert await upstream.answer("roots/list", {}) == {"roots": [{"uri": "file:///configured"}]}
    await hold(upstream, CallContext(tool_name="up_hold"))  # the configured roots again
    assert session.roots_changes == 0
    await hold(upstream, CallContext(tool_name="up_hold", roots=("/a",)))
    await hold(upstream, CallContext(tool_name="up_hold", roots=("/b",)))
    assert session.roots_changes == 1  # once, until the server asks again
    await upstream.close()


async def test_a_server_flooding_the_agent_with_requests_is_cut_short(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("awf_mcp.core.upstream.routing.MAX_PENDING_REQUESTS", 2)
    session = HeldSession()
    upstream = await provider(session)
    channel = Channel("slow")  # never answers
    async with anyio.create_task_group() as group:
        group.start_soon(hold, upstream, CallContext(tool_name="up_hold", channel=channel))
        await anyio.sleep(0.01)
        refused: list[str] = []

        async def waiting() -> None:
            with pytest.raises(UpstreamRequestRefused) as ended:
                await upstream.answer("sampling/createMessage", SAMPLE)
            refused.append(str(ended.value))

        for _ in range(2):
            group.start_soon(waiting)
        await anyio.sleep(0.01)
        with pytest.raises(UpstreamRequestRefused, match="2 of its requests already wait for the agent"):
            await upstream.answer("sampling/createMessage", SAMPLE)
        assert len(channel.asked) == 2
        session.release.set()  # the call ends: the two waiting are refused
    assert len(refused) == 2 and all("before the agent answered" in text for text in refused)
    await upstream.close()


async def test_a_method_no_server_may_send_is_refused_as_unsupported() -> None:
    upstream = await provider(HeldSession())
    with pytest.raises(UpstreamRequestRefused, match="not a request a server may send") as refused:
        await upstream.answer("tools/call", {})
    assert refused.value.unsupported
    await upstream.close()


def frame(message: Any) -> bytes:
    return json.dumps(message).encode()


def test_the_offer_is_what_initialize_declared_and_nothing_else() -> None:
    declared = {"sampling": {"tools": {}}, "elicitation": {"form": {}}, "roots": {"listChanged": True}}
    declared_more = {**declared, "roots": {}, "experimental": {"x": {}}, "tasks": {}}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"capabilities": declared_more},
    }
    assert offer_from_first_message(frame(initialize)) == declared
    bare = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
    assert offer_from_first_message(frame(bare)) == {}


def test_a_stateless_agent_offers_what_its_meta_declares_and_garbage_offers_nothing() -> None:
    meta = {"io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "roots": {}}}
    discover = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    assert offer_from_first_message(frame(discover)) == {"sampling": {}, "roots": {"listChanged": True}}
    for garbage in (b"not json", b"[]", frame({"method": "initialize", "params": {"capabilities": 7}})):
        assert offer_from_first_message(garbage) == {}


def stateless(label: str) -> Channel:
    """The channel of a call on the stateless revision: every question ends the call."""
    return Channel(label, InputRequired("key-1", "sampling/createMessage", SAMPLE))


async def test_a_stateless_agents_call_is_suspended_and_its_retry_resumes_the_upstream_call() -> None:
    session = HeldSession()
    upstream = await provider(session)
    answers: list[Mapping[str, Any]] = []
    ended: list[InputRequired] = []
    results: list[ToolResult] = []

    async def round_one() -> None:
        with pytest.raises(InputRequired) as raised:
            await hold(upstream, CallContext(tool_name="up_hold", channel=stateless("first")))
        ended.append(raised.value)

    async def upstream_asks() -> None:
        answers.append(await upstream.answer("sampling/createMessage", SAMPLE))

    retry = Channel("retry", {"model": "m"})

    async def round_two() -> None:
        results.append(await hold(upstream, CallContext(tool_name="up_hold", channel=retry)))

    async with anyio.create_task_group() as group:
        group.start_soon(round_one)
        await anyio.sleep(0.01)
        group.start_soon(upstream_asks)
        await anyio.sleep(0.05)
        assert [question.key for question in ended] == ["key-1"]  # the agent's call ended: input_required
        assert not answers  # the upstream still waits, its call open
        group.start_soon(round_two)
        await anyio.sleep(0.05)
        assert answers == [{"answered by": "retry", "model": "m"}]
        assert retry.asked == [("sampling/createMessage", SAMPLE)]
        session.release.set()
    assert [result.content[0].text for result in results] == ["done"]
    await upstream.close()


async def test_a_retry_with_other_arguments_is_a_new_call_and_suspended_calls_are_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("awf_mcp.core.upstream.routing.MAX_SUSPENDED", 1)
    session = HeldSession()
    upstream = await provider(session)
    refused: list[str] = []

    async def suspend(arguments: dict[str, Any]) -> None:
        with pytest.raises(InputRequired):
            await hold(upstream, CallContext(tool_name="up_hold", channel=stateless("s")), arguments)

    async def upstream_asks() -> None:
        try:
            await upstream.answer("sampling/createMessage", SAMPLE)
        except UpstreamRequestRefused as exc:
            refused.append(str(exc))

    async with anyio.create_task_group() as group:
        group.start_soon(suspend, {"n": 1})
        await anyio.sleep(0.01)
        group.start_soon(upstream_asks)
        await anyio.sleep(0.05)
        group.start_soon(suspend, {"n": 2})  # other arguments: not a retry of the first
        await anyio.sleep(0.01)
        group.start_soon(upstream_asks)
        await anyio.sleep(0.05)
        # Two suspended with room for one: the older upstream call was cancelled, its question refused.
        assert len(refused) == 1 and "ended (answered, timed out or cancelled)" in refused[0]
        session.release.set()
    await upstream.close()


class BackChannel(Channel):
    """An agent channel with a back-channel (a handshake revision): its calls never end in input_required."""

    stateless = False


class TaskRecordingSession(HeldSession):
    """A HeldSession that records the task each call ran in, and whether it was cancelled."""

    def __init__(self) -> None:
        super().__init__()
        self.tasks: list[object] = []
        self.cancelled = 0

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressCallback | None
    ) -> ToolResult:
        self.tasks.append(asyncio.current_task())
        try:
            return await super().call_tool(name, arguments, progress)
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise


@pytest.mark.parametrize(("kind", "inline"), [(BackChannel, True), (Channel, False)])
async def test_with_a_back_channel_the_upstream_call_runs_in_the_agents_call(
    kind: type, inline: bool
) -> None:
    session = TaskRecordingSession()
    upstream = await provider(session)
    agent_tasks: list[object] = []
    results: list[ToolResult] = []

    async def call() -> None:
        agent_tasks.append(asyncio.current_task())
        results.append(
            await hold(upstream, CallContext(tool_name="up_hold", channel=kind("c", {"model": "m"})))
        )

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await anyio.sleep(0.01)
        answer = await upstream.answer("sampling/createMessage", SAMPLE)  # routed to the call's agent
        session.release.set()
    assert answer == {"answered by": "c", "model": "m"}
    assert [r.content[0].text for r in results] == ["done"]
    assert (session.tasks == agent_tasks) is inline
    await upstream.close()


@pytest.mark.parametrize("kind", [BackChannel, Channel])
async def test_a_cancelled_agents_call_cancels_the_upstream_call(kind: type) -> None:
    session = TaskRecordingSession()
    upstream = await provider(session)
    with anyio.move_on_after(0.05):
        await hold(upstream, CallContext(tool_name="up_hold", channel=kind("c")))
    await anyio.sleep(0.01)
    assert session.cancelled == 1
    await upstream.close()
