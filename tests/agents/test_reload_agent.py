"""What each real agent (offline against the fake model) does when awf-mcp's config file changes mid-session.

The user's own config file (``$XDG_CONFIG_HOME/awf-mcp/awf-mcp.toml``, named with ``--config``: no
approval needed) serves ``slow`` (tests/upstreams/fake_upstream.py). The fake model has the agent
call ``slow_wait``, which takes :data:`WAIT_SECONDS`; as soon as the model has asked for that call,
the test adds ``[servers.added]`` to the file. awf-mcp reloads (well within the wait), starts
``added`` and sends ``notifications/tools/list_changed``. The agent's next request to the model,
the one carrying ``slow_wait``'s result, shows whether the agent listed the tools again: it then
offers ``added_audio``; its first request could not.

What each agent does is asserted as it is (docs/agents.md, "Live reload"), with the versions
tests/agents/package.json pins:

* Claude Code speaks the 2026-07-28 revision: it is told on its ``subscriptions/listen`` stream,
  lists the tools again and offers the new tool on its next request;
* Gemini CLI (2025-06-18) is told with ``notifications/tools/list_changed``, lists again and offers it;
* Codex CLI (2025-06-18) is told the same way but does not list the tools again: the new tool is
  not offered for the rest of the session.

Claude Code (for stdio servers, its issue #50515) and Gemini CLI (its issue #19509) have been
reported to ignore ``tools/list_changed`` at times: a change in what any of them does makes its test
fail, and the docs with it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
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
    codex,
    explain,
    gemini,
    setup_codex,
    setup_gemini,
)

pytestmark = [pytest.mark.agents, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(autouse=True)
def this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    """The agents' awf-mcp runs from the checkout under test when ``PYTHONPATH`` names one (a worktree
    beside the editable install); the kit's clean environment would drop it."""
    path = os.environ.get("PYTHONPATH")
    if path:
        base_env = Workspace.base_env
        monkeypatch.setattr(
            Workspace, "base_env", lambda self, **extra: base_env(self, PYTHONPATH=path, **extra)
        )


FAKE = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"
WAIT_SECONDS = 8
ADDED = "added_audio"
LOG = "serve.log"


def server_table(name: str) -> str:
    return f'[servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{FAKE}", "good"]\npin = false\n'


def users_config(workspace: Workspace) -> Path:
    """The user's own config file, serving ``slow``."""
    directory = workspace.home / ".config" / "awf-mcp"
    directory.mkdir(parents=True, exist_ok=True)
    config = directory / "awf-mcp.toml"
    config.write_text(server_table("slow"))
    return config


def serve_options(config: Path) -> tuple[str, ...]:
    return ("--config", str(config), "--only", "slow_wait", "--only", ADDED)


def log_into(client_file: Path, config: Path) -> None:
    """Have the awf entry of a client's JSON file log into :data:`LOG` beside ``config`` (shown when
    a test fails: whether awf-mcp reloaded, and when)."""
    entry = json.loads(client_file.read_text())
    entry["mcpServers"]["awf"]["args"] += ["--log-file", str(config.parent / LOG)]
    client_file.write_text(json.dumps(entry))


def add_a_server_once_the_call_is_asked(model: FakeModel, config: Path) -> threading.Thread:
    """In the background: once the model has asked for the call, add ``[servers.added]`` to ``config``."""

    def watch() -> None:
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            if "tool_call" in model.answers():
                config.write_text(server_table("slow") + server_table("added"))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def offered_after_the_reload(
    workspace: Workspace,
    model: FakeModel,
    config: Path,
    run: Callable[[], subprocess.CompletedProcess[str]],
) -> tuple[bool, bool, str]:
    """Run the agent; whether the new tool was offered on the call's turn and on the next one."""
    model.scenario = Scenario(tool="slow_wait", arguments={"seconds": WAIT_SECONDS})
    writer = add_a_server_once_the_call_is_asked(model, config)
    done = run()
    writer.join(timeout=5)
    log = config.parent / LOG
    why = explain(done, model) + "\n--- awf-mcp log\n" + (log.read_text()[-6000:] if log.exists() else "")
    assert "[servers.added]" in config.read_text(), "the model never asked for the call\n" + why
    assert_round_trip(done, model, "waited")
    assert "reloaded: servers added: added" in log.read_text(), why  # awf-mcp did its part
    offered = [(exchange.answer, exchange.tool_names) for exchange in model.exchanges]
    call = next(names for answer, names in offered if answer == "tool_call")
    final = next(names for answer, names in offered if answer == "final")
    assert any(name.endswith("slow_wait") for name in call), why
    return any(n.endswith(ADDED) for n in call), any(n.endswith(ADDED) for n in final), why


def test_claude_code_offers_a_tool_a_config_change_added_mid_session(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("claude")
    config = users_config(workspace)
    accepted = {"projects": {str(workspace.project): {"hasTrustDialogAccepted": True}}}
    (workspace.home / ".claude.json").write_text(json.dumps(accepted), encoding="utf-8")
    env = claude_env(workspace, fake_model)
    awf_config("claude", workspace, env, "--trust", "all", serve=serve_options(config))
    log_into(workspace.project / ".mcp.json", config)
    before, after, why = offered_after_the_reload(
        workspace, fake_model, config, lambda: claude(workspace, env)
    )
    assert not before, why
    assert after, why


def test_gemini_cli_offers_a_tool_a_config_change_added_mid_session(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("gemini")
    config = users_config(workspace)
    env = setup_gemini(workspace, fake_model, "--trust", "all", serve=serve_options(config))
    log_into(workspace.project / ".gemini" / "settings.json", config)
    before, after, why = offered_after_the_reload(
        workspace, fake_model, config, lambda: gemini(workspace, env)
    )
    assert not before, why
    assert after, why


def test_codex_cli_is_told_but_does_not_offer_a_tool_a_config_change_added_mid_session(
    workspace: Workspace, fake_model: FakeModel
) -> None:
    agent_binary("codex")
    config = users_config(workspace)
    env = setup_codex(workspace, fake_model, "--trust", "all", serve=serve_options(config))
    codex_toml = workspace.home / "codex-home" / "config.toml"
    log = json.dumps(str(config.parent / LOG))
    codex_toml.write_text(
        codex_toml.read_text().replace('"--config", ', f'"--log-file", {log}, "--config", ', 1)
    )
    path = os.environ.get("PYTHONPATH")
    if path:  # Codex gives its MCP servers only the variables it names (see this_checkout)
        with (workspace.home / "codex-home" / "config.toml").open("a") as codex_config:
            codex_config.write(f"\n[mcp_servers.awf.env]\nPYTHONPATH = {json.dumps(path)}\n")
    before, after, why = offered_after_the_reload(
        workspace, fake_model, config, lambda: codex(workspace, env)
    )
    assert not before, why
    assert not after, why  # told (notifications/tools/list_changed), Codex does not list the tools again
