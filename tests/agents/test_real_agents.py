"""Real agent CLIs (Claude Code, Gemini CLI, Codex CLI) driving ``awf-mcp serve``.

Each test configures one agent in a throw-away HOME and project directory with
exactly what ``awf-mcp config CLIENT --write --trust all`` writes, points the agent
at the loopback stand-in for its model API (:mod:`tests.agents.fake_model`), runs
it non-interactively, and checks both directions of the round trip:

* the fake model received a tool result holding the marker file's content —
  so the agent really called the tool through the awf-mcp subprocess, and
* the agent printed the model's final answer, which echoes that result.

The CLIs come from ``tests/agents/install.sh`` (pinned in package.json). Without
them these tests fail, naming the install command, unless ``AWF_MCP_SKIP_AGENTS=1``.
Nothing leaves 127.0.0.1: every agent gets a dead loopback proxy for anything
that is not the fake model, and its telemetry and update checks are switched off.
"""

from __future__ import annotations

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    assert_round_trip,
    claude,
    codex,
    explain,
    gemini,
    setup_claude,
    setup_codex,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]


def use_read(model: FakeModel) -> None:
    model.scenario = Scenario(tool="Read", arguments={"path": "marker.txt"})


def use_write(model: FakeModel, ws: Workspace) -> str:
    content = f"written through awf: {ws.marker}"
    model.scenario = Scenario(tool="Write", arguments={"path": "out/written.txt", "content": content})
    return content


# --------------------------------------------------------------------------- Claude Code


def test_claude_code_reads_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    use_read(fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all")
    assert_round_trip(claude(workspace, env), fake_model, workspace.marker)


def test_claude_code_writes_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    content = use_write(fake_model, workspace)
    env = setup_claude(workspace, fake_model, "--trust", "all")
    done = claude(workspace, env)
    assert_round_trip(done, fake_model, "out/written.txt")
    written = workspace.project / "out" / "written.txt"
    assert written.read_text(encoding="utf-8") == content, explain(done, fake_model)


def test_claude_code_refuses_write_without_trust(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    use_write(fake_model, workspace)
    env = setup_claude(workspace, fake_model, "--trust", "read-only")
    done = claude(workspace, env)
    why = explain(done, fake_model)
    assert "tool_call" in fake_model.answers(), why
    results = fake_model.tool_results()
    assert results and all("out/written.txt" not in r or "permission" in r.lower() for r in results), why
    assert not (workspace.project / "out" / "written.txt").exists(), why


# --------------------------------------------------------------------------- Gemini CLI
# --------------------------------------------------------------------------- Gemini CLI


def test_gemini_cli_reads_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("gemini")
    use_read(fake_model)
    env = setup_gemini(workspace, fake_model, "--trust", "all")
    assert_round_trip(gemini(workspace, env), fake_model, workspace.marker)


def test_gemini_cli_read_only_trust_runs_read(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("gemini")
    use_read(fake_model)
    env = setup_gemini(workspace, fake_model, "--trust", "read-only")
    assert_round_trip(gemini(workspace, env), fake_model, workspace.marker)


# --------------------------------------------------------------------------- Codex CLI
# --------------------------------------------------------------------------- Codex CLI


def test_codex_cli_reads_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("codex")
    use_read(fake_model)
    env = setup_codex(workspace, fake_model, "--trust", "all")
    assert_round_trip(codex(workspace, env), fake_model, workspace.marker)


def test_codex_cli_writes_through_awf(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("codex")
    content = use_write(fake_model, workspace)
    env = setup_codex(workspace, fake_model, "--trust", "all")
    done = codex(workspace, env)
    assert_round_trip(done, fake_model, "out/written.txt")
    written = workspace.project / "out" / "written.txt"
    assert written.read_text(encoding="utf-8") == content, explain(done, fake_model)


def test_codex_cli_without_trust_does_not_write(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("codex")
    use_write(fake_model, workspace)
    env = setup_codex(workspace, fake_model)
    done = codex(workspace, env)
    why = explain(done, fake_model)
    assert "tool_call" in fake_model.answers(), why
    # Codex answers the call itself ("... requires approval, but approval policy is never").
    assert any("approval" in result for result in fake_model.tool_results()), why
    assert not (workspace.project / "out" / "written.txt").exists(), why
