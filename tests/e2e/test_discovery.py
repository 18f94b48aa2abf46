"""Which tools a client is offered, by what it does with many (awf_mcp.core.discovery).

A plugin serves 300 tools. Claude Code and Codex, which defer tools themselves, get all 308 (the
built-ins marked to stay loaded); Gemini CLI and any other client get the built-ins, the
``[discovery] always`` tools and the search: it finds a tool by words of its description and
runs it through ``awf_call_tool``, audited under the tool's own name as a listed call is.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.helpers.distributions import make_distribution
from tests.helpers.harness import mcp_session, server_command, server_env, text_of

pytestmark = pytest.mark.e2e

BUILTINS = {"Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"}
WORDS = ["invoice", "weather", "calendar", "ticket", "deploy", "backup", "translate", "invoice"]

MANY_TOOLS = """
from awf_mcp import ToolDefinition, ToolResult, hookimpl

WORDS = {words!r}

class Provider:
    def list_tools(self):
        schema = {{"type": "object", "properties": {{"x": {{"type": "string"}}}}}}
        return [
            ToolDefinition(f"many_t{{i}}", f"Handle {{WORDS[i % 8]}} number {{i}}.", schema, "plugin:many")
            for i in range(300)
        ]

    def call_tool(self, name, arguments):
        return ToolResult.text(f"many ran {{name}} with {{arguments.get('x')}}")

    def close(self):
        pass

@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(Provider())
"""


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    plugins = make_distribution(
        tmp_path / "plugins",
        dist="awf-plugin-many",
        plugin="many",
        module="awf_many",
        source=MANY_TOOLS.format(words=WORDS),
    )
    config = tmp_path / "awf.toml"  # the user's own: outside the working directory
    config.write_text('[discovery]\nalways = ["many_t7"]\n')
    work = tmp_path / "work"
    work.mkdir()
    env = {"AWF_MCP_PLUGIN_PATH": str(plugins), "AWF_MCP_PLUGINS": "many", "AWF_MCP_NO_PLUGINS": ""}
    return work, {**env, "CONFIG": str(config)}


def test_each_client_is_offered_what_it_can_carry(world: tuple[Path, dict[str, str]]) -> None:
    work, env = world
    config = env.pop("CONFIG")
    audit = work.parent / "audit.jsonl"

    async def drive(client: str) -> dict[str, object]:
        seen: dict[str, object] = {}
        args = ("--config", config, "--audit-log", str(audit))
        async with mcp_session(*args, cwd=work, env=env, client_name=client) as session:
            tools = {tool.name: tool for tool in (await session.list_tools()).tools}
            seen["tools"] = tools
            if "awf_find_tools" in tools:
                seen["found"] = text_of(
                    await session.call_tool("awf_find_tools", {"query": "weather forecast"})
                )
                seen["ran"] = await session.call_tool(
                    "awf_call_tool", {"name": "many_t1", "arguments": {"x": "sunny"}}
                )
                seen["wrong"] = await session.call_tool(
                    "awf_call_tool", {"name": "many_t1", "arguments": {"x": 3}}
                )
        return seen

    claude = anyio.run(drive, "claude-code")
    gemini = anyio.run(drive, "gemini-cli-mcp-client")
    tools = claude["tools"]
    assert isinstance(tools, dict) and len(tools) == 308 and "awf_find_tools" not in tools
    assert (tools["Read"].meta or {}).get("anthropic/alwaysLoad") is True
    assert (tools["many_t7"].meta or {}).get("anthropic/alwaysLoad") is True  # [discovery] always
    assert not (tools["many_t1"].meta or {}).get("anthropic/alwaysLoad")
    offered = gemini["tools"]
    assert isinstance(offered, dict) and set(offered) == BUILTINS | {
        "many_t7",
        "awf_find_tools",
        "awf_call_tool",
    }
    found = str(gemini["found"])
    assert found.splitlines()[0].startswith("many_t1: Handle weather number 1.") and "input schema" in found
    ran, wrong = gemini["ran"], gemini["wrong"]
    assert not ran.is_error and text_of(ran) == "many ran many_t1 with sunny"  # type: ignore[attr-defined]
    assert wrong.is_error  # type: ignore[attr-defined]  # the tool's own schema checks the inner arguments
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert any(record.get("tool") == "many_t1" and not record.get("is_error") for record in records)

    listed = subprocess.run(
        server_command("tools", "list", "--json", "--client", "gemini", "--config", config),
        cwd=work,
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    names = {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert names == set(offered)
