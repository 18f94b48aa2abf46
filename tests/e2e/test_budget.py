"""Output budgets end to end: each client's default, the override, both protocol revisions, instructions.

The budget is read from the client's ``clientInfo.name``: from ``initialize``, or from each
request's ``_meta`` on the stateless revision (Claude Code). ``testkit_big`` returns as much
text as asked, so the server, not the tool, must size the result.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from awf_mcp import budget
from tests.helpers.harness import mcp_session, text_of

pytestmark = [pytest.mark.anyio, pytest.mark.e2e, pytest.mark.usefixtures("testkit")]


def utf8_size(result: object) -> int:
    return len(text_of(result).encode())


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("claude-code", 40_000),
        ("gemini-cli-mcp-client", 32_000),
        ("codex-mcp-client", 10_000),
        ("some-agent-nobody-measured", budget.DEFAULT_BUDGET),
    ],
)
async def test_a_plugin_result_is_cut_to_the_clients_budget_with_one_note(
    root: Path, client: str, expected: int
) -> None:
    async with mcp_session("--root", str(root), client_name=client) as session:
        result = await session.call_tool("testkit_big", {"size": 200_000})
    assert not result.is_error
    assert expected - 1_000 < utf8_size(result) <= expected
    note = result.content[-1].text
    assert note.startswith("[awf-mcp: output cut to") and f"{expected:,} bytes" in note
    assert text_of(result).count("[awf-mcp:") == 1


async def test_a_result_within_the_budget_arrives_whole(root: Path) -> None:
    async with mcp_session("--root", str(root), client_name="codex-mcp-client") as session:
        result = await session.call_tool("testkit_big", {"size": 10_000})
    assert text_of(result) == "x" * 10_000


async def test_output_budget_overrides_every_clients_default(root: Path) -> None:
    async with mcp_session(
        "--root", str(root), "--output-budget", "4000", client_name="claude-code"
    ) as session:
        result = await session.call_tool("testkit_big", {"size": 200_000})
    assert 3_000 < utf8_size(result) <= 4_000


async def test_the_stateless_revision_takes_the_client_from_each_request(root: Path) -> None:
    async with mcp_session("--root", str(root), client_name="codex-mcp-client", stateless=True) as session:
        assert session.discover_result is not None and session.initialize_result is None
        result = await session.call_tool("testkit_big", {"size": 200_000})
    assert 9_000 < utf8_size(result) <= 10_000


@pytest.mark.parametrize("stateless", [False, True])
async def test_instructions_state_the_roots_and_the_budget(root: Path, stateless: bool) -> None:
    async with mcp_session("--root", str(root), stateless=stateless) as session:
        opened = session.discover_result if stateless else session.initialize_result
        assert opened is not None
        instructions = opened.instructions or ""
    assert str(root) in instructions
    assert "[awf-mcp: ...]" in instructions and "offset" in instructions
    assert "run_in_background" in instructions and "BashOutput" in instructions


async def test_a_bad_output_budget_is_a_clear_start_up_error(root: Path) -> None:
    import subprocess

    from tests.helpers.harness import server_command, server_env

    done = subprocess.run(
        server_command("serve", "--root", str(root), "--output-budget", "12"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
    )
    assert done.returncode == 1
    assert "--output-budget must be a whole number of bytes from 1,000" in done.stderr


def test_tools_list_json_states_the_budget_rules(root: Path) -> None:
    import json
    import subprocess

    from tests.helpers.harness import server_command, server_env

    done = subprocess.run(
        server_command("tools", "list", "--json", "--root", str(root)),
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=True,
    )
    rules = json.loads(done.stdout)["output_budget"]
    assert rules["by_client"]["codex-mcp-client"] == 10_000 and rules["default"] == budget.DEFAULT_BUDGET
    assert rules["configured"] is None and "[awf-mcp: ...]" in rules["shortening"]
