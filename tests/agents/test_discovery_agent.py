"""A real Gemini CLI (offline, against the fake model) reaches one of 300 upstream tools through
awf-mcp's discovery: it is offered the built-ins and the search, not 300 definitions, and its
call of ``awf_call_tool`` runs the upstream's tool, whose answer reaches the model."""

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
        tool="awf_call_tool", arguments={"name": "many_op_1", "arguments": {"city": "Lyon"}}
    )
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=("--config", str(config)))
    done = gemini(workspace, env)
    assert_round_trip(done, fake_model, 'op_1 ran: {"city": "Lyon"}')  # the upstream's own name
    offered = max((e.tool_names for e in fake_model.exchanges if e.tool_names), key=len)
    awf = [name for name in offered if "awf" in name.lower()]
    assert len(awf) < 20 and any(name.endswith("awf_find_tools") for name in awf), awf  # not 300 definitions
