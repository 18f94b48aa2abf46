"""A real agent (Claude Code, offline against the fake model) calls an upstream server's tool through awf-mcp.

The project's ``awf-mcp.toml`` lists mcp-server-time (PyPI, the test extra) under
``[servers.time]``; ``awf-mcp config claude --write`` gives Claude Code the single awf
entry; the fake model calls ``time_get_current_time`` and must receive the upstream's answer.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import Workspace, agent_binary, assert_round_trip, awf_config, claude, claude_env

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]


def test_claude_code_calls_an_upstream_tool_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    time_server = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert time_server, "mcp-server-time is not installed: pip install -e '.[test]'"
    config = workspace.project / "awf-mcp.toml"
    config.write_text(f'[servers.time]\ncommand = "{time_server}"\nargs = ["--local-timezone", "UTC"]\n')
    fake_model.scenario = Scenario(tool="time_get_current_time", arguments={"timezone": "Europe/Paris"})
    accepted = {"projects": {str(workspace.project): {"hasTrustDialogAccepted": True}}}
    (workspace.home / ".claude.json").write_text(json.dumps(accepted), encoding="utf-8")
    env = claude_env(workspace, fake_model)
    awf_config(
        "claude", workspace, env, "--trust", "all", serve=("--only", "time_*", "--config", str(config))
    )
    assert_round_trip(claude(workspace, env), fake_model, "Europe/Paris")
