"""A real Gemini CLI (offline, against the fake model) reaches one of 300 upstream tools through
awf-mcp's discovery: it is offered the built-ins and the search, not 300 definitions; the model
finds the tool with ``awf_find_tools`` and runs it with ``awf_call_tool``, and the upstream's
answer reaches it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import Workspace, agent_binary, assert_round_trip, gemini, setup_gemini

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

MANY = Path(__file__).resolve().parents[1] / "upstreams" / "many_upstream.py"


def test_gemini_cli_calls_one_of_300_upstream_tools_through_the_search(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("gemini")
    config = workspace.home / "awf-many.toml"  # the user's own config, outside the project
    config.write_text(f"[servers.many]\ncommand = {sys.executable!r}\nargs = [{str(MANY)!r}]\n")
    fake_model.scenario = Scenario(
        tool="awf_find_tools",
        arguments={"query": "weather forecast"},
        then=("awf_call_tool", {"name": "many_op_1", "arguments": {"city": "Lyon"}}),
    )
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=("--config", str(config)))
    done = gemini(workspace, env)
    assert_round_trip(done, fake_model, 'op_1 ran: {"city": "Lyon"}')  # the upstream's own name
    found = fake_model.tool_results()[0]  # what the search answered the model
    assert "many_op_1: Look up the weather forecast" in found, found
    offered = max((e.tool_names for e in fake_model.exchanges if e.tool_names), key=len)
    awf = [name for name in offered if "awf" in name.lower()]
    assert len(awf) < 20 and any(name.endswith("awf_find_tools") for name in awf), awf  # not 300 definitions
