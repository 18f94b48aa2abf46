"""``awf-mcp serve --transport http``: the SDK's Streamable HTTP client, bearer auth, binding rules."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.e2e
TOKEN = "test-token-123"


@pytest.fixture
def http_server(root: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    process = subprocess.Popen(
        server_command("serve", "--transport", "http", "--port", "0", "--token", TOKEN, "--root", str(root)),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env(),
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
    assert url, "the HTTP server did not report its address"
    yield url, process
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.anyio
async def test_an_http_session_lists_and_calls_tools(
    http_server: tuple[str, subprocess.Popen[bytes]], root: Path
) -> None:
    url, _ = http_server
    (root / "note.txt").write_text("over http\n")
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
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
