"""Real agent CLIs (Claude Code, Gemini CLI, Codex CLI) reaching a team gateway with a named token.

``awf-mcp serve --transport http --token-file TOKENS --audit-log AUDIT`` runs on loopback as a
subprocess; each agent is set up as a user sets it up for a gateway, with ``awf-mcp config
CLIENT --write --trust all --url URL --token-env AWF_GATEWAY_TOKEN``, and the token in that
variable. The entry names the variable, never the token:

* Claude Code, ``.mcp.json``: ``{"type": "http", "url": URL, "headers": {"Authorization":
  "Bearer ${AWF_GATEWAY_TOKEN}"}}``, expanded by Claude Code;
* Gemini CLI, ``.gemini/settings.json``: ``{"httpUrl": URL, "headers": {...}, "trust": true}``,
  the same header, expanded by Gemini CLI;
* Codex CLI, ``config.toml``: ``url = URL`` and ``bearer_token_env_var = "AWF_GATEWAY_TOKEN"``.

With the token from the file, the fake model calls ``Read`` of the marker file: the marker
must reach the model, and the audit record of that call must name the token's name as its
caller. With a token the gateway does not know, the gateway refuses the agent (it logs the
refusal), the model is never offered an awf tool, and nothing is audited; Codex then stops
with the gateway's sentence, Claude Code and Gemini CLI carry on without the awf tools and
exit 0 (docs/clients/ says so).
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from tests.e2e.test_http import start_http, stop

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]

TOKEN_NAME = "team-ci"
TOKEN_VARIABLE = "AWF_GATEWAY_TOKEN"


@dataclass
class Gateway:
    """A running ``serve --transport http`` with one named token and an audit log."""

    url: str
    token: str
    audit: Path
    process: subprocess.Popen[bytes]

    def records(self) -> list[dict[str, Any]]:
        if not self.audit.exists():
            return []
        return [json.loads(line) for line in self.audit.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture
def gateway(tmp_path: Path, workspace: Workspace) -> Iterator[Gateway]:
    token = secrets.token_urlsafe(32)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the team's gateway\n{TOKEN_NAME} {token}\n", encoding="utf-8")
    tokens.chmod(0o600)
    audit = tmp_path / "audit.jsonl"
    url, process = start_http(
        "--token-file",
        str(tokens),
        "--audit-log",
        str(audit),
        "--root",
        str(workspace.project),
        "--only",
        "Read",
        cwd=workspace.project,
    )
    server = Gateway(url, token, audit, process)
    try:
        yield server
    finally:
        if process.poll() is None:
            stop(process)


@dataclass
class Agent:
    binary: str
    setup: Callable[..., dict[str, str]]
    run: Callable[[Workspace, dict[str, str]], subprocess.CompletedProcess[str]]
    #: Refused by the gateway, the agent stops with the gateway's sentence (Codex: the server
    #: is ``required``) instead of carrying on without the awf tools (Claude Code, Gemini CLI).
    refusal_stops_the_run: bool


AGENTS = {
    "claude-code": Agent("claude", setup_claude, claude, refusal_stops_the_run=False),
    "gemini-cli": Agent("gemini", setup_gemini, gemini, refusal_stops_the_run=False),
    "codex-cli": Agent("codex", setup_codex, codex, refusal_stops_the_run=True),
}


def read_the_marker(
    agent: Agent, gateway: Gateway, ws: Workspace, model: FakeModel, token: str
) -> subprocess.CompletedProcess[str]:
    """Set AGENT up for the gateway, TOKEN in its variable, --trust all; the model Reads the marker."""
    agent_binary(agent.binary)
    model.scenario = Scenario(tool="Read", arguments={"path": "marker.txt"})
    remote = ("--url", gateway.url, "--token-env", TOKEN_VARIABLE)
    env = agent.setup(ws, model, "--trust", "all", *remote, serve=())
    env[TOKEN_VARIABLE] = token
    return agent.run(ws, env)


@pytest.mark.parametrize("name", AGENTS)
def test_a_named_token_reaches_the_model_and_the_audit_names_it(
    name: str, gateway: Gateway, workspace: Workspace, fake_model: FakeModel
) -> None:
    done = read_the_marker(AGENTS[name], gateway, workspace, fake_model, gateway.token)
    assert_round_trip(done, fake_model, workspace.marker)
    reads = [record for record in gateway.records() if record["tool"] == "Read"]
    why = explain(done, fake_model) + f"\n--- audit\n{gateway.records()}"
    assert reads, "the gateway audited no Read\n" + why
    assert all(record["arguments"] == {"path": "marker.txt"} for record in reads), why
    assert all(record["caller"] == {"kind": "token", "token_name": TOKEN_NAME} for record in reads), why
    assert gateway.token not in gateway.audit.read_text(encoding="utf-8")


@pytest.mark.parametrize("name", AGENTS)
def test_a_wrong_token_gets_the_model_no_tool_and_audits_nothing(
    name: str, gateway: Gateway, workspace: Workspace, fake_model: FakeModel
) -> None:
    agent = AGENTS[name]
    wrong = secrets.token_urlsafe(32)
    done = read_the_marker(agent, gateway, workspace, fake_model, wrong)
    stderr = stop(gateway.process)
    why = explain(done, fake_model) + f"\n--- gateway\n{stderr[-4000:]}"
    assert "tool_call" not in fake_model.answers(), why
    assert not any(fake_model.pick_tool(exchange.tool_names) for exchange in fake_model.exchanges), why
    assert all(workspace.marker not in result for result in fake_model.tool_results()), why
    assert gateway.records() == [], why
    assert "refused a request from 127.0.0.1" in stderr, "the agent never reached the gateway\n" + why
    assert wrong not in stderr and gateway.token not in stderr
    if agent.refusal_stops_the_run:
        assert done.returncode != 0 and "the token is not one of this server's tokens" in done.stderr, why
        assert fake_model.exchanges == [], why
    else:
        # Silently: the run succeeds and the model answers without the awf tools.
        assert done.returncode == 0 and fake_model.exchanges, why
