"""``awf-mcp config CLIENT --write --replace-native`` against the real agent CLIs.

For each agent the same run is made twice in fresh workspaces, once configured with
``--trust all`` alone and once with ``--replace-native`` as well, and the test looks at
what matters: the list of tools the agent offered its model (recorded by the stand-in
model, :mod:`tests.agents.fake_model`). Without the setting the agent's own file and
shell tools are there; with it they are gone, the awf tools are still there, and the
awf Read still works end to end. ``--restore-native`` brings the own tools back.

Gemini CLI runs with ``--approval-mode yolo`` here: in its default headless mode it
never offers the tools that need a confirmation (``write_file``, ``replace``,
``run_shell_command``), so only yolo shows that the setting removes those too.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from awf_mcp.clients.clientprofiles import CLAUDE_NATIVE_TOOLS, GEMINI_NATIVE_TOOLS
from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    assert_round_trip,
    claude,
    codex,
    explain,
    run_agent,
    setup_claude,
    setup_codex,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(900)]

#: Of the tools the setting names, those these versions offer by default (Claude Code has
#: Glob and Grep but offers them only in builds without its embedded search; Gemini CLI
#: offers read_many_files only when asked to). Without the setting each must be offered.
CLAUDE_OFFERED = set(CLAUDE_NATIVE_TOOLS) - {"Glob", "Grep"}
GEMINI_OFFERED = set(GEMINI_NATIVE_TOOLS) - {"read_many_files"}
#: Codex's own shell and image tools, as the model sees them (the feature switches' effect).
CODEX_NATIVE_TOOLS = ("exec_command", "write_stdin", "view_image")


def offered(model: FakeModel) -> set[str]:
    """Every tool name the agent offered its model, over all requests of the run."""
    return {name for exchange in model.exchanges for name in exchange.tool_names}


def use_read(model: FakeModel) -> None:
    model.scenario = Scenario(tool="Read", arguments={"path": "marker.txt"})


def restore(client: str, ws: Workspace, env: dict[str, str], *extra: str) -> str:
    command = [sys.executable, "-m", "awf_mcp", "config", client, "--restore-native", *extra]
    done = subprocess.run(command, cwd=ws.project, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"--restore-native failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def gemini_yolo(ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prompt = "Use the awf tool as instructed and report its result."
    return run_agent([agent_binary("gemini"), "-p", prompt, "--approval-mode", "yolo"], ws, env)


# --------------------------------------------------------------------------- Claude Code


def test_claude_code_offers_its_own_tools_without_the_setting(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    use_read(fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all")
    done = claude(workspace, env)
    assert_round_trip(done, fake_model, workspace.marker)
    tools = offered(fake_model)
    assert tools >= CLAUDE_OFFERED, explain(done, fake_model)


def test_claude_code_replace_native_removes_its_own_tools_and_restore_brings_them_back(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    use_read(fake_model)
    env = setup_claude(workspace, fake_model, "--trust", "all", "--replace-native")
    done = claude(workspace, env)
    why = explain(done, fake_model)
    assert_round_trip(done, fake_model, workspace.marker)
    tools = offered(fake_model)
    assert not tools & set(CLAUDE_NATIVE_TOOLS), why
    assert {"mcp__awf__Read", "mcp__awf__Write"} <= tools, why
    # Every deny rule names a tool Claude Code knows.
    assert "matches no known tool" not in done.stderr, why

    restore("claude", workspace, env)
    fake_model.exchanges.clear()
    done = claude(workspace, env)
    assert offered(fake_model) >= CLAUDE_OFFERED, explain(done, fake_model)


# --------------------------------------------------------------------------- Gemini CLI


def test_gemini_cli_offers_its_own_tools_without_the_setting(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("gemini")
    use_read(fake_model)
    env = setup_gemini(workspace, fake_model, "--trust", "all")
    done = gemini_yolo(workspace, env)
    assert_round_trip(done, fake_model, workspace.marker)
    assert offered(fake_model) >= GEMINI_OFFERED, explain(done, fake_model)


def test_gemini_cli_replace_native_removes_its_own_tools_and_restore_brings_them_back(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("gemini")
    use_read(fake_model)
    env = setup_gemini(workspace, fake_model, "--trust", "all", "--replace-native")
    done = gemini_yolo(workspace, env)
    why = explain(done, fake_model)
    assert_round_trip(done, fake_model, workspace.marker)
    tools = offered(fake_model)
    assert not tools & set(GEMINI_NATIVE_TOOLS), why
    assert {"mcp_awf_Read", "mcp_awf_Write"} <= tools, why

    restore("gemini", workspace, env)
    fake_model.exchanges.clear()
    done = gemini_yolo(workspace, env)
    assert offered(fake_model) >= GEMINI_OFFERED, explain(done, fake_model)


# --------------------------------------------------------------------------- Codex CLI


def test_codex_cli_offers_its_own_tools_without_the_setting(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("codex")
    use_read(fake_model)
    env = setup_codex(workspace, fake_model, "--trust", "all")
    done = codex(workspace, env)
    assert_round_trip(done, fake_model, workspace.marker)
    assert set(CODEX_NATIVE_TOOLS) <= offered(fake_model), explain(done, fake_model)


def test_codex_cli_replace_native_removes_its_own_tools_and_restore_brings_them_back(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("codex")
    use_read(fake_model)
    env = setup_codex(workspace, fake_model, "--trust", "all", "--replace-native")
    done = codex(workspace, env)
    why = explain(done, fake_model)
    assert_round_trip(done, fake_model, workspace.marker)
    tools = offered(fake_model)
    assert not tools & set(CODEX_NATIVE_TOOLS), why
    assert {"mcp__awf__Read", "mcp__awf__Write"} <= tools, why

    config = workspace.home / "codex-home" / "config.toml"
    # The user's own feature switches stay where they were.
    assert "plugins = false  # no curated-plugin sync\n" in config.read_text(encoding="utf-8")
    restore("codex", workspace, env, "--scope", "user")
    assert "shell_tool" not in config.read_text(encoding="utf-8")
    fake_model.exchanges.clear()
    done = codex(workspace, env)
    assert set(CODEX_NATIVE_TOOLS) <= offered(fake_model), explain(done, fake_model)
