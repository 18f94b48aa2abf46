"""What reaches the model when a result is large: awf-mcp's own cut, never the agent's.

Each case of the results table in docs/budgets.md, with each real agent: the tool result the
agent forwards to its model carries no truncation or persistence marker of the agent, does
carry awf-mcp's note when something was left out, and following the note (the next Read
offset, the Grep offset) returns the rest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.budget import budget_for_client
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

SERVE = ("--only", "Read", "--only", "Bash", "--only", "Grep")
#: What each agent writes when it cuts or stores away a result itself.
CLIENT_MARKERS = (
    "persisted-output",
    "exceeds maximum allowed tokens",
    "has been saved",
    "characters omitted",
    "tokens truncated",
)
AGENTS: dict[str, tuple[str, Callable[..., dict[str, str]], Callable[..., Any]]] = {
    "claude": ("claude-code", setup_claude, claude),
    "gemini": ("gemini-cli-mcp-client", setup_gemini, gemini),
    "codex": ("codex-mcp-client", setup_codex, codex),
}


def wide_file(project: Path) -> None:
    (project / "wide.txt").write_text("".join(f"{n:06d} " + "w" * 183 + "\n" for n in range(3000)))


def minified_file(project: Path) -> None:
    (project / "app.min.js").write_text("".join(f"var v{n}=[{n},{n + 1}];" for n in range(40_000)))


def matching_file(project: Path) -> None:
    (project / "log.txt").write_text("".join(f"match {n:05d} " + "m" * 190 + "\n" for n in range(3000)))


CASES: dict[str, tuple[Callable[[Path], None] | None, str, dict[str, Any]]] = {
    "bash-seq": (None, "Bash", {"command": "seq 1 300000"}),
    "bash-short-lines": (None, "Bash", {"command": "seq 1 5000"}),
    "read-wide": (wide_file, "Read", {"path": "wide.txt"}),
    "read-minified": (minified_file, "Read", {"path": "app.min.js"}),
    "grep-many": (matching_file, "Grep", {"pattern": "^match", "path": "log.txt"}),
}


def awf_call(project: Path, client: str, tool: str, arguments: dict[str, Any]) -> str:
    """``awf-mcp tools call`` with the client's budget: what following a note returns."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "awf_mcp",
            "tools",
            "call",
            tool,
            json.dumps(arguments),
            "--json",
            "--output-budget",
            str(budget_for_client(client)),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return "".join(item.get("text", "") for item in json.loads(done.stdout)["content"])


def follow_note(case: str, result: str, project: Path, client: str) -> None:
    """Take the note's offset and check the next page starts where this one stopped."""
    note = result[result.rindex("[awf-mcp:") :]
    if case == "read-wide":
        offset = int(note.split("offset=")[1].split()[0])
        page = awf_call(project, client, "Read", {"path": "wide.txt", "offset": offset})
        assert page.startswith(f"{offset:06d} w"), page[:80]
    elif case == "read-minified":
        column = int(note.split("column=")[1].split()[0]) if "column=" in note else None
        assert column is not None, note
        page = awf_call(project, client, "Read", {"path": "app.min.js", "offset": 0, "column": column})
        line = (project / "app.min.js").read_text()
        assert page.startswith(line[column : column + 100])
    elif case == "grep-many":
        offset = int(note.split("offset=")[1].split()[0])
        page = awf_call(project, client, "Grep", {"pattern": "^match", "path": "log.txt", "offset": offset})
        assert page.startswith(f"log.txt:{offset + 1}:match {offset:05d}"), page[:80]
    else:
        assert " is in /" in note and "offset=" in note, note


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("agent", sorted(AGENTS))
def test_large_results_reach_the_model_cut_by_awf_not_by_the_agent(
    agent: str, case: str, workspace: Workspace, fake_model: FakeModel
) -> None:
    client, setup, run = AGENTS[agent]
    agent_binary(agent)
    prepare, tool, arguments = CASES[case]
    if prepare is not None:
        prepare(workspace.project)
    fake_model.scenario = Scenario(tool=tool, arguments=arguments)
    env = setup(workspace, fake_model, "--trust", "all", serve=SERVE)
    done = run(workspace, env)
    why = explain(done, fake_model)
    results = fake_model.tool_results()
    assert results, "the model never received the tool's result\n" + why
    result = results[0]
    assert not [marker for marker in CLIENT_MARKERS if marker in result], why
    assert len(result.encode()) <= budget_for_client(client) + 200, why
    if case == "bash-short-lines" and client != "codex-mcp-client":
        assert "\n1\n2\n3\n" in result and "\n4999\n5000" in result and "[awf-mcp:" not in result, why
        return
    assert "[awf-mcp:" in result, why
    follow_note(case, result, workspace.project, client)
