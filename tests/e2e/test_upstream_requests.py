"""An upstream's requests to its client (sampling, elicitation, roots), through ``awf-mcp serve``.

The upstream is tests/upstreams/asking_upstream.py (the SDK's own low-level server), whose
tools ask their client and say what came back; the agent is the SDK's ``ClientSession``
with or without the callbacks that declare each capability. server-everything, which lists
its sampling and elicitation tools only to a client that declared them, is driven too.

What each test proves: the upstream is told exactly the capabilities the agent declared (as
seen in its ``initialize``); a forwarded request's answer reaches the upstream unchanged; an
agent without the capability, or one answering with an error, gives the upstream one clear
refusal and the server keeps serving; ``roots/list`` is answered by awf-mcp with the roots
the call is confined to; an agent on the stateless revision (2026-07-28) answers through
``input_required`` while the upstream's call waits, suspended, for its retry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from awf_mcp.cli.runtime import AGENT_FIRST_MESSAGE_SECONDS
from tests.e2e.test_upstream import NO_PLUGINS, UPSTREAMS, node_server, server_table, write_config
from tests.helpers.harness import (
    RawServer,
    answering,
    call_answering,
    mcp_session,
    server_command,
    server_env,
    text_of,
    wait_until,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

ASKING = UPSTREAMS / "asking_upstream.py"


def asking_config(directory: Path, **extra: Any) -> str:
    return write_config(directory, server_table("asking", sys.executable, [str(ASKING)], **extra))


class Agent:
    """The agent's side: callbacks that answer and remember what they were asked."""

    def __init__(self, roots: list[Path] | None = None) -> None:
        self.sampled: list[types.CreateMessageRequestParams] = []
        self.elicited: list[types.ElicitRequestParams] = []
        self.roots = roots or []

    async def sample(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        self.sampled.append(params)
        asked = params.messages[0].content
        said = asked.text if isinstance(asked, types.TextContent) else "?"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=f"you said {said}"), model="stand-in-model"
        )

    async def elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited.append(params)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=[types.Root(uri=root.as_uri()) for root in self.roots])  # type: ignore[arg-type]

    def callbacks(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sample,
            "elicitation_callback": self.elicit,
            "list_roots_callback": self.list_roots,
        }


async def call(session: Any, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await session.call_tool(tool, arguments or {})
    assert result.is_error is not True, text_of(result)
    return text_of(result)


async def test_an_agent_that_supports_them_answers_the_upstreams_requests(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    agent = Agent(roots=[work])
    config = asking_config(tmp_path)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, **agent.callbacks()
    ) as session:
        seen = json.loads(await call(session, "asking_seen"))
        assert seen["sampling"] == {} and seen["roots"] == {"listChanged": True}  # roots: awf-mcp's own
        assert seen["elicitation"] == {"form": {}, "url": {}}  # what the SDK client declared
        assert (
            await call(session, "asking_sample", {"prompt": "hello"})
            == "sampled: you said hello (stand-in-model)"
        )
        assert agent.sampled[0].max_tokens == 50  # the request reached the agent unchanged
        assert await call(session, "asking_elicit") == 'elicited: accept {"name": "Ada"}'
        assert agent.elicited[0].message == "Your name?"
        # roots/list is answered by awf-mcp: the roots the call is confined to (the agent's, here).
        assert await call(session, "asking_roots") == f"roots: {work.resolve().as_uri()}"


async def test_when_the_agents_roots_change_the_upstream_is_told(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    agent = Agent(roots=[first])
    config = asking_config(tmp_path)
    async with mcp_session(
        "--config",
        config,
        "--no-builtins",
        cwd=tmp_path,
        env=NO_PLUGINS,
        list_roots_callback=agent.list_roots,
    ) as session:
        assert await call(session, "asking_roots") == f"roots: {first.resolve().as_uri()}"
        assert await call(session, "asking_roots_changes") == "0"
        agent.roots = [second]
        await session.send_notification(types.RootsListChangedNotification())
        await call(session, "asking_echo", {"message": "the next call learns the new roots"})
        assert await call(session, "asking_roots_changes") == "1"
        assert await call(session, "asking_roots") == f"roots: {second.resolve().as_uri()}"
        assert await call(session, "asking_roots_changes") == "1"  # told once per change


async def test_an_agent_without_them_gets_upstreams_told_nothing_and_clean_refusals(tmp_path: Path) -> None:
    config = asking_config(tmp_path)
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        seen = json.loads(await call(session, "asking_seen"))
        assert not {"sampling", "elicitation", "roots"} & set(seen), seen
        refusal = await call(session, "asking_sample", {"prompt": "hello"})
        assert refusal == (
            "sample refused: awf-mcp refused sampling/createMessage from server 'asking': it did not "
            "advertise sampling to this server, because the agent did not declare it"
        )
        assert (await call(session, "asking_elicit")).startswith(
            "elicit refused: awf-mcp refused elicitation/create from server 'asking': it did not advertise"
        )
        # roots/list is answered anyway, with the configured roots (the working directory here).
        assert await call(session, "asking_roots") == f"roots: {tmp_path.resolve().as_uri()}"
        assert await call(session, "asking_echo", {"message": "still here"}) == "echo: still here"


async def test_an_agent_answering_with_an_error_gives_the_upstream_that_error(tmp_path: Path) -> None:
    async def refuse(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="the user said no")

    config = asking_config(tmp_path)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, sampling_callback=refuse
    ) as session:
        refusal = await call(session, "asking_sample", {"prompt": "hello"})
        assert refusal == (
            "sample refused: awf-mcp could not forward sampling/createMessage: the client answered "
            "sampling/createMessage with an error: the user said no"
        )
        assert await call(session, "asking_echo", {"message": "on"}) == "echo: on"


async def test_an_agent_on_the_stateless_revision_answers_through_input_required(tmp_path: Path) -> None:
    agent = Agent()
    config = asking_config(tmp_path)
    async with mcp_session(
        "--config",
        config,
        "--no-builtins",
        cwd=tmp_path,
        env=NO_PLUGINS,
        stateless=True,
        sampling_callback=agent.sample,
        elicitation_callback=agent.elicit,
    ) as session:
        seen = json.loads(await call(session, "asking_seen"))
        assert {"sampling", "elicitation"} <= set(seen), seen
        # The first round ends with input_required while the upstream's call waits; the retry
        # carries the answer, which reaches the upstream; its call then finishes.
        first = await session.call_tool("asking_sample", {"prompt": "x"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        [request] = first.input_requests.values()
        assert request.method == "sampling/createMessage"
        sampled = await call_answering(session, "asking_sample", {"prompt": "again"})
        assert text_of(sampled) == "sampled: you said again (stand-in-model)"
        elicited = await call_answering(session, "asking_elicit", {})
        assert text_of(elicited) == 'elicited: accept {"name": "Ada"}'
        assert await call(session, "asking_echo", {"message": "on"}) == "echo: on"


async def test_server_everything_lists_and_runs_its_sampling_tool_for_an_agent_that_samples(
    tmp_path: Path,
) -> None:
    agent = Agent()
    config = write_config(tmp_path, node_server("everything", "server-everything"))
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, sampling_callback=agent.sample
    ) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "everything_trigger-sampling-request" in names
        assert "everything_trigger-elicitation-request" not in names  # not declared, not advertised
        answer = await call(
            session, "everything_trigger-sampling-request", {"prompt": "ping", "maxTokens": 20}
        )
    assert "you said Resource trigger-sampling-request context: ping" in answer
    assert "stand-in-model" in answer


def seen_by_upstream(server: RawServer) -> dict[str, Any]:
    reply = server.request("tools/call", {"name": "asking_seen", "arguments": {}})
    declared: dict[str, Any] = json.loads(reply["result"]["content"][0]["text"])
    return declared


def test_a_first_line_that_is_not_json_rpc_gets_its_error_and_upstreams_are_told_nothing(
    tmp_path: Path,
) -> None:
    config = asking_config(tmp_path)
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.send(
            b'{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {"sampling"'
        )
        assert server.receive()["error"]["code"] == -32700
        server.initialize()
        assert not {"sampling", "elicitation", "roots"} & set(seen_by_upstream(server))


def test_an_agent_silent_at_first_gets_upstreams_told_nothing_and_is_served(tmp_path: Path) -> None:
    config = asking_config(tmp_path)
    args = ("--config", config, "--no-builtins", "--log-level", "INFO")
    with RawServer(*args, env=NO_PLUGINS, cwd=tmp_path) as server:
        silence = f"no message from the agent within {AGENT_FIRST_MESSAGE_SECONDS:g} s"
        assert wait_until(lambda: silence in server.stderr(), timeout=20)
        declared = {"sampling": {}}
        info = {"name": "late", "version": "1"}
        reply = server.request(
            "initialize", {"protocolVersion": "2025-06-18", "capabilities": declared, "clientInfo": info}
        )
        assert "result" in reply, reply
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert seen_by_upstream(server) == {}


def test_tools_call_without_an_agent_advertises_nothing_and_refuses_sampling(tmp_path: Path) -> None:
    config = asking_config(tmp_path)
    command = server_command(
        "tools", "call", "asking_seen", "{}", "--json", "--no-builtins", "--config", config
    )
    seen = subprocess.run(
        command, capture_output=True, text=True, env=server_env(NO_PLUGINS), timeout=60, cwd=tmp_path
    )
    assert seen.returncode == 0, seen.stderr
    assert json.loads(json.loads(seen.stdout)["content"][0]["text"]) == {}
    command = server_command(
        "tools", "call", "asking_sample", '{"prompt": "p"}', "--json", "--no-builtins", "--config", config
    )
    sampled = subprocess.run(
        command, capture_output=True, text=True, env=server_env(NO_PLUGINS), timeout=60, cwd=tmp_path
    )
    assert "sample refused: awf-mcp refused sampling/createMessage" in sampled.stdout


async def test_a_call_that_times_out_while_the_agent_thinks_ends_and_the_server_serves_on(
    tmp_path: Path,
) -> None:
    async def slow(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        await anyio.sleep(3)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="late"), model="m")

    config = asking_config(tmp_path, timeout_seconds=1)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, sampling_callback=slow
    ) as session:
        with anyio.fail_after(10):
            result = await session.call_tool("asking_sample", {"prompt": "p"})
        assert result.is_error and "did not answer sample within 1 s" in text_of(result)
        assert await call(session, "asking_echo", {"message": "on"}) == "echo: on"
        await anyio.sleep(2.5)  # the agent's late answer arrives, for a question no one waits on
        assert await call(session, "asking_echo", {"message": "still"}) == "echo: still"


# ---------------------------------------------------------------- during prompts/get and resources/read


def asking_session(directory: Path, *serve_args: str, **callbacks: Any) -> Any:
    """``awf-mcp serve`` of the asking upstream alone, with SERVE_ARGS, the agent's CALLBACKS."""
    config = asking_config(directory)
    return mcp_session(
        "--config", config, "--no-builtins", *serve_args, cwd=directory, env=NO_PLUGINS, **callbacks
    )


async def test_a_prompt_or_a_read_that_asks_the_client_reaches_the_agent_and_the_audit_log(
    tmp_path: Path,
) -> None:
    agent = Agent()
    audit = tmp_path / "audit.jsonl"
    async with asking_session(tmp_path, "--audit-log", str(audit), **agent.callbacks()) as session:
        prompt = await session.get_prompt("asking_sampled", {"prompt": "hello"})
        assert prompt.messages[0].content.text == "sampled: you said hello (stand-in-model)"  # type: ignore[union-attr]
        read = await session.read_resource("ask://name")
        assert read.contents[0].text == 'elicited: accept {"name": "Ada"}'  # type: ignore[union-attr]
        assert agent.sampled[0].max_tokens == 50 and agent.elicited[0].message == "Your name?"
    records = {record["tool"]: record for record in map(json.loads, audit.read_text().splitlines())}
    [sampled] = records["asking_sampled"]["upstream_requests"]
    assert (sampled["method"], sampled["forwarded"], sampled["outcome"]) == (
        "sampling/createMessage",
        True,
        "answered",
    )
    [elicited] = records["ask://name"]["upstream_requests"]
    assert (elicited["method"], elicited["outcome"]) == ("elicitation/create", "answered")


async def test_a_prompt_or_a_read_asks_an_agent_without_the_capability_nothing(tmp_path: Path) -> None:
    async with asking_session(tmp_path) as session:
        prompt = await session.get_prompt("asking_sampled", {"prompt": "hello"})
        assert prompt.messages[0].content.text == (  # type: ignore[union-attr]
            "sample refused: awf-mcp refused sampling/createMessage from server 'asking': it did not "
            "advertise sampling to this server, because the agent did not declare it"
        )
        assert await call(session, "asking_echo", {"message": "on"}) == "echo: on"


async def test_on_the_stateless_revision_a_prompt_or_a_read_asks_through_input_required(
    tmp_path: Path,
) -> None:
    agent = Agent()
    async with asking_session(
        tmp_path, stateless=True, sampling_callback=agent.sample, elicitation_callback=agent.elicit
    ) as session:
        first = await session.get_prompt("asking_sampled", {"prompt": "x"}, allow_input_required=True)
        assert isinstance(first, types.InputRequiredResult)
        [request] = first.input_requests.values()
        assert request.method == "sampling/createMessage"

        async def get(responses: Any, state: str | None) -> Any:
            return await session.get_prompt(
                "asking_sampled",
                {"prompt": "again"},
                input_responses=responses,
                request_state=state,
                allow_input_required=True,
            )

        async def read(responses: Any, state: str | None) -> Any:
            return await session.read_resource(
                "ask://name", input_responses=responses, request_state=state, allow_input_required=True
            )

        prompt = await answering(session, get)
        assert prompt.messages[0].content.text == "sampled: you said again (stand-in-model)"
        resource = await answering(session, read)
        assert resource.contents[0].text == 'elicited: accept {"name": "Ada"}'
        assert await call(session, "asking_echo", {"message": "on"}) == "echo: on"
