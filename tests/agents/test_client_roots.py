"""The sandbox follows the agent's roots: a directory added to the agent is readable through awf-mcp.

``awf-mcp serve`` is configured without ``--root`` (its default would be the project
directory). Claude Code is started with ``--add-dir OTHER`` and answers the server's
``roots/list`` inside an ``input_required`` result (it speaks the stateless revision);
Gemini CLI is started with ``--include-directories OTHER`` and answers ``roots/list`` on
the back-channel. Either way the Read of a file in OTHER succeeds, and a file outside
every root stays refused.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import (
    Workspace,
    agent_binary,
    assert_round_trip,
    explain,
    run_agent,
    setup_claude,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

PROMPT = "Use the awf tool as instructed and report its result."
SERVE = ("--only", "Read")


def other_directory(ws: Workspace) -> tuple[Path, str]:
    other = ws.project.parent / "other"
    other.mkdir(exist_ok=True)
    secret = f"OTHER-{uuid.uuid4().hex}"
    (other / "other.txt").write_text(secret + "\n", encoding="utf-8")
    return other, secret


def outside_file(ws: Workspace) -> tuple[Path, str]:
    outside = ws.project.parent / "outside"
    outside.mkdir(exist_ok=True)
    secret = f"OUTSIDE-{uuid.uuid4().hex}"
    (outside / "secret.txt").write_text(secret + "\n", encoding="utf-8")
    return outside / "secret.txt", secret


def read(model: FakeModel, path: Path) -> None:
    model.scenario = Scenario(tool="Read", arguments={"path": str(path)})


def claude_with(ws: Workspace, env: dict[str, str], other: Path) -> object:
    argv = [agent_binary("claude"), "-p", PROMPT, "--output-format", "text", "--add-dir", str(other)]
    return run_agent(argv, ws, env)


def gemini_with(ws: Workspace, env: dict[str, str], other: Path) -> object:
    return run_agent([agent_binary("gemini"), "-p", PROMPT, "--include-directories", str(other)], ws, env)


def test_claude_code_add_dir_is_readable(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    other, secret = other_directory(workspace)
    read(fake_model, other / "other.txt")
    env = setup_claude(workspace, fake_model, "--trust", "all", serve=SERVE)
    assert_round_trip(claude_with(workspace, env, other), fake_model, secret)  # type: ignore[arg-type]


def test_claude_code_outside_every_root_is_refused(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("claude")
    other, _ = other_directory(workspace)
    path, secret = outside_file(workspace)
    read(fake_model, path)
    env = setup_claude(workspace, fake_model, "--trust", "all", serve=SERVE)
    done = claude_with(workspace, env, other)
    results = fake_model.tool_results()
    why = explain(done, fake_model)  # type: ignore[arg-type]
    assert results and any("outside" in result for result in results), why
    assert not any(secret in result for result in results), why


def test_gemini_cli_include_directories_is_readable(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("gemini")
    other, secret = other_directory(workspace)
    read(fake_model, other / "other.txt")
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=SERVE)
    assert_round_trip(gemini_with(workspace, env, other), fake_model, secret)  # type: ignore[arg-type]


def test_gemini_cli_outside_every_root_is_refused(workspace: Workspace, fake_model: FakeModel) -> None:
    agent_binary("gemini")
    other, _ = other_directory(workspace)
    path, secret = outside_file(workspace)
    read(fake_model, path)
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=SERVE)
    done = gemini_with(workspace, env, other)
    results = fake_model.tool_results()
    why = explain(done, fake_model)  # type: ignore[arg-type]
    assert results and any("outside" in result for result in results), why
    assert not any(secret in result for result in results), why
