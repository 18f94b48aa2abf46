"""Claude Code (offline against the fake model) sees a tool appear in the middle of its session.

The project's ``awf-mcp.toml`` serves tests/upstreams/changing_upstream.py; the fake model has
Claude Code call its ``grow`` tool, which adds ``chg_extra`` and answers a second later. awf-mcp
re-merges and tells Claude Code (on the 2026-07-28 revision, through the ``subscriptions/listen``
stream Claude Code opens); Claude Code lists the tools again, so its next request to the model,
the one carrying the call's result, offers the new tool. Claude Code's first request did not.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    assert_round_trip,
    awf_config,
    claude,
    claude_env,
    explain,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

CHANGING = Path(__file__).resolve().parents[1] / "upstreams" / "changing_upstream.py"
NEW_TOOL = "mcp__awf__chg_extra"


def test_claude_code_is_offered_a_tool_that_appeared_mid_session(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    config = workspace.project / "awf-mcp.toml"
    config.write_text(f'[servers.chg]\ncommand = "{sys.executable}"\nargs = ["{CHANGING}"]\npin = false\n')
    fake_model.scenario = Scenario(tool="chg_grow", arguments={"name": "extra", "linger": 2})
    accepted = {"projects": {str(workspace.project): {"hasTrustDialogAccepted": True}}}
    (workspace.home / ".claude.json").write_text(json.dumps(accepted), encoding="utf-8")
    env = claude_env(workspace, fake_model)
    awf_config("claude", workspace, env, "--trust", "all", serve=("--only", "chg_*", "--config", str(config)))
    done = claude(workspace, env)
    assert_round_trip(done, fake_model, "ok")
    offered = [(exchange.answer, exchange.tool_names) for exchange in fake_model.exchanges]
    call = next(names for answer, names in offered if answer == "tool_call")
    final = next(names for answer, names in offered if answer == "final")
    assert NEW_TOOL not in call, explain(done, fake_model)
    assert NEW_TOOL in final, explain(done, fake_model)
