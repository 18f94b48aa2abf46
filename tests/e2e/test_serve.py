"""``awf-mcp serve`` end to end: a real subprocess, driven by the SDK's client or by raw frames.

Covers what an agent meets: listing and calling, every error path, protocol
versions, stdout purity, message limits, EOF and signals, broken plugins and
name collisions. Uses the test-only plugin ``testkit`` (tests/fixtures) and
distributions written per test into an ``AWF_MCP_PLUGIN_PATH`` directory.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from awf_mcp.budget import MAX_BUDGET
from tests.helpers.distributions import make_distribution, provider_plugin
from tests.helpers.harness import RawServer, mcp_session, server_command, server_env, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("testkit")]

PLUGINS_ONLY = ("--no-builtins",)


@pytest.fixture
def raw_server():
    servers: list[RawServer] = []

    def start(*args: str, **kwargs: Any) -> RawServer:
        server = RawServer(*args, **kwargs)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.kill()


# ---------------------------------------------------------------- listing and calling


@pytest.mark.anyio
async def test_lists_plugin_tools_sorted_and_calls_one() -> None:
    async with mcp_session(*PLUGINS_ONLY) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        assert names == sorted(names) and "testkit_echo" in names
        result = await session.call_tool("testkit_echo", {"text": "hello"})
        assert not result.is_error and text_of(result) == "hello"


@pytest.mark.anyio
async def test_builtins_are_served_by_default(root: Path) -> None:
    async with mcp_session("--root", str(root)) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"Read", "Write", "Edit", "Bash", "Glob", "Grep"} <= names


@pytest.mark.anyio
async def test_every_error_path_is_an_error_result_and_the_server_keeps_serving() -> None:
    async with mcp_session(*PLUGINS_ONLY) as session:
        expectations = {
            "testkit_boom": "ValueError: kaboom",
            "testkit_none": 'tool "testkit_none" returned no result',
            "testkit_exit": "called sys.exit(3)",
        }
        for name, expected in expectations.items():
            result = await session.call_tool(name, {})
            assert result.is_error and expected in text_of(result), name
            assert "Traceback" not in text_of(result)
        missing = await session.call_tool("testkit_echo", {})
        assert missing.is_error and "'text' is a required property" in text_of(missing)
        wrong_type = await session.call_tool("testkit_echo", {"text": 12})
        assert wrong_type.is_error and "text:" in text_of(wrong_type)
        with pytest.raises(MCPError, match="unknown tool 'ghost'"):
            await session.call_tool("ghost", {})
        assert text_of(await session.call_tool("testkit_echo", {"text": "still here"})) == "still here"


@pytest.mark.anyio
async def test_a_hanging_tool_is_cut_off_by_the_call_timeout() -> None:
    async with mcp_session(*PLUGINS_ONLY, "--call-timeout", "0.5") as session:
        started = time.monotonic()
        result = await session.call_tool("testkit_sleep", {"seconds": 30})
        assert result.is_error and "timed out after 0.5 s" in text_of(result)
        assert time.monotonic() - started < 10
        assert text_of(await session.call_tool("testkit_echo", {"text": "alive"})) == "alive"


@pytest.mark.anyio
async def test_sync_tools_run_concurrently() -> None:
    async with mcp_session(*PLUGINS_ONLY) as session:
        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for _ in range(4):
                group.start_soon(session.call_tool, "testkit_sleep", {"seconds": 1})
        assert time.monotonic() - started < 3.5


@pytest.mark.anyio
async def test_progress_notifications_reach_the_client() -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with mcp_session(*PLUGINS_ONLY) as session:
        result = await session.call_tool("testkit_progress", {}, progress_callback=on_progress)
        assert text_of(result) == "done"
    assert [p for p, _, _ in seen] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
def test_every_handshake_protocol_version_is_served(raw_server: Any, version: str) -> None:
    server = raw_server(*PLUGINS_ONLY)
    reply = server.initialize(version)
    assert reply["result"]["protocolVersion"] == version
    assert reply["result"]["serverInfo"]["name"] == "awf-mcp-server"
    tools = server.request("tools/list")["result"]["tools"]
    assert any(tool["name"] == "testkit_echo" for tool in tools)


# ---------------------------------------------------------------- stdout purity


def test_stdout_carries_json_rpc_only_even_when_plugins_print(raw_server: Any) -> None:
    server = raw_server(*PLUGINS_ONLY, env={"TESTKIT_PRINT_AT_IMPORT": "1"})
    server.initialize()
    reply = server.request("tools/call", {"name": "testkit_print", "arguments": {"text": "x"}})
    assert reply["result"]["content"][0]["text"] == "printed"
    server.close_stdin()
    assert server.wait() == 0
    for line in server.read_rest().splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    stderr = server.stderr()
    assert "stray output from a plugin x" in stderr and "testkit import-time print" in stderr


# ---------------------------------------------------------------- frames and limits


def test_malformed_frames_get_json_rpc_errors(raw_server: Any) -> None:
    server = raw_server(*PLUGINS_ONLY)
    server.initialize()
    server.send(b"{not json")
    assert server.receive()["error"]["code"] == -32700
    server.send(b'{"jsonrpc": "2.0", "id": 5, "method": 12}')
    reply = server.receive()
    assert reply["error"]["code"] == -32600 and reply["id"] == 5
    assert server.request("ping")["result"] == {}


@pytest.mark.anyio
@pytest.mark.parametrize("size", [256 * 1024, 9 * 1024 * 1024])
async def test_large_payloads_are_carried_and_answered_within_the_largest_budget(size: int) -> None:
    payload = ("0123456789abcdef" * (size // 16 + 1))[:size]
    async with mcp_session(*PLUGINS_ONLY, "--output-budget", str(MAX_BUDGET)) as session:
        result = await session.call_tool("testkit_echo", {"text": payload})
    text = text_of(result)
    if size <= MAX_BUDGET:
        assert text == payload
    else:
        assert text.startswith(payload[: MAX_BUDGET // 2]) and len(text.encode()) <= MAX_BUDGET
        assert "[awf-mcp: output cut to" in text


def test_a_200_mib_line_is_refused_without_buffering_it(raw_server: Any) -> None:
    server = raw_server(*PLUGINS_ONLY)
    server.initialize()
    server.request("tools/list")
    baseline = server.rss_kib()
    assert server.process.stdin is not None
    chunk = b"x" * (1 << 20)
    server.process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"')
    for _ in range(200):
        server.process.stdin.write(chunk)
    server.process.stdin.write(b'"}}\n')
    server.process.stdin.flush()
    reply = server.receive()
    assert reply["error"]["code"] == -32600 and "exceeds" in reply["error"]["message"]
    peak_growth_mib = (server.rss_kib("VmHWM") - baseline) / 1024
    assert peak_growth_mib < 20, f"RSS peak grew by {peak_growth_mib:.1f} MiB"
    assert server.request("ping")["result"] == {}


# ---------------------------------------------------------------- lifecycle


def test_stdin_eof_exits_zero_within_a_second(raw_server: Any, tmp_path: Path) -> None:
    marker = tmp_path / "closed.txt"
    server = raw_server(*PLUGINS_ONLY, env={"AWF_MCP_PLUGIN_TESTKIT_CLOSE_MARKER": str(marker)})
    server.initialize()
    started = time.monotonic()
    server.close_stdin()
    assert server.wait() == 0
    assert time.monotonic() - started < 1.0
    assert marker.read_text() == "closed\n"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signals_exit_zero_within_a_second_while_idle(raw_server: Any, tmp_path: Path, signum: int) -> None:
    marker = tmp_path / "closed.txt"
    server = raw_server(*PLUGINS_ONLY, env={"AWF_MCP_PLUGIN_TESTKIT_CLOSE_MARKER": str(marker)})
    server.initialize()
    server.request("tools/list")
    started = time.monotonic()
    server.process.send_signal(signum)
    assert server.wait() == 0
    assert time.monotonic() - started < 1.0
    assert marker.read_text() == "closed\n"


def test_sigterm_does_not_wait_for_a_hung_worker_thread(raw_server: Any) -> None:
    server = raw_server(*PLUGINS_ONLY)
    server.initialize()
    server.send(
        {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "testkit_sleep", "arguments": {"seconds": 60}},
        }
    )
    time.sleep(0.3)
    started = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    assert server.wait() == 0
    assert time.monotonic() - started < 1.0


# ---------------------------------------------------------------- plugins: discovery, failures, collisions


BROKEN_IMPORT = "raise ImportError('needs libfoo')\n"
RAISING_HOOK = """
from awf_mcp import hookimpl

@hookimpl
def awf_mcp_register_tools(plugin):
    raise RuntimeError('hook exploded')
"""


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        capture_output=True,
        text=True,
        env=server_env(env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_a_plugin_from_the_plugin_path_is_discovered(tmp_path: Path) -> None:
    provider_plugin(tmp_path / "plugins", "extra", "extra_hello")
    listed = run_cli(
        "tools", "list", "--json", "--no-builtins", env={"AWF_MCP_PLUGIN_PATH": str(tmp_path / "plugins")}
    )
    assert listed.returncode == 0, listed.stderr
    tools = {tool["name"]: tool["source"] for tool in json.loads(listed.stdout)["tools"]}
    assert tools["extra_hello"] == "plugin:extra" and "testkit_echo" in tools


@pytest.mark.parametrize(
    ("source", "reason"),
    [(BROKEN_IMPORT, "ImportError: needs libfoo"), (RAISING_HOOK, "RuntimeError: hook exploded")],
)
def test_a_broken_plugin_is_skipped_with_one_line_and_the_rest_serve(
    raw_server: Any, tmp_path: Path, source: str, reason: str
) -> None:
    plugins = make_distribution(
        tmp_path / "p", dist="awf-plugin-broken", plugin="broken", module="awf_broken", source=source
    )
    server = raw_server(*PLUGINS_ONLY, env={"AWF_MCP_PLUGIN_PATH": str(plugins)})
    server.initialize()
    names = [tool["name"] for tool in server.request("tools/list")["result"]["tools"]]
    assert "testkit_echo" in names
    server.close_stdin()
    assert server.wait() == 0
    lines = [line for line in server.stderr().splitlines() if "broken" in line]
    assert len(lines) == 1
    assert "plugin 'broken' (distribution awf-plugin-broken 1.0.0)" in lines[0] and reason in lines[0]


def test_invalid_tool_names_skip_the_plugin(tmp_path: Path) -> None:
    provider_plugin(tmp_path / "p", "dotty", "dotty_ok", "dotty.bad")
    listed = run_cli(
        "tools", "list", "--json", "--no-builtins", env={"AWF_MCP_PLUGIN_PATH": str(tmp_path / "p")}
    )
    assert listed.returncode == 0
    names = [tool["name"] for tool in json.loads(listed.stdout)["tools"]]
    assert "dotty_ok" not in names and "testkit_echo" in names
    assert "tool name 'dotty.bad' is invalid" in listed.stderr


def test_strict_makes_a_broken_plugin_fatal(tmp_path: Path) -> None:
    plugins = make_distribution(
        tmp_path / "p", dist="awf-plugin-broken", plugin="broken", module="awf_broken2", source=BROKEN_IMPORT
    )
    result = run_cli("serve", "--strict", env={"AWF_MCP_PLUGIN_PATH": str(plugins)})
    assert result.returncode == 1
    assert "plugin 'broken'" in result.stderr and "needs libfoo" in result.stderr
    assert result.stdout == ""


def test_a_name_collision_between_two_distributions_is_fatal(tmp_path: Path) -> None:
    provider_plugin(tmp_path / "p", "a", "a_b_c")
    provider_plugin(tmp_path / "p", "a_b", "a_b_c")
    result = run_cli("serve", env={"AWF_MCP_PLUGIN_PATH": str(tmp_path / "p")})
    assert result.returncode == 1
    message = result.stderr.strip()
    assert "NAME_COLLISION" in message and "'a_b_c'" in message
    assert "plugin:a and plugin:a_b" in message and "--exclude a_b_c" in message
    assert len(message.splitlines()) == 1


def test_two_distributions_claiming_one_plugin_name_is_fatal(tmp_path: Path) -> None:
    provider_plugin(tmp_path / "p", "dup", "dup_x", dist="awf-plugin-dup-one")
    provider_plugin(tmp_path / "p", "dup", "dup_y", dist="awf-plugin-dup-two")
    result = run_cli("tools", "list", env={"AWF_MCP_PLUGIN_PATH": str(tmp_path / "p")})
    assert result.returncode == 1
    assert "two distributions declare plugin 'dup'" in result.stderr


def test_plugin_environment_filters(tmp_path: Path) -> None:
    provider_plugin(tmp_path / "p", "extra", "extra_hello")
    env = {"AWF_MCP_PLUGIN_PATH": str(tmp_path / "p"), "AWF_MCP_PLUGINS": "extra"}
    only = run_cli("tools", "list", "--json", "--no-builtins", env=env)
    assert [t["name"] for t in json.loads(only.stdout)["tools"]] == ["extra_hello"]
    none = run_cli("tools", "list", "--json", env={**env, "AWF_MCP_NO_PLUGINS": "1"})
    assert all(t["source"] == "builtin" for t in json.loads(none.stdout)["tools"])


# ---------------------------------------------------------------- the command line


def test_version_and_usage_errors() -> None:
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.startswith("awf-mcp ")
    bad_flag = run_cli("serve", "--no-such-flag")
    assert bad_flag.returncode == 2


def test_a_bad_config_is_one_line_and_exit_one(tmp_path: Path) -> None:
    config = tmp_path / "proxy.json"
    config.write_text(json.dumps({"intercept_builtins": True, "bogus": 1}))
    result = run_cli("serve", "--config", str(config))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "USER.MCP_PROXY.UNKNOWN_KEY" in result.stderr and "'bogus'" in result.stderr


def test_awf_proxy_config_selects_plugin_operations(tmp_path: Path) -> None:
    config = tmp_path / "proxy.json"
    config.write_text(
        json.dumps({"intercept_builtins": False, "plugin_tools": [{"plugin": "testkit", "expose": ["echo"]}]})
    )
    listed = run_cli("tools", "list", "--json", "--config", str(config))
    assert [t["name"] for t in json.loads(listed.stdout)["tools"]] == ["testkit_echo"]
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"plugin_tools": [{"plugin": "testkit", "expose": ["nope"]}]}))
    failed = run_cli("serve", "--config", str(unknown))
    assert failed.returncode == 1 and "USER.MCP_PROXY.UNKNOWN_OPERATION" in failed.stderr


def test_tools_list_warns_about_names_too_long_once_prefixed(tmp_path: Path) -> None:
    long_name = "extra_" + "x" * 52
    provider_plugin(tmp_path / "p", "extra", long_name)
    result = run_cli("tools", "list", "--no-builtins", env={"AWF_MCP_PLUGIN_PATH": str(tmp_path / "p")})
    assert result.returncode == 0
    assert f"tool '{long_name}' exceeds 64 characters as mcp__awf__{long_name}" in result.stderr


def test_tools_call_runs_the_server_call_path() -> None:
    ok = run_cli("tools", "call", "testkit_echo", '{"text": "cli"}', "--json", "--no-builtins")
    assert ok.returncode == 0 and json.loads(ok.stdout)["content"][0]["text"] == "cli"
    failed = run_cli("tools", "call", "testkit_echo", "{}", "--no-builtins")
    assert failed.returncode == 3 and "required property" in failed.stdout
    unknown = run_cli("tools", "call", "ghost", "--no-builtins")
    assert unknown.returncode == 1 and "unknown tool 'ghost'" in unknown.stderr


@pytest.mark.anyio
@pytest.mark.parametrize("stateless", [False, True], ids=["initialize", "discover"])
async def test_lists_of_what_nothing_offers_are_empty_and_not_advertised(
    tmp_path: Path, stateless: bool
) -> None:
    """Some clients fail on -32601 for prompts/list or resources/list: they get []; a client that
    reads the capabilities still sees neither, and adds nothing for them."""
    async with mcp_session(cwd=tmp_path, env={"AWF_MCP_NO_PLUGINS": "1"}, stateless=stateless) as session:
        opened = session.discover_result if stateless else session.initialize_result
        assert opened is not None
        assert opened.capabilities.prompts is None and opened.capabilities.resources is None
        assert (await session.list_prompts()).prompts == []
        assert (await session.list_resources()).resources == []
        assert (await session.list_resource_templates()).resource_templates == []
        with pytest.raises(MCPError) as refused:
            await session.read_resource("notes://all")
        assert refused.value.error.code == -32601


@pytest.mark.parametrize(("level", "logged"), [(None, False), ("INFO", True)])
def test_a_call_fills_no_inherited_console_unless_asked(
    tmp_path: Path, level: str | None, logged: bool
) -> None:
    """On stdio the default is WARNING (Python agent frameworks pass stderr to their console);
    AWF_MCP_LOG_LEVEL brings the per-call record back where no flag can be passed."""
    (tmp_path / "x.txt").write_text("hello\n")
    env = {"AWF_MCP_NO_PLUGINS": "1", **({"AWF_MCP_LOG_LEVEL": level} if level else {})}
    with RawServer(env=env, cwd=tmp_path) as server:
        server.initialize()
        reply = server.request("tools/call", {"name": "Read", "arguments": {"path": "x.txt"}})
        assert "hello" in json.dumps(reply)
        time.sleep(0.2)
        assert ("call Read" in server.stderr()) is logged, server.stderr()


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("client", "marked"), [("claude-code", True), ("codex-mcp-client", True), ("x", False)]
)
async def test_a_client_that_defers_tools_keeps_the_builtins_loaded(
    tmp_path: Path, client: str, marked: bool
) -> None:
    """Claude Code and Codex defer MCP tools past their own limits: the built-ins carry
    _meta["anthropic/alwaysLoad"]; other tools, and other clients, get no such mark."""
    async with mcp_session(cwd=tmp_path, client_name=client) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert all(
        ((tools[name].meta or {}).get("anthropic/alwaysLoad") is True) is marked for name in ("Read", "Bash")
    )
    assert not (tools["testkit_echo"].meta or {}).get("anthropic/alwaysLoad")
