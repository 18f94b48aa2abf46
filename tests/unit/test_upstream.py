"""The upstream provider: concurrent start-up, names, forwarding, death, restart and backoff.

The provider is driven through its ``Connect`` seam with an in-process session, so these
tests need no subprocess; tests/e2e/test_upstream.py drives the real SDK client adapter
against real servers.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
import pytest

from awf_mcp.core.config import Settings
from awf_mcp.core.registry import build
from awf_mcp.core.servers import ServerSpec, working_directory
from awf_mcp.core.upstream import (
    MAX_INSTRUCTIONS_BYTES,
    MAX_LISTING_BYTES,
    MAX_RELAYED_INSTRUCTIONS_BYTES,
    MAX_SERVER_DEFINITION_BYTES,
    MAX_TOOL_DEFINITION_BYTES,
    MAX_UPSTREAM_DEFINITION_BYTES,
    RELIST_PAUSE_SECONDS,
    ProgressCallback,
    UpstreamFailure,
    UpstreamGone,
    UpstreamProvider,
    backoff_seconds,
    definition_bytes,
    definition_share,
    instructions,
    start_all,
)
from awf_mcp.errors import PluginError
from awf_mcp.ports import CallContext, ToolDefinition, ToolResult, bind_call_context, unbind_call_context

pytestmark = pytest.mark.anyio


@dataclass
class Behaviour:
    """How the fake upstream behaves; shared by every connection it opens."""

    handshake_delay: float = 0.0
    tools: tuple[str, ...] = ("echo",)
    pages: tuple[tuple[str, ...], ...] = ()
    """When given, the listing's pages (``tools`` is then ignored)."""
    descriptions: dict[str, str] = field(default_factory=dict)
    instructions: str = "fake instructions"
    pages_read: int = 0
    opened: int = 0
    listings: int = 0
    progress_asked: list[bool] = field(default_factory=list)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    live: list[FakeSession] = field(default_factory=list)


class FakeSession:
    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.closed = anyio.Event()
        self.instructions: str | None = None
        self.on_tools_changed: Any = None
        self.offers: frozenset[str] = frozenset()  # tools only
        self.on_offerings_changed: Any = None
        self.on_resource_updated: Any = None
        self.on_log: Any = None
        self.on_request: Any = None

    async def handshake(self, offer: Any) -> None:
        await anyio.sleep(self.behaviour.handshake_delay)
        self.instructions = self.behaviour.instructions

    def reason(self) -> str:
        return "it was killed by SIGKILL" if self.closed.is_set() else ""

    async def tool_pages(self) -> AsyncIterator[list[ToolDefinition]]:
        self.behaviour.listings += 1
        for page in self.behaviour.pages or (self.behaviour.tools,):
            self.behaviour.pages_read += 1
            yield [
                ToolDefinition(
                    name=n,
                    description=self.behaviour.descriptions.get(n, f"{n} tool"),
                    input_schema={"type": "object"},
                )
                for n in page
            ]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], progress: ProgressCallback | None
    ) -> ToolResult:
        self.behaviour.calls.append((name, dict(arguments)))
        self.behaviour.progress_asked.append(progress is not None)
        if name == "die":
            self.closed.set()
            raise UpstreamGone(self.reason())
        if progress is not None:
            progress(1, 2, "half")
        return ToolResult.text(f"{name}:{dict(arguments)}")


def fake_connect(behaviour: Behaviour) -> Any:
    @contextlib.asynccontextmanager
    async def connect(spec: ServerSpec, cwd: str) -> AsyncIterator[FakeSession]:
        behaviour.opened += 1
        session = FakeSession(behaviour)
        behaviour.live.append(session)
        try:
            yield session
        finally:
            behaviour.live.remove(session)

    return connect


def spec(name: str = "fake", **extra: Any) -> ServerSpec:
    """A server whose tools change from test to test: not pinned (tests/unit/test_pins.py pins)."""
    return ServerSpec(name=name, command="fake", **{"pin": False, **extra})


async def test_servers_start_concurrently_and_tools_are_prefixed_with_definitions_kept() -> None:
    behaviours = [Behaviour(handshake_delay=0.4, tools=("echo", "bad.name")) for _ in range(3)]
    started = time.monotonic()
    records = []
    for index, behaviour in enumerate(behaviours):
        records += await start_all([spec(f"s{index}")], fake_connect(behaviour))
    one_by_one = time.monotonic() - started

    behaviour = Behaviour(handshake_delay=0.4)
    started = time.monotonic()
    connect = fake_connect(behaviour)
    together = await start_all([spec("a"), spec("b"), spec("c")], connect)
    elapsed = time.monotonic() - started
    assert elapsed < one_by_one * 0.6, (elapsed, one_by_one)
    assert [r.tool_names for r in together] == [["a_echo"], ["b_echo"], ["c_echo"]]
    tool = together[0].providers[0].tools[0]
    assert (tool.description, tool.source, dict(tool.input_schema)) == (
        "echo tool",
        "server:a",
        {"type": "object"},
    )
    assert records[0].tool_names == ["s0_bad.name", "s0_echo"]  # listed; the registry leaves bad.name out
    assert [d.name for d in build(records[:1], Settings()).definitions()] == ["s0_echo"]
    for record in records + together:
        for entry in record.providers:
            await entry.provider.close()  # type: ignore[misc]
    assert not behaviour.live


async def test_a_server_that_does_not_answer_in_time_is_failed_and_the_others_served() -> None:
    slow, quick = Behaviour(handshake_delay=30), Behaviour()
    failures: list[str] = []

    def connect(s: ServerSpec, cwd: str) -> Any:
        return fake_connect(slow if s.name == "slow" else quick)(s, cwd)

    started = time.monotonic()
    records = await start_all(
        [spec("slow", startup_timeout_seconds=0.3), spec("quick"), spec("off", enabled=False)],
        connect,
        on_failure=lambda record: failures.append(record.status),
    )
    assert time.monotonic() - started < 2.5
    by_name = {r.name: r for r in records}
    assert by_name["slow"].status == "failed: it did not list its tools within 0.3 s"
    assert by_name["quick"].ok and by_name["off"].status == "disabled"
    assert failures == ["failed: it did not list its tools within 0.3 s"]
    assert not slow.live  # the hung connection was ended
    for entry in by_name["quick"].providers:
        await entry.provider.close()  # type: ignore[misc]


async def test_a_spec_problem_fails_the_server_and_strict_makes_it_fatal() -> None:
    behaviour = Behaviour()
    broken = spec("broken", problem="${X} is not set in awf-mcp's environment")
    records = await start_all([broken], fake_connect(behaviour), on_failure=None)
    assert records[0].status == "failed: ${X} is not set in awf-mcp's environment"
    with pytest.raises(PluginError, match="server 'broken' failed to start: \\$\\{X\\} is not set"):
        await start_all([broken, spec("good")], fake_connect(behaviour), strict=True)
    assert not behaviour.live  # the good one was closed again


async def test_calls_are_forwarded_under_the_upstreams_name_with_progress() -> None:
    behaviour = Behaviour()
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    reports: list[tuple[float, float | None, str | None]] = []
    token = bind_call_context(CallContext("fake_echo", report_progress=lambda *a: reports.append(a)))
    try:
        result = await provider.call_tool("fake_echo", {"text": "hi"})
    finally:
        unbind_call_context(token)
    assert behaviour.calls == [("echo", {"text": "hi"})]
    assert result.content[0].text == "echo:{'text': 'hi'}"
    assert reports == [(1, 2, "half")]
    assert provider.instructions == "fake instructions"
    token = bind_call_context(CallContext("fake_echo"))  # the client asked for no progress
    try:
        await provider.call_tool("fake_echo", {"text": "quiet"})
    finally:
        unbind_call_context(token)
    assert behaviour.progress_asked == [True, False]  # so none is asked of the upstream
    await provider.close()


async def test_a_death_mid_call_is_an_error_and_the_next_call_restarts_with_backoff() -> None:
    behaviour = Behaviour()
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    died = await provider.call_tool("fake_die", {})
    assert died.is_error
    assert died.content[0].text == (
        "server 'fake' stopped during the call of die: it was killed by SIGKILL; the next call restarts it"
    )
    again = await provider.call_tool("fake_die", {})  # restarted at once, and dies again
    assert again.is_error and behaviour.opened == 2
    # A second death in a row: the restart waits; the ToolError reaches the model verbatim.
    with pytest.raises(
        UpstreamFailure,
        match=r"server 'fake' is down \(it was killed by SIGKILL\); the next restart is in 0\.\d s",
    ):
        await provider.call_tool("fake_echo", {})
    assert behaviour.opened == 2
    await anyio.sleep(backoff_seconds(2) + 0.05)
    assert not (await provider.call_tool("fake_echo", {})).is_error
    assert provider.deaths == 0 and behaviour.opened == 3  # a call that succeeds resets the count
    await provider.close()
    assert not behaviour.live


def test_backoff_grows_and_is_capped() -> None:
    assert [backoff_seconds(n) for n in (1, 2, 3, 4)] == [0.0, 0.5, 1.0, 2.0]
    assert backoff_seconds(50) == 30.0


def test_working_directory_is_relative_to_the_first_root() -> None:
    assert working_directory(spec(), ["/r1", "/r2"]) == "/r1"
    assert working_directory(spec(cwd="sub/.."), ["/r1"]) == "/r1"
    assert working_directory(spec(cwd="/abs"), ["/r1"]) == "/abs"
    assert working_directory(spec(cwd="repo"), ["/r1"]) == "/r1/repo"


async def test_tools_list_changed_lists_again_coalesced_and_tells_the_watchers() -> None:
    behaviour = Behaviour(tools=("echo",))
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    session = behaviour.live[0]
    assert session.on_tools_changed is not None  # set by the provider on connecting
    seen: list[list[str]] = []

    async def watcher() -> None:
        seen.append([d.name for d in provider.list_tools()])

    provider.watch_tools(watcher)
    behaviour.tools = ("echo", "more")
    for _ in range(5):  # a burst of notifications: at most two listings, one change
        session.on_tools_changed()
    with anyio.fail_after(2):
        while not seen:
            await anyio.sleep(0.01)
    await anyio.sleep(0.05)
    assert seen == [["fake_echo", "fake_more"]]
    session.on_tools_changed()  # the same set again: no change, no call
    await anyio.sleep(0.05)
    assert len(seen) == 1
    await provider.close()


async def test_a_failed_listing_after_list_changed_keeps_the_old_tools() -> None:
    behaviour = Behaviour(tools=("echo",))
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    session = behaviour.live[0]

    async def broken() -> AsyncIterator[list[ToolDefinition]]:
        raise UpstreamFailure("server 'fake' answered: boom")
        yield []

    session.tool_pages = broken  # type: ignore[method-assign]
    called: list[int] = []

    async def watcher() -> None:
        called.append(1)

    provider.watch_tools(watcher)
    session.on_tools_changed()
    await anyio.sleep(0.05)
    assert [d.name for d in provider.list_tools()] == ["fake_echo"] and not called
    assert not (await provider.call_tool("fake_echo", {})).is_error  # still serving
    await provider.close()


async def test_a_restarted_server_is_listed_again() -> None:
    behaviour = Behaviour(tools=("echo", "die"))
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    seen: list[list[str]] = []

    async def watcher() -> None:
        seen.append([d.name for d in provider.list_tools()])

    provider.watch_tools(watcher)
    assert (await provider.call_tool("fake_die", {})).is_error
    behaviour.tools = ("echo", "die", "new")  # upgraded while it was down
    assert not (await provider.call_tool("fake_echo", {})).is_error  # restarts it
    with anyio.fail_after(2):
        while not seen:
            await anyio.sleep(0.01)
    assert seen == [["fake_echo", "fake_die", "fake_new"]]
    await provider.close()


async def test_a_flood_of_list_changed_costs_a_listing_per_pause() -> None:
    behaviour = Behaviour(tools=("echo",))
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    await provider.start()
    session = behaviour.live[0]
    started = time.monotonic()
    for _ in range(200):
        session.on_tools_changed()
        await anyio.sleep(0.001)
    await anyio.sleep(RELIST_PAUSE_SECONDS * 3)
    pauses = (time.monotonic() - started) / RELIST_PAUSE_SECONDS
    assert 2 <= behaviour.listings <= pauses + 2, (behaviour.listings, pauses)
    await provider.close()


async def test_a_tools_list_that_pages_forever_is_cut_off() -> None:
    """The SDK's own server paging without end, through the SDK's own client session."""
    from mcp.client.session import ClientSession
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

    from awf_mcp.wire.clientsession import MAX_LISTED_TOOLS, Transcript, UpstreamConnection

    async def endless(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        tools = [types.Tool(name=f"t{page}_{i}", input_schema={"type": "object"}) for i in range(500)]
        return types.ListToolsResult(tools=tools, next_cursor=str(page + 1))

    server: Any = Server("endless", on_list_tools=endless)
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    upstream = spec("endless")
    async with anyio.create_task_group() as group:
        group.start_soon(server.run, server_reads, to_client, server.create_initialization_options())
        async with ClientSession(client_reads, to_server) as session:
            connection = UpstreamConnection(upstream, session, Transcript(upstream), anyio.Event())
            await connection.handshake()
            with (
                anyio.fail_after(30),
                pytest.raises(UpstreamFailure, match=f"more than {MAX_LISTED_TOOLS} tools"),
            ):
                async for _ in connection.tool_pages():
                    pass
        group.cancel_scope.cancel()


# Byte bounds: what one server may take of the tools/list answer and of the instructions.


def size_of(name: str, description: str) -> int:
    return definition_bytes(
        ToolDefinition(name=name, description=description, input_schema={"type": "object"})
    )


async def test_a_tool_too_large_or_listed_twice_is_left_out_and_the_rest_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    huge = "x" * (MAX_TOOL_DEFINITION_BYTES + 1)
    long = "n" * 50_000
    behaviour = Behaviour(tools=("echo", "huge", "echo", "wait", long, long), descriptions={"huge": huge})
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    tools = await provider.start()
    assert [tool.name for tool in tools] == ["fake_echo", "fake_wait", f"fake_{long}"]
    assert provider.left_out == [
        f"tool 'huge' is left out: its definition takes {size_of('huge', huge):,} bytes, over the "
        f"{MAX_TOOL_DEFINITION_BYTES:,} awf-mcp serves of one tool",
        "tool 'echo' is listed twice: the second is left out",
        f"tool '{long[:80]}…' is listed twice: the second is left out",
    ]
    assert "server 'fake': tool 'huge' is left out" in caplog.text
    assert "server 'fake': tool 'echo' is listed twice" in caplog.text
    await provider.close()


async def test_a_server_past_its_share_is_served_up_to_it_and_no_further_page_is_read() -> None:
    description = "d" * 120_000
    pages = tuple((f"t{page}",) for page in range(20))
    behaviour = Behaviour(pages=pages, descriptions={f"t{page}": description for page in range(20)})
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    tools = await provider.start()
    fitting = MAX_SERVER_DEFINITION_BYTES // size_of("t10", description)
    assert [tool.name for tool in tools] == [f"fake_t{n}" for n in range(fitting)]
    assert behaviour.pages_read == fitting + 1
    assert provider.left_out == [
        f"its tools from 't{fitting}' on are left out: their definitions pass the "
        f"{MAX_SERVER_DEFINITION_BYTES:,} bytes awf-mcp serves of one server"
    ]
    assert sum(definition_bytes(tool) for tool in tools) <= MAX_SERVER_DEFINITION_BYTES
    await provider.close()


async def test_pages_of_tools_each_too_large_are_read_only_up_to_the_listing_bound() -> None:
    huge = "x" * 1_000_000
    pages = tuple((f"t{page}",) for page in range(100))
    behaviour = Behaviour(pages=(("echo",), *pages), descriptions={f"t{p}": huge for p in range(100)})
    provider = UpstreamProvider(spec(), fake_connect(behaviour))
    tools = await provider.start()
    assert [tool.name for tool in tools] == ["fake_echo"]
    first_unread = (MAX_LISTING_BYTES - size_of("echo", "echo tool")) // size_of("t10", huge) + 1
    assert behaviour.pages_read == 1 + first_unread + 1 < 100
    assert provider.left_out[-1] == (
        f"its tools from 't{first_unread}' on are left out: their definitions pass the "
        f"{MAX_LISTING_BYTES:,} bytes awf-mcp reads of one server"
    )
    await provider.close()


async def test_many_servers_share_the_definition_bytes_of_one_tools_list() -> None:
    assert definition_share(1) == MAX_SERVER_DEFINITION_BYTES
    assert definition_share(60) * 60 <= MAX_UPSTREAM_DEFINITION_BYTES
    description = "d" * (MAX_UPSTREAM_DEFINITION_BYTES // 60 // 2)
    behaviour = Behaviour(tools=("a", "b", "c"), descriptions=dict.fromkeys("abc", description))
    records = await start_all([spec(f"s{n}") for n in range(60)], fake_connect(behaviour))
    assert all(record.tool_names == [f"{record.name}_a"] for record in records)
    for record in records:
        await record.providers[0].provider.close()  # type: ignore[misc]


async def test_instructions_over_the_bound_are_left_out_and_the_server_served(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = Behaviour(instructions="i" * (MAX_INSTRUCTIONS_BYTES + 1))
    fine = Behaviour(instructions="Use it well.")
    records = await start_all([spec("big")], fake_connect(big)) + await start_all(
        [spec("fine")], fake_connect(fine)
    )
    assert [record.tool_names for record in records] == [["big_echo"], ["fine_echo"]]
    relayed = instructions(records)
    assert relayed is not None and "Use it well." in relayed and "iii" not in relayed
    provider = records[0].providers[0].provider
    assert isinstance(provider, UpstreamProvider)
    assert provider.left_out == [
        f"its instructions are left out: they take {MAX_INSTRUCTIONS_BYTES + 1:,} bytes, over the "
        f"{MAX_INSTRUCTIONS_BYTES:,} awf-mcp relays of one server"
    ]
    assert "server 'big': its instructions are left out" in caplog.text
    for record in records:
        await record.providers[0].provider.close()  # type: ignore[misc]


async def test_the_relayed_instructions_of_all_servers_together_are_bounded() -> None:
    count = MAX_RELAYED_INSTRUCTIONS_BYTES // MAX_INSTRUCTIONS_BYTES + 2
    behaviour = Behaviour(instructions="i" * (MAX_INSTRUCTIONS_BYTES - 100))
    records = await start_all([spec(f"s{n}") for n in range(count)], fake_connect(behaviour))
    relayed = instructions(records)
    assert relayed is not None and len(relayed.encode()) <= MAX_RELAYED_INSTRUCTIONS_BYTES + 200
    left_out = [r.name for r in records if r.providers[0].provider.left_out]  # type: ignore[attr-defined]
    assert left_out and f"## Server '{left_out[0]}'" not in relayed
    for record in records:
        await record.providers[0].provider.close()  # type: ignore[misc]
