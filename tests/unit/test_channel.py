"""The client channel in-process: a tool asks the SDK's own ``Client`` for roots, a sample and a yes.

The same tool runs on a handshake revision (``mode="legacy"``: server-to-client requests
on the back-channel) and on the stateless revision (``mode="2026-07-28"``: each question
is an ``input_required`` round the client's driver answers and retries), and must see
the same answers. A client lacking a capability gets :class:`ClientCannotAnswer`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.session import ClientRequestContext

from awf_mcp.core.calls import ToolInvoker
from awf_mcp.core.registry import RegisteredTool, Registry
from awf_mcp.ports import ClientCannotAnswer, ToolResult, current_call
from awf_mcp.wire.channel import question_key
from awf_mcp.wire.server import McpServer
from tests.helpers.providers import definition

pytestmark = pytest.mark.anyio

MODES = pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
SAMPLE = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
QUESTION = {
    "mode": "form",
    "message": "go on?",
    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
}


class Asking:
    """One tool, ``demo_ask``, that asks the client everything and returns what it heard."""

    def __init__(self) -> None:
        self.runs = 0

    def list_tools(self) -> list[Any]:
        return [definition("demo_ask")]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        self.runs += 1
        channel = current_call().channel
        heard: dict[str, Any] = {
            "supports": [f for f in ("roots", "elicitation", "sampling") if channel.supports(f)]  # type: ignore[arg-type]
        }
        for method, params in (
            ("roots/list", {}),
            ("sampling/createMessage", SAMPLE),
            ("elicitation/create", QUESTION),
        ):
            try:
                heard[method] = await channel.ask(method, params)
            except ClientCannotAnswer as exc:
                heard[method] = f"cannot: {exc}"
        return ToolResult.text(json.dumps(heard, sort_keys=True))

    def close(self) -> None:
        return None


async def roots(context: ClientRequestContext) -> types.ListRootsResult:
    return types.ListRootsResult(roots=[types.Root(uri="file:///tmp")])  # type: ignore[arg-type]


async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="sampled"), model="m", stop_reason="endTurn"
    )


async def elicit(context: ClientRequestContext, params: Any) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"ok": True})


def serve(provider: Asking) -> McpServer:
    tools = [RegisteredTool(d, provider, d.name) for d in provider.list_tools()]
    return McpServer(ToolInvoker(Registry(tools), timeout_seconds=5))


@MODES
async def test_a_tool_hears_the_same_answers_on_both_families(mode: str) -> None:
    provider = Asking()
    server = serve(provider)
    async with Client(
        server.sdk_server,
        mode=mode,  # type: ignore[arg-type]
        list_roots_callback=roots,
        sampling_callback=sample,
        elicitation_callback=elicit,
    ) as client:
        result = await client.call_tool("demo_ask", {"text": "x"})
    heard = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert heard["supports"] == ["roots", "elicitation", "sampling"]
    assert heard["roots/list"] == {"roots": [{"uri": "file:///tmp"}]}
    assert heard["sampling/createMessage"]["content"]["text"] == "sampled"
    assert heard["elicitation/create"] == {"action": "accept", "content": {"ok": True}}
    # Stateless: one run per question, then the run that has every answer.
    assert provider.runs == (1 if mode == "legacy" else 4)


@MODES
async def test_a_client_without_the_capabilities_cannot_answer(mode: str) -> None:
    server = serve(Asking())
    async with Client(server.sdk_server, mode=mode) as client:  # type: ignore[arg-type]
        result = await client.call_tool("demo_ask", {"text": "x"})
    heard = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert heard["supports"] == []
    for method, feature in (
        ("roots/list", "roots"),
        ("sampling/createMessage", "sampling"),
        ("elicitation/create", "elicitation"),
    ):
        assert heard[method] == f"cannot: the client does not support {feature} (it did not declare it)"


def test_question_keys_are_stable_and_distinct() -> None:
    assert question_key("roots/list", {}) == question_key("roots/list", {})
    assert question_key("roots/list", {}).startswith("roots-")
    one = question_key("elicitation/create", {"message": "a", "mode": "form"})
    assert one == question_key("elicitation/create", {"mode": "form", "message": "a"})
    assert one != question_key("elicitation/create", {"message": "b", "mode": "form"})
