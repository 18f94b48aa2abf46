"""``awf-mcp serve --transport http``: the SDK's Streamable HTTP client, bearer auth, binding rules."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.harness import end_process, server_command, server_env

pytestmark = pytest.mark.e2e
TOKEN = "test-token-123"


def start_http(
    *args: str, env: dict[str, str] | None = None, **popen: Any
) -> tuple[str, subprocess.Popen[bytes]]:
    """``awf-mcp serve --transport http --port 0 ARGS``: the URL its listening line shows, and the process."""
    process = subprocess.Popen(
        server_command("serve", "--transport", "http", "--port", "0", *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env or server_env(),
        **popen,
    )
    assert process.stderr is not None
    url = None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = process.stderr.readline().decode()
        match = re.search(r"listening on (http://\S+)", line)
        if match:
            url = match.group(1)
            break
        if not line and process.poll() is not None:
            break
    if url is None:
        stop(process)
        raise AssertionError("the HTTP server did not report its address")
    return url, process


@asynccontextmanager
async def http_session(
    url: str, token: str = TOKEN, *, stateless: bool = False
) -> AsyncIterator[ClientSession]:
    """The SDK's client with ``token``: a Streamable HTTP session, or with ``stateless`` the
    stateless revision (``server/discover``, no session)."""
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        if stateless:
            await session.discover()
        else:
            await session.initialize()
        yield session


def stop(process: subprocess.Popen[bytes]) -> str:
    """End the server (SIGTERM, then SIGKILL); what it wrote on stderr since its listening line."""
    end_process(process, grace=5)
    assert process.stderr is not None
    rest = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    return rest


@pytest.fixture
def http_server(root: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    url, process = start_http("--token", TOKEN, "--root", str(root))
    yield url, process
    stop(process)


@pytest.mark.anyio
async def test_an_http_session_lists_and_calls_tools(
    http_server: tuple[str, subprocess.Popen[bytes]], root: Path
) -> None:
    url, _ = http_server
    (root / "note.txt").write_text("over http\n")
    async with http_session(url) as session:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"Read", "Bash", "Grep"} <= names
        result = await session.call_tool("Read", {"path": "note.txt"})
        assert not result.is_error and "over http" in result.content[0].text  # type: ignore[union-attr]


def test_requests_without_the_token_get_401(http_server: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = http_server
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    for headers in ({}, {"Authorization": "Bearer wrong"}):
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json", **headers}, method="POST"
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        assert caught.value.code == 401


def test_without_a_token_the_401_names_the_token_and_oauth_discovery_finds_nothing(
    http_server: tuple[str, subprocess.Popen[bytes]],
) -> None:
    """mcp-remote takes a 401 for OAuth: the discovery and registration paths say 404, and the
    401 itself says what to send."""
    url, _ = http_server
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    said = json.loads(caught.value.read())["error_description"]
    assert "Authorization: Bearer TOKEN" in said and "?token=TOKEN" in said
    base = url.split("/mcp")[0]
    for path in (
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-authorization-server",
        "/register",
    ):
        probe = urllib.request.Request(base + path, data=b"{}", headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(probe, timeout=10)
        assert missing.value.code == 404, path
        assert "does not sign clients in with OAuth" in json.loads(missing.value.read())["error_description"]


def test_a_foreign_host_header_is_refused(http_server: tuple[str, subprocess.Popen[bytes]]) -> None:
    url, _ = http_server
    request = urllib.request.Request(
        url,
        data=b"{}",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"Bearer {TOKEN}",
            "Host": "evil.example",
        },
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code in (403, 421)


def test_sigterm_stops_the_http_server_cleanly(http_server: tuple[str, subprocess.Popen[bytes]]) -> None:
    _, process = http_server
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=5) == 0


def test_binding_beyond_loopback_requires_a_token() -> None:
    env = server_env()
    env.pop("AWF_MCP_TOKEN", None)
    result = subprocess.run(
        server_command("serve", "--transport", "http", "--host", "0.0.0.0", "--port", "0"),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 1 and "pass --token" in result.stderr


def post_ping(url: str, headers: dict[str, str] | None = None) -> int:
    """The HTTP status of a JSON-RPC ping POSTed to ``url``."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **(headers or {}),
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return error.code


async def list_tool_names(url: str, headers: dict[str, str] | None = None) -> set[str]:
    client = httpx2.AsyncClient(headers=headers or {}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return {tool.name for tool in (await session.list_tools()).tools}


@pytest.mark.anyio
async def test_on_loopback_a_token_is_required_by_default_and_shown_in_the_url(root: Path) -> None:
    env = server_env()
    env.pop("AWF_MCP_TOKEN", None)
    url, process = start_http("--root", str(root), env=env)
    try:
        plain, _, query = url.partition("?")
        assert query.startswith("token=")
        token = query.removeprefix("token=")
        assert len(token) >= 32
        assert post_ping(plain) == 401
        assert post_ping(plain, {"Authorization": "Bearer wrong"}) == 401
        assert "Read" in await list_tool_names(url)  # the URL shown is all a client needs
        assert "Read" in await list_tool_names(plain, {"Authorization": f"Bearer {token}"})
    finally:
        logged = stop(process)
    kept = Path(env["XDG_STATE_HOME"]) / "awf-mcp" / "http.json"
    assert json.loads(kept.read_text())["token"] == token
    assert kept.stat().st_mode & 0o077 == 0
    assert f"the token is kept in {kept}" in logged
    url_again, process = start_http("--root", str(root), env=env)
    stop(process)
    assert url_again.endswith(f"?token={token}")  # kept: a configured client keeps working


def test_the_listening_line_is_information_not_a_warning(root: Path) -> None:
    process = subprocess.Popen(
        server_command("serve", "--transport", "http", "--port", "0", "--token", TOKEN, "--root", str(root)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=server_env(),
    )
    assert process.stderr is not None
    try:
        lines = [process.stderr.readline().decode()]
        while "listening on" not in lines[-1] and lines[-1]:
            lines.append(process.stderr.readline().decode())
    finally:
        stop(process)
    assert lines[-1].startswith("awf-mcp: INFO: listening on http://127.0.0.1:"), lines


@pytest.mark.anyio
async def test_no_token_serves_everyone_on_loopback_with_a_warning(root: Path) -> None:
    env = server_env()
    env.pop("AWF_MCP_TOKEN", None)
    url, process = start_http("--no-token", "--root", str(root), env=env)
    try:
        assert "?" not in url
        assert "Read" in await list_tool_names(url)
    finally:
        logged = stop(process)
    assert "WARNING" in logged and "without a token" in logged


def test_a_port_in_use_is_one_clear_line() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            server_command("serve", "--transport", "http", "--port", str(port), "--token", TOKEN),
            capture_output=True,
            text=True,
            env=server_env(),
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
    assert result.returncode == 1
    assert (
        result.stderr == f"awf-mcp: error: cannot listen on 127.0.0.1 port {port}: Address already in use\n"
    )
