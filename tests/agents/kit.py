"""Driving the real agent CLIs offline: workspaces, the fake model, each agent's set-up and run.

Each agent is configured in a throw-away HOME and project directory with exactly what
``awf-mcp config CLIENT --write`` writes, pointed at the loopback stand-in for its model
API (:mod:`tests.agents.fake_model`) and run non-interactively. Nothing leaves 127.0.0.1:
every agent gets a dead loopback proxy for anything that is not the fake model, and its
telemetry and update checks are switched off. The CLIs come from
``tests/agents/install.sh`` (pinned in package.json); without them a test fails, naming
the install command, unless ``AWF_MCP_SKIP_AGENTS=1``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.agents.fake_model import FINAL_PREFIX, FakeModel

AGENTS_DIR = Path(__file__).resolve().parent
BIN_DIR = Path(os.environ.get("AWF_MCP_AGENTS_BIN", AGENTS_DIR / "node_modules" / ".bin"))
RUN_TIMEOUT = 180  # seconds, per agent run
SERVE_OPTIONS = ("--only", "Read", "--only", "Write")
#: A proxy nobody listens on: whatever an agent tries to reach besides the fake model fails fast.
DEAD_PROXY = "http://127.0.0.1:9"


def agent_binary(name: str) -> str:
    path = BIN_DIR / name
    if path.exists():
        return str(path)
    message = (
        f"the {name} CLI is not installed in {BIN_DIR}: run `bash tests/agents/install.sh` "
        "(needs Node 20+ and npm), or set AWF_MCP_SKIP_AGENTS=1 to skip the real-agent tests"
    )
    if os.environ.get("AWF_MCP_SKIP_AGENTS") == "1":
        pytest.skip(message)
    pytest.fail(message, pytrace=False)


@dataclass
class Workspace:
    home: Path
    project: Path
    marker: str

    def base_env(self, **extra: str) -> dict[str, str]:
        """A clean environment: no real credentials or endpoints, a dead proxy, this HOME."""
        keep = ("PATH", "LANG", "LC_ALL", "TERM", "SYSTEMROOT", "TMPDIR", "VIRTUAL_ENV")
        env = {k: v for k, v in os.environ.items() if k in keep}
        env.update(
            HOME=str(self.home),
            USERPROFILE=str(self.home),
            XDG_CONFIG_HOME=str(self.home / ".config"),
            XDG_CACHE_HOME=str(self.home / ".cache"),
            HTTP_PROXY=DEAD_PROXY,
            HTTPS_PROXY=DEAD_PROXY,
            ALL_PROXY=DEAD_PROXY,
            http_proxy=DEAD_PROXY,
            https_proxy=DEAD_PROXY,
            NO_PROXY="127.0.0.1,localhost",
            no_proxy="127.0.0.1,localhost",
            NO_COLOR="1",
            CI="true",
        )
        env.update(extra)
        return env


def awf_config(
    client: str, ws: Workspace, env: dict[str, str], *extra: str, serve: tuple[str, ...] = SERVE_OPTIONS
) -> str:
    """Run ``awf-mcp config CLIENT --write ... SERVE`` as a user would; return what it printed."""
    args = [client, "--write", *extra, *serve]
    command = [sys.executable, "-m", "awf_mcp", "config", *args]
    done = subprocess.run(
        command, cwd=ws.project, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, f"awf-mcp config failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def run_agent(argv: list[str], ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv,
            cwd=ws.project,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"{argv[0]} did not finish within {RUN_TIMEOUT}s:\n{exc.stdout!r}\n{exc.stderr!r}")


def explain(done: subprocess.CompletedProcess[str], model: FakeModel) -> str:
    return (
        f"exit {done.returncode}\n--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}\n"
        f"--- model requests\n{model.summary()}\n--- tool results\n{model.tool_results()}"
    )


def assert_round_trip(done: subprocess.CompletedProcess[str], model: FakeModel, expected: str) -> None:
    why = explain(done, model)
    assert done.returncode == 0, why
    assert "tool_call" in model.answers(), "the agent never offered the awf tool to the model\n" + why
    assert any(expected in result for result in model.tool_results()), (
        "the model never received the awf tool's result\n" + why
    )
    assert FINAL_PREFIX in done.stdout and expected in done.stdout, (
        "the agent did not print the final answer\n" + why
    )


def claude_env(ws: Workspace, model: FakeModel) -> dict[str, str]:
    return ws.base_env(
        ANTHROPIC_BASE_URL=model.url,
        ANTHROPIC_API_KEY="sk-ant-test-not-a-key",
        DISABLE_TELEMETRY="1",
        DISABLE_ERROR_REPORTING="1",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        # -p would otherwise send the first turn before the MCP server is connected.
        MCP_CONNECTION_NONBLOCKING="false",
        # Offer MCP tools directly instead of behind the ToolSearch tool.
        ENABLE_TOOL_SEARCH="false",
    )


def setup_claude(
    ws: Workspace, model: FakeModel, *trust: str, serve: tuple[str, ...] = SERVE_OPTIONS
) -> dict[str, str]:
    # What accepting the workspace trust dialog once records; project permissions need it.
    (ws.home / ".claude.json").write_text(
        json.dumps({"projects": {str(ws.project): {"hasTrustDialogAccepted": True}}}), encoding="utf-8"
    )
    env = claude_env(ws, model)
    awf_config("claude", ws, env, *trust, serve=serve)
    assert (ws.project / ".mcp.json").exists()
    return env


def claude(ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prompt = "Use the awf tool as instructed and report its result."
    return run_agent([agent_binary("claude"), "-p", prompt, "--output-format", "text"], ws, env)


def setup_gemini(
    ws: Workspace, model: FakeModel, *trust: str, serve: tuple[str, ...] = SERVE_OPTIONS
) -> dict[str, str]:
    user_settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    }
    (ws.home / ".gemini").mkdir()
    (ws.home / ".gemini" / "settings.json").write_text(json.dumps(user_settings, indent=2), encoding="utf-8")
    env = ws.base_env(
        GOOGLE_GEMINI_BASE_URL=model.url,
        GEMINI_API_KEY="test-not-a-key",
        # Headless runs cannot answer the folder-trust dialog.
        GEMINI_CLI_TRUST_WORKSPACE="true",
    )
    awf_config("gemini", ws, env, *trust, serve=serve)
    assert (ws.project / ".gemini" / "settings.json").exists()
    return env


def gemini(ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prompt = "Use the awf tool as instructed and report its result."
    return run_agent([agent_binary("gemini"), "-p", prompt], ws, env)


def setup_codex(
    ws: Workspace, model: FakeModel, *trust: str, serve: tuple[str, ...] = SERVE_OPTIONS
) -> dict[str, str]:
    codex_home = ws.home / "codex-home"
    codex_home.mkdir()
    # The user's own settings, which `awf-mcp config codex --write` must keep.
    (codex_home / "config.toml").write_text(
        "# test settings: a loopback model provider\n"
        'model = "gpt-test"\n'
        'model_provider = "loopback"\n'
        "check_for_update_on_startup = false\n"
        "\n"
        "[model_providers.loopback]\n"
        'name = "loopback"\n'
        f'base_url = "{model.url}/v1"\n'
        'env_key = "LOOPBACK_API_KEY"\n'
        'wire_api = "responses"\n'
        "\n"
        "[features]\n"
        "plugins = false  # no curated-plugin sync\n"
        "apps = false\n"
        "remote_plugin = false\n"
        "\n"
        "[analytics]\n"
        "enabled = false\n",
        encoding="utf-8",
    )
    env = ws.base_env(CODEX_HOME=str(codex_home), LOOPBACK_API_KEY="test-not-a-key")
    awf_config("codex", ws, env, "--scope", "user", *trust, serve=serve)
    text = (codex_home / "config.toml").read_text(encoding="utf-8")
    assert "[model_providers.loopback]" in text and "[mcp_servers.awf]" in text, text
    assert (codex_home / "config.toml.bak").exists()
    return env


def codex(ws: Workspace, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    prompt = "Use the awf tool as instructed and report its result."
    return run_agent([agent_binary("codex"), "exec", "--skip-git-repo-check", prompt], ws, env)
