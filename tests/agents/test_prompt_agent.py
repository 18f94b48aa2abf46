"""Real agents (offline, against the fake model) get an upstream's prompts and resources through awf-mcp.

``tests/upstreams/changing_upstream.py`` (the SDK's own server) offers the prompt ``greet``
(argument ``who``); behind the single awf entry it is ``chg_greet``, which Claude Code runs as
the slash command ``/mcp__awf__chg_greet``. The prompt's text must reach the model as the user's
message, and the resource tools Claude Code offers only when a server has resources must be there.
Gemini CLI runs the same prompt as ``/chg_greet`` in its non-interactive mode; Codex runs no MCP
prompt (a slash line is text to it), but its model reads resources with ``read_mcp_resource``.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    assert_round_trip,
    awf_config,
    claude,
    claude_env,
    codex,
    explain,
    run_agent,
    setup_codex,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

CHANGING = Path(__file__).resolve().parents[1] / "upstreams" / "changing_upstream.py"


def changing_config(workspace: Workspace) -> Path:
    """The user's own ``awf-mcp.toml`` (outside the project) serving the changing upstream as ``chg``."""
    config = workspace.home / "awf-mcp.toml"
    config.write_text(
        f'[servers.chg]\ncommand = "{sys.executable}"\nargs = ["{CHANGING}"]\npin = false\n', encoding="utf-8"
    )
    return config


def under_test(env: dict[str, str]) -> None:
    """Point ``env`` at the awf-mcp under test, when it is not the installed one."""
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]


def texts(value: Any) -> list[str]:
    """Every string inside ``value`` (a request body)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in texts(item)]
    if isinstance(value, list):
        return [text for item in value for text in texts(item)]
    return []


def test_claude_code_brings_an_upstream_prompt_to_the_model(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    config = changing_config(workspace)
    fake_model.scenario = Scenario(tool="no-such-tool")  # the model calls nothing: it answers "ok"
    accepted = {"projects": {str(workspace.project): {"hasTrustDialogAccepted": True}}}
    (workspace.home / ".claude.json").write_text(json.dumps(accepted), encoding="utf-8")
    env = claude_env(workspace, fake_model)
    under_test(env)
    awf_config("claude", workspace, env, serve=("--config", str(config)))
    done = run_agent(
        [agent_binary("claude"), "-p", "/mcp__awf__chg_greet Ada", "--output-format", "text"], workspace, env
    )
    why = explain(done, fake_model)
    assert done.returncode == 0, why
    sent = [text for exchange in fake_model.exchanges for text in texts(exchange.body.get("messages"))]
    assert any("Hello, Ada!" in text for text in sent), "the prompt's text never reached the model\n" + why
    offered = {name for exchange in fake_model.exchanges for name in exchange.tool_names}
    assert {"ListMcpResourcesTool", "ReadMcpResourceTool"} <= offered, why


def test_claude_codes_model_reads_an_upstream_resource_through_read_mcp_resource_tool(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    config = changing_config(workspace)
    fake_model.scenario = Scenario(
        tool="ReadMcpResourceTool", server="", arguments={"server": "awf", "uri": "note://fixed"}
    )
    accepted = {"projects": {str(workspace.project): {"hasTrustDialogAccepted": True}}}
    (workspace.home / ".claude.json").write_text(json.dumps(accepted), encoding="utf-8")
    env = claude_env(workspace, fake_model)
    under_test(env)
    awf_config("claude", workspace, env, "--trust", "all", serve=("--config", str(config)))
    assert_round_trip(claude(workspace, env), fake_model, "the text of note://fixed")


def test_gemini_cli_runs_an_upstream_prompt_in_non_interactive_mode(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("gemini")
    config = changing_config(workspace)
    fake_model.scenario = Scenario(tool="no-such-tool")
    env = setup_gemini(workspace, fake_model, serve=("--config", str(config)))
    under_test(env)
    done = run_agent([agent_binary("gemini"), "-p", "/chg_greet Ada"], workspace, env)
    why = explain(done, fake_model)
    assert done.returncode == 0, why
    sent = [text for exchange in fake_model.exchanges for text in texts(exchange.body)]
    assert any("Hello, Ada!" in text for text in sent), "the prompt's text never reached the model\n" + why


def test_codex_model_reads_an_upstream_resource_through_read_mcp_resource(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("codex")
    config = changing_config(workspace)
    fake_model.scenario = Scenario(
        tool="read_mcp_resource", server="", arguments={"server": "awf", "uri": "note://fixed"}
    )
    env = setup_codex(workspace, fake_model, "--trust", "all", serve=("--config", str(config)))
    if os.environ.get("PYTHONPATH"):  # Codex starts MCP servers with its own environment: say it there
        settings = workspace.home / "codex-home" / "config.toml"
        shown = json.dumps(os.environ["PYTHONPATH"])
        text = settings.read_text(encoding="utf-8")
        settings.write_text(
            text.replace("[mcp_servers.awf]\n", f"[mcp_servers.awf]\nenv = {{ PYTHONPATH = {shown} }}\n", 1),
            encoding="utf-8",
        )
    assert_round_trip(codex(workspace, env), fake_model, "the text of note://fixed")
