"""Confirmations with the real agents: the guard's ``ask_bash`` question reaches each of them.

``awf-mcp serve --only Bash`` with ``ask_bash = ['\\btouch\\b']`` (in the project's
``awf-mcp.toml``); the fake model asks for ``touch made.txt``. What each agent does with
the question:

* Claude Code (stateless revision: the question is an ``input_required`` result) shows it
  to an ``Elicitation`` hook when one is configured, which answers for the user; in
  ``-p`` mode without one it answers ``cancel``.
* Codex (``elicitation/create`` on the back-channel) declines in ``codex exec``.
* Gemini CLI declares no elicitation: the call is denied with the reason.

In every case but the hook's yes, ``made.txt`` is never created.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    claude,
    codex,
    explain,
    gemini,
    setup_claude,
    setup_codex,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

SERVE = ("--only", "Bash")


def ask_about_touch(ws: Workspace, model: FakeModel) -> Path:
    (ws.project / "awf-mcp.toml").write_text(
        "[plugins.guard]\nask_bash = ['\\btouch\\b']\n", encoding="utf-8"
    )
    # The project's file is inert until the user approves it, as they would once.
    subprocess.run(
        [sys.executable, "-m", "awf_mcp", "trust", "--yes"], cwd=ws.project, env=ws.base_env(), check=True
    )
    model.scenario = Scenario(tool="Bash", arguments={"command": "touch made.txt"})
    return ws.project / "made.txt"


def audited_claude(ws: Workspace) -> Path:
    """Add ``--audit-log`` to the awf entry ``awf-mcp config claude --write`` wrote."""
    audit = ws.home / "audit.jsonl"
    config_path = ws.project / ".mcp.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["mcpServers"]["awf"]["args"] += ["--audit-log", str(audit)]
    config_path.write_text(json.dumps(config), encoding="utf-8")
    return audit


def elicitation_hook(ws: Workspace, action: str, content: dict[str, object] | None) -> None:
    """A Claude Code ``Elicitation`` hook answering every awf question with ``action``."""
    output: dict[str, object] = {"hookEventName": "Elicitation", "action": action}
    if content is not None:
        output["content"] = content
    answer = ws.home / "answer.json"
    answer.write_text(json.dumps({"hookSpecificOutput": output}), encoding="utf-8")
    settings_path = ws.project / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text(encoding="utf-8"))
    settings["hooks"] = {
        "Elicitation": [{"matcher": "awf", "hooks": [{"type": "command", "command": f"cat {answer}"}]}]
    }
    settings_path.write_text(json.dumps(settings), encoding="utf-8")


def confirmation(audit: Path) -> dict[str, str]:
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 1, records
    answer: dict[str, str] = records[0]["confirmation"]
    return answer


def test_claude_code_hook_says_yes_and_the_command_runs(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    made = ask_about_touch(workspace, fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all", serve=SERVE)
    audit = audited_claude(workspace)
    elicitation_hook(workspace, "accept", {"allow": True})
    done = claude(workspace, env)
    why = explain(done, fake_model)
    assert made.exists(), why
    asked = confirmation(audit)
    assert asked["answer"] == "yes" and "touch made.txt" in asked["question"], asked


def test_claude_code_hook_says_no(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    made = ask_about_touch(workspace, fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all", serve=SERVE)
    audit = audited_claude(workspace)
    elicitation_hook(workspace, "accept", {"allow": False})
    done = claude(workspace, env)
    why = explain(done, fake_model)
    assert not made.exists(), why
    assert any("declined the call of Bash" in result for result in fake_model.tool_results()), why
    assert confirmation(audit)["answer"] == "no"


def test_claude_code_print_mode_without_a_hook_cancels(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    made = ask_about_touch(workspace, fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all", serve=SERVE)
    audit = audited_claude(workspace)
    done = claude(workspace, env)
    why = explain(done, fake_model)
    assert not made.exists(), why
    assert any("cancelled the call of Bash" in result for result in fake_model.tool_results()), why
    assert confirmation(audit)["answer"] == "cancel"


def test_codex_exec_declines(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("codex")
    made = ask_about_touch(workspace, fake_model)
    env = setup_codex(workspace, fake_model, "--trust", "all", serve=SERVE)
    done = codex(workspace, env)
    why = explain(done, fake_model)
    assert not made.exists(), why
    assert any("declined the call of Bash" in result for result in fake_model.tool_results()), why


def test_gemini_cli_cannot_ask_and_is_told_why(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("gemini")
    made = ask_about_touch(workspace, fake_model)
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=SERVE)
    done = gemini(workspace, env)
    why = explain(done, fake_model)
    assert not made.exists(), why
    assert any("does not support MCP elicitation" in result for result in fake_model.tool_results()), why
