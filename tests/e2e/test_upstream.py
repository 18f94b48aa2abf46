"""Upstream MCP servers behind ``awf-mcp serve``, end to end, against servers nobody here wrote.

The real servers: ``mcp-server-time`` and ``mcp-server-git`` (PyPI, the test extra),
``@modelcontextprotocol/server-everything`` and ``server-memory`` (npm, pinned in
tests/upstreams/, installed by tests/run.sh). The fault servers are
tests/upstreams/fake_upstream.py: one that never answers ``initialize``, one that
prints non-JSON, one that exits at once, one that floods, and a good one with the
content types and behaviours the real servers lack (audio, a cancellable wait).

What each test proves: tools arrive as ``<server>_<tool>`` with their definitions
unchanged; every content type, progress, a structured result and errors pass through;
a cancelled call is cancelled upstream; an upstream killed mid-call gives that call an
``isError`` and the next call restarts it; faulty upstreams are reported by name and
the others served (``--strict`` makes it fatal); EOF and ``kill -9`` leave no upstream
running; an expanded secret never reaches awf-mcp's stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import ToolListChangedNotification

from tests.e2e.test_http import TOKEN as HTTP_TOKEN
from tests.e2e.test_http import http_server  # noqa: F401  (the fixture)
from tests.helpers.harness import (
    RawServer,
    alive,
    marked_pids,
    mcp_session,
    server_command,
    server_env,
    text_of,
    wait_until,
    write_approved,
)

pytestmark = pytest.mark.e2e

UPSTREAMS = Path(__file__).resolve().parents[1] / "upstreams"
FAKE = UPSTREAMS / "fake_upstream.py"
CHANGING = UPSTREAMS / "changing_upstream.py"
NODE_SERVERS = UPSTREAMS / "node_modules" / "@modelcontextprotocol"
NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def server_table(name: str, command: str, args: list[str], **extra: Any) -> str:
    lines = [f"[servers.{name}]", f"command = {toml_string(command)}"]
    lines.append("args = [" + ", ".join(toml_string(arg) for arg in args) + "]")
    for key, value in extra.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k} = {toml_string(v)}" for k, v in value.items())
            lines.append(f"{key} = {{ {inner} }}")
        elif isinstance(value, bool):
            lines.append(f"{key} = {'true' if value else 'false'}")
        else:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def fake(name: str, mode: str, markers: Path, **extra: Any) -> str:
    return server_table(name, sys.executable, [str(FAKE), mode, str(markers)], **extra)


def python_server(name: str, script: str, *args: str) -> str:
    executable = shutil.which(script, path=str(Path(sys.executable).parent))
    assert executable, f"{script} is not installed: pip install -e '.[test]'"
    return server_table(name, executable, list(args))


def node_server(name: str, package: str, **extra: Any) -> str:
    if os.environ.get("AWF_MCP_SKIP_NODE") == "1":
        pytest.skip("AWF_MCP_SKIP_NODE=1: no Node.js on this machine")
    entry = NODE_SERVERS / package / "dist" / "index.js"
    assert entry.exists(), "the npm upstreams are not installed: npm ci --prefix tests/upstreams"
    node = shutil.which("node")
    assert node
    return server_table(name, node, [str(entry)], **extra)


def write_config(directory: Path, *tables: str) -> str:
    """``DIRECTORY/awf-mcp.toml`` holding TABLES, approved as the user would approve it."""
    return str(write_approved(directory / "awf-mcp.toml", "\n".join(tables)))


def servers_list(config: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``awf-mcp servers list --json --config CONFIG``, run to its end."""
    return subprocess.run(
        server_command("servers", "list", "--json", "--config", config),
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        cwd=cwd,
        timeout=60,
    )


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    """A directory unique to the test: the fake upstreams' markers, and their command-line tag."""
    directory = tmp_path / f"markers-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    return directory


@pytest.mark.anyio
async def test_real_upstreams_are_served_under_prefixed_names_with_definitions_unchanged(
    tmp_path: Path,
) -> None:
    config = write_config(
        tmp_path,
        python_server("time", "mcp-server-time", "--local-timezone", "UTC"),
        node_server("everything", "server-everything"),
        node_server("memory", "server-memory", env={"MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}),
    )
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        instructions = session.initialize_result.instructions if session.initialize_result else None
    assert {"time_get_current_time", "time_convert_time", "memory_create_entities", "everything_echo"} <= set(
        tools
    )
    assert all(name.split("_", 1)[0] in {"time", "everything", "memory"} for name in tools)
    long_running = tools["everything_trigger-long-running-operation"]
    assert long_running.annotations is not None and long_running.annotations.read_only_hint is True
    assert long_running.description == "Demonstrates a long running operation with progress updates."
    assert set(long_running.input_schema["properties"]) == {"duration", "steps"}
    structured = tools["everything_get-structured-content"]
    assert structured.output_schema is not None
    assert "temperature" in structured.output_schema["properties"]
    # awf-mcp advertises no sampling, elicitation or roots upstream (the agent here has none):
    # server-everything then leaves out the tools that would need them.
    assert not [name for name in tools if "sampling" in name or "elicitation" in name or "roots" in name]
    assert instructions is not None and "## Server 'everything' (tools everything_*)" in instructions


@pytest.mark.anyio
async def test_every_content_type_progress_structured_results_and_errors_pass_through(
    tmp_path: Path, markers: Path
) -> None:
    config = write_config(
        tmp_path,
        node_server("everything", "server-everything"),
        python_server("time", "mcp-server-time", "--local-timezone", "UTC"),
        fake("fake", "good", markers),
    )
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        image = await session.call_tool("everything_get-tiny-image", {})
        links = await session.call_tool("everything_get-resource-links", {"count": 2})
        embedded = await session.call_tool("everything_get-resource-reference", {"resourceId": 2})
        annotated = await session.call_tool(
            "everything_get-annotated-message", {"messageType": "error", "includeImage": False}
        )
        structured = await session.call_tool("everything_get-structured-content", {"location": "Chicago"})
        audio = await session.call_tool("fake_audio", {})
        progress: list[tuple[float, float | None]] = []

        async def on_progress(value: float, total: float | None, message: str | None) -> None:
            progress.append((value, total))

        long_running = await session.call_tool(
            "everything_trigger-long-running-operation",
            {"duration": 0.3, "steps": 3},
            progress_callback=on_progress,
        )
        bad_zone = await session.call_tool("time_get_current_time", {"timezone": "Mars/Olympus"})
        good_zone = await session.call_tool("time_get_current_time", {"timezone": "Europe/Paris"})

    assert [item.type for item in image.content].count("image") == 1
    assert any(item.type == "image" and item.mime_type == "image/png" for item in image.content)
    assert [item.type for item in links.content].count("resource_link") == 2
    link = next(item for item in links.content if item.type == "resource_link")
    assert link.uri and link.name
    resource = next(item for item in embedded.content if item.type == "resource")
    assert resource.resource.uri
    assert any(item.annotations is not None for item in annotated.content)
    assert structured.structured_content is not None and "temperature" in structured.structured_content
    assert not structured.is_error
    assert [item.type for item in audio.content] == ["audio", "resource"]
    assert audio.content[0].mime_type == "audio/wav"
    assert audio.content[1].resource.blob == "AAEC"
    assert audio.content[1].annotations is not None and audio.content[1].annotations.priority == 0.25
    assert not long_running.is_error
    assert progress == [(1, 3), (2, 3), (3, 3)]
    assert bad_zone.is_error and "Mars/Olympus" in text_of(bad_zone)
    assert not good_zone.is_error and "Europe/Paris" in text_of(good_zone)


@pytest.mark.anyio
async def test_git_upstream_answers_about_a_real_repository(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "new.txt").write_text("hello\n")
    config = write_config(tmp_path, python_server("git", "mcp-server-git", "--repository", str(repo)))
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        status = await session.call_tool("git_git_status", {"repo_path": str(repo)})
    assert not status.is_error, text_of(status)
    assert "new.txt" in text_of(status)


@pytest.mark.anyio
async def test_a_cancelled_call_is_cancelled_upstream(tmp_path: Path, markers: Path) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers))
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
        with anyio.move_on_after(0.5):
            await session.call_tool("fake_wait", {"seconds": 30})
        with anyio.move_on_after(5):
            while not any(markers.glob("cancelled-*")):
                await anyio.sleep(0.02)
        assert any(markers.glob("cancelled-*")), "the upstream never saw notifications/cancelled"
        after = await session.call_tool("fake_audio", {})
    assert not after.is_error


def test_an_upstream_killed_mid_call_fails_that_call_and_the_next_call_restarts_it(
    tmp_path: Path, markers: Path
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers))
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        [upstream] = marked_pids(str(markers))
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "fake_wait", "arguments": {"seconds": 30}},
            }
        )
        time.sleep(0.3)
        os.kill(upstream, signal.SIGKILL)
        reply = server.receive(timeout=10)
        assert reply["id"] == 1
        assert reply["result"]["isError"] is True
        text = reply["result"]["content"][0]["text"]
        assert "server 'fake' stopped during the call of wait" in text
        assert "SIGKILL" in text
        recovered = server.request("tools/call", {"name": "fake_audio", "arguments": {}})
        assert recovered["result"].get("isError") is not True
        [restarted] = marked_pids(str(markers))
        assert restarted != upstream
        assert "server 'fake' restarted" in server.stderr()


def test_faulty_upstreams_are_reported_by_name_and_the_others_served(tmp_path: Path, markers: Path) -> None:
    config = write_config(
        tmp_path,
        fake("silent", "silent", markers, startup_timeout_seconds=1),
        fake("garbage", "garbage", markers, startup_timeout_seconds=1),
        fake("quitter", "exit", markers),
        fake("flood", "flood", markers),
        fake("fake", "good", markers),
    )
    started = time.monotonic()
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        listed = server.request("tools/list")
        elapsed = time.monotonic() - started
        names = {tool["name"] for tool in listed["result"]["tools"]}
        assert names == {"fake_audio", "fake_wait", "fake_leak", "fake_big", "fake_progress"}
        errors = server.stderr()
        assert "server 'silent' not served: it did not list its tools within 1 s" in errors
        assert "server 'garbage' not served" in errors
        assert "[garbage] it printed a line that is not JSON-RPC on stdout: 'this is not JSON'" in errors
        assert "server 'quitter' not served" in errors and "it exited with code 3" in errors
        assert "server 'flood' not served" in errors and "over the 10485760-byte limit" in errors
        assert "server 'fake': tool 'bad.name' is left out: tool name 'fake_bad.name' is invalid" in errors
        assert 'add to awf-mcp.toml under [rename]: "server:fake/fake_bad.name" = "fake_bad_name"' in errors
        assert elapsed < 8, f"start-up took {elapsed:.1f} s with two 1 s start-up timeouts"
    assert wait_until(lambda: not marked_pids(str(markers)), timeout=5)


def test_strict_makes_a_failed_upstream_fatal(tmp_path: Path, markers: Path) -> None:
    config = write_config(tmp_path, fake("quitter", "exit", markers), fake("fake", "good", markers))
    with RawServer("--config", config, "--no-builtins", "--strict", env=NO_PLUGINS, cwd=tmp_path) as server:
        assert server.wait(timeout=20) == 1
        assert "server 'quitter' failed to start" in server.stderr()
    assert wait_until(lambda: not marked_pids(str(markers)), timeout=5)


STUBBORN = {"FAKE_IGNORE_EOF": "1"}


def test_eof_stops_every_upstream_within_the_exit_bound(tmp_path: Path, markers: Path) -> None:
    config = write_config(tmp_path, fake("one", "good", markers, env=STUBBORN), fake("two", "good", markers))
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        assert len(marked_pids(str(markers))) == 2
        started = time.monotonic()
        server.close_stdin()
        assert server.wait(timeout=5) == 0
        took = time.monotonic() - started
    assert not marked_pids(str(markers))
    assert took < 1.5, f"exit took {took:.2f} s"


def test_kill_9_of_awf_mcp_leaves_no_upstream_running(tmp_path: Path, markers: Path) -> None:
    config = write_config(
        tmp_path, fake("one", "good", markers, env=STUBBORN), fake("two", "good", markers, env=STUBBORN)
    )
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        upstreams = marked_pids(str(markers))
        assert len(upstreams) == 2
        server.process.send_signal(signal.SIGKILL)
        server.wait()
        assert wait_until(lambda: not any(alive(pid) for pid in upstreams), timeout=5)


def test_an_expanded_secret_never_reaches_the_log(tmp_path: Path, markers: Path) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    config = write_config(tmp_path, fake("fake", "good", markers, env={"FAKE_SECRET": "${UPSTREAM_TOKEN}"}))
    env = {**NO_PLUGINS, "UPSTREAM_TOKEN": secret}
    with RawServer(
        "--config", config, "--no-builtins", "--log-level", "DEBUG", env=env, cwd=tmp_path
    ) as server:
        server.initialize()
        reply = server.request("tools/call", {"name": "fake_leak", "arguments": {}})
        assert reply["result"].get("isError") is not True
        assert wait_until(lambda: "[fake] the secret is" in server.stderr(), timeout=5)
        assert secret not in server.stderr()
        assert "[fake] the secret is ***" in server.stderr()


@pytest.mark.anyio
async def test_an_http_upstream_is_served_with_its_headers_and_a_wrong_token_is_reported(
    tmp_path: Path,
    root: Path,
    http_server: tuple[str, subprocess.Popen[bytes]],  # noqa: F811  (the imported fixture)
) -> None:
    url, _ = http_server
    (root / "hello.txt").write_text("hello from the remote root\n")
    config = tmp_path / "awf-mcp.toml"
    write_approved(
        config,
        f"""
[servers.remote]
url = "{url}"
headers = {{ Authorization = "Bearer ${{REMOTE_TOKEN}}" }}

[servers.denied]
url = "{url}"
headers = {{ Authorization = "Bearer wrong-token-value" }}
startup_timeout_seconds = 5
""",
    )
    errors = tmp_path / "stderr.txt"
    env = {**NO_PLUGINS, "REMOTE_TOKEN": HTTP_TOKEN}
    with errors.open("w") as errlog:
        async with mcp_session(
            "--config", str(config), "--no-builtins", cwd=tmp_path, env=env, errlog=errlog
        ) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            read = await session.call_tool("remote_Read", {"path": str(root / "hello.txt")})
    assert {"remote_Read", "remote_Glob"} <= names and not any(n.startswith("denied_") for n in names)
    assert not read.is_error and "hello from the remote root" in text_of(read)
    logged = errors.read_text()
    assert "server 'denied' not served" in logged
    assert HTTP_TOKEN not in logged and "wrong-token-value" not in logged


def test_servers_list_shows_states_and_tools_and_no_secret(tmp_path: Path, markers: Path) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    config = write_config(
        tmp_path,
        fake("fake", "good", markers, env={"FAKE_SECRET": "${UPSTREAM_TOKEN}"}),
        fake("quitter", "exit", markers),
        server_table("off", "nothing", [], enabled=False),
        server_table("leaky", sys.executable, [str(FAKE), "exit", "--token=${UPSTREAM_TOKEN}"]),
    )
    env = {**NO_PLUGINS, "UPSTREAM_TOKEN": secret, "PATH": os.environ["PATH"]}
    done = servers_list(config, tmp_path, env)
    assert done.returncode == 1, done.stderr  # quitter and leaky failed
    assert secret not in done.stdout + done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["servers"]}
    assert rows["fake"]["state"] == "running"
    # As the server lists them, prefixed: bad.name too, which `tools list` leaves out until renamed.
    assert rows["fake"]["tools"] == [
        "fake_audio",
        "fake_bad.name",
        "fake_big",
        "fake_leak",
        "fake_progress",
        "fake_wait",
    ]
    assert rows["fake"]["env"] == ["FAKE_SECRET"]
    assert rows["quitter"]["state"] == "failed" and "it exited with code 3" in rows["quitter"]["reason"]
    assert rows["off"]["state"] == "disabled"
    assert rows["leaky"]["args"][-1] == "--token=${UPSTREAM_TOKEN}"
    assert wait_until(lambda: not marked_pids(str(markers)), timeout=5)


@pytest.mark.anyio
async def test_an_agent_configuration_pasted_into_the_proxy_json_is_served(tmp_path: Path) -> None:
    executable = shutil.which("mcp-server-time", path=str(Path(sys.executable).parent))
    assert executable
    proxy = tmp_path / "proxy.json"
    write_approved(
        proxy,
        json.dumps(
            {
                "intercept_builtins": False,
                "plugin_tools": [{"plugin": "time", "expose": ["get_current_time"]}],
                "mcpServers": {"time": {"type": "stdio", "command": executable, "args": [], "env": {}}},
            }
        ),
    )
    async with mcp_session("--config", str(proxy), cwd=tmp_path, env=NO_PLUGINS) as session:
        names = [tool.name for tool in (await session.list_tools()).tools]
        result = await session.call_tool("time_get_current_time", {"timezone": "UTC"})
    assert names == ["time_get_current_time"]
    assert not result.is_error and '"timezone": "UTC"' in text_of(result)


@pytest.mark.anyio
async def test_an_upstreams_tools_list_changed_is_re_merged_and_relayed_to_the_agent(tmp_path: Path) -> None:
    """The SDK's own server changes its tools; the SDK's client, as the agent, is told and re-lists.

    Not pinned (``pin = false``): the tools it adds are served as they come (test_pins.py holds them)."""
    config = write_config(tmp_path, server_table("chg", sys.executable, [str(CHANGING)], pin=False))
    command = server_command("serve", "--config", config, "--no-builtins", "--exclude", "chg_hidden")
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(tmp_path), env=server_env(NO_PLUGINS)
    )
    told: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            told.append(message)

    async def names(session: ClientSession) -> set[str]:
        return {tool.name for tool in (await session.list_tools()).tools}

    async def until_told(count: int) -> None:
        with anyio.fail_after(10):
            while len(told) < count:
                await anyio.sleep(0.02)

    stderr_path = tmp_path / "stderr.txt"
    with stderr_path.open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            initialized = await session.initialize()
            assert initialized.capabilities.tools is not None and initialized.capabilities.tools.list_changed
            assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}
            waited: list[str] = []

            async with anyio.create_task_group() as group:

                async def wait_call() -> None:
                    waited.append(text_of(await session.call_tool("chg_wait", {"seconds": 1.5})))

                group.start_soon(wait_call)
                await anyio.sleep(0.3)  # the call is in flight upstream
                assert text_of(await session.call_tool("chg_drop", {"name": "wait"})) == "ok"
                await until_told(1)
                assert await names(session) == {"chg_grow", "chg_drop"}
            assert waited == ["waited"]  # the call in flight finished on the tool it started with

            await session.call_tool("chg_grow", {"name": "extra"})
            await until_told(2)
            assert await names(session) == {"chg_grow", "chg_drop", "chg_extra"}
            assert text_of(await session.call_tool("chg_extra", {})) == "I am extra"

            # Nothing the agent sees changes: a bad name, an excluded tool, a name listed twice.
            await session.call_tool("chg_grow", {"name": "bad.one"})
            assert wait_until(lambda: "tool 'bad.one' is left out" in stderr_path.read_text(), timeout=10)
            await session.call_tool("chg_grow", {"name": "hidden"})
            await session.call_tool("chg_grow", {"name": "extra"})
            listed_twice = "server 'chg': tool 'extra' is listed twice: the second is left out"
            assert wait_until(lambda: listed_twice in stderr_path.read_text(), timeout=10)
            await session.call_tool("chg_grow", {"name": "last"})
            await until_told(3)
            assert await names(session) == {"chg_grow", "chg_drop", "chg_extra", "chg_last"}
            assert len(told) == 3
            assert text_of(await session.call_tool("chg_extra", {})) == "I am extra"
    errors = stderr_path.read_text()
    assert '"server:chg/chg_bad.one" = "chg_bad_one"' in errors


@pytest.mark.anyio
async def test_calls_in_flight_are_forwarded_concurrently(tmp_path: Path) -> None:
    """Sixteen 1 s calls to one upstream end together: nothing on the way serialises them."""
    config = write_config(tmp_path, server_table("chg", sys.executable, [str(CHANGING)]))
    async with mcp_session("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as session:
        await session.list_tools()
        results: list[str] = []

        async def one() -> None:
            results.append(text_of(await session.call_tool("chg_wait", {"seconds": 1})))

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            for _ in range(16):
                group.start_soon(one)
        elapsed = time.monotonic() - started
    assert results == ["waited"] * 16
    assert elapsed < 6, f"16 concurrent 1 s calls took {elapsed:.1f} s: they were serialised"
