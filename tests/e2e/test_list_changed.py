"""An upstream's changed tools reach the agent on every protocol family and transport, end to end.

The upstream is tests/upstreams/changing_upstream.py (the SDK's own server, whose ``grow`` tool
adds a tool and sends ``notifications/tools/list_changed``); the agent is the SDK's own client.

* The stateless revision (2026-07-28: ``server/discover``, no back-channel) learns of a change only
  on a ``subscriptions/listen`` stream: ``server/discover`` advertises ``tools.listChanged`` when the
  tools can change, the stream gets the change, and the next ``tools/list`` has the new tool; on
  stdio and over Streamable HTTP. With nothing that can change, neither is advertised nor served.
* Handshake-era sessions over HTTP are told on their standalone GET stream, and ``initialize``
  advertises it there as on stdio (the stdio relay itself is proven in test_upstream.py).
* Open streams hold up no exit: stdin EOF ends a listen stream with its result (a graceful close,
  not an error), and SIGTERM of the HTTP server ends listen and GET streams alike.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import ServerEvent, ToolsListChanged, listen
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND, ToolListChangedNotification

from awf_mcp.wire.changes import LISTEN_LIMIT
from tests.helpers.harness import (
    RawServer,
    mcp_session,
    server_command,
    server_env,
    text_of,
    wait_until,
    write_approved,
)

pytestmark = pytest.mark.e2e

CHANGING = Path(__file__).resolve().parents[1] / "upstreams" / "changing_upstream.py"
NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}
TOKEN = "list-changed-token"
STATELESS = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": STATELESS,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def changing_config(directory: Path) -> str:
    """An ``awf-mcp.toml`` serving the changing upstream as ``chg``, not pinned: the tools it adds are
    served as they come (tests/e2e/test_pins.py holds them back when pinned)."""
    text = f'[servers.chg]\ncommand = "{sys.executable}"\nargs = ["{CHANGING}"]\npin = false\n'
    return str(write_approved(directory / "awf-mcp.toml", text))


async def names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


async def next_event(events: AsyncIterator[ServerEvent]) -> ServerEvent:
    with anyio.fail_after(10):
        return await events.__anext__()


@contextmanager
def http_serve(*args: str, cwd: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``awf-mcp serve --transport http ARGS`` on a free port: its ``/mcp`` URL and process.

    Stderr goes to a file (a pipe nobody reads would fill with the call log and block the server).
    """
    log = cwd / "http-stderr.txt"
    with log.open("wb") as errors:
        process = subprocess.Popen(
            server_command("serve", "--transport", "http", "--port", "0", "--token", TOKEN, *args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env=server_env(NO_PLUGINS),
            cwd=cwd,
        )
    try:
        assert wait_until(lambda: "listening on" in log.read_text() or process.poll() is not None, timeout=30)
        match = re.search(r"listening on (http://\S+)", log.read_text())
        assert match, f"the HTTP server did not start: {log.read_text()}"
        yield match.group(1), process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@asynccontextmanager
async def http_session(url: str, **callbacks: object) -> AsyncIterator[ClientSession]:
    """An SDK client session over Streamable HTTP, not yet opened (``initialize`` or ``discover``)."""
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write, **callbacks) as session,  # type: ignore[arg-type]
    ):
        yield session


# ---------------------------------------------------------------- the stateless revision, stdio


@pytest.mark.anyio
async def test_a_stateless_client_listening_on_stdio_is_told_and_lists_the_new_tool(tmp_path: Path) -> None:
    config = changing_config(tmp_path)
    async with mcp_session(
        "--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, stateless=True
    ) as session:
        discovered = session.discover_result
        assert discovered is not None and discovered.capabilities.tools is not None
        assert discovered.capabilities.tools.list_changed is True
        assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}
        async with listen(session, tools_list_changed=True) as changes:
            assert changes.honored.tools_list_changed is True
            assert text_of(await session.call_tool("chg_grow", {"name": "extra"})) == "ok"
            assert await next_event(changes) == ToolsListChanged()
            assert await names(session) == {"chg_wait", "chg_grow", "chg_drop", "chg_extra"}
            assert text_of(await session.call_tool("chg_extra", {})) == "I am extra"

            await session.call_tool("chg_drop", {"name": "extra"})
            assert await next_event(changes) == ToolsListChanged()
            assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}


@pytest.mark.anyio
async def test_with_nothing_that_can_change_neither_list_changed_nor_listen_is_offered(
    tmp_path: Path,
) -> None:
    async with mcp_session(cwd=tmp_path, env=NO_PLUGINS, stateless=True) as session:
        discovered = session.discover_result
        assert discovered is not None and discovered.capabilities.tools is not None
        assert not discovered.capabilities.tools.list_changed
        with pytest.raises(MCPError) as refused:
            async with listen(session, tools_list_changed=True):
                pass
        assert refused.value.error.code == METHOD_NOT_FOUND
        assert "Read" in await names(session)  # still serving
    async with mcp_session(cwd=tmp_path, env=NO_PLUGINS) as session:
        initialized = session.initialize_result
        assert initialized is not None and initialized.capabilities.tools is not None
        assert not initialized.capabilities.tools.list_changed


def test_stdin_eof_ends_an_open_listen_stream_with_its_result(tmp_path: Path) -> None:
    """The stream's last frame is its result, as a deliberate close; the server then exits."""
    config = changing_config(tmp_path)
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        assert server.request("server/discover", {"_meta": ENVELOPE})["result"]["capabilities"]["tools"] == {
            "listChanged": True
        }
        server.send(
            {
                "jsonrpc": "2.0",
                "id": "watch",
                "method": "subscriptions/listen",
                "params": {"_meta": ENVELOPE, "notifications": {"toolsListChanged": True}},
            }
        )
        acknowledged = server.receive()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"]["notifications"] == {"toolsListChanged": True}
        server.close_stdin()
        assert server.wait(5) == 0
        last = [line for line in server.read_rest().splitlines() if line.strip()][-1]
    assert b'"id":"watch","result"' in last, last
    assert b'"io.modelcontextprotocol/subscriptionId":"watch"' in last


def test_listen_streams_past_the_limit_are_refused_in_a_sentence_and_the_open_ones_still_told(
    tmp_path: Path,
) -> None:
    config = changing_config(tmp_path)
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.request("server/discover", {"_meta": ENVELOPE})
        listen_params = {"_meta": ENVELOPE, "notifications": {"toolsListChanged": True}}
        for number in range(LISTEN_LIMIT):
            server.send(
                {
                    "jsonrpc": "2.0",
                    "id": f"l{number}",
                    "method": "subscriptions/listen",
                    "params": listen_params,
                }
            )
        acknowledged = {server.receive()["params"]["_meta"][SUBSCRIPTION_ID] for _ in range(LISTEN_LIMIT)}
        assert len(acknowledged) == LISTEN_LIMIT
        refused = server.request("subscriptions/listen", listen_params)
        assert refused["error"]["message"] == (
            f"{LISTEN_LIMIT} subscriptions/listen streams are open, the most awf-mcp serves at once; "
            "end one before listening again"
        )
        called = server.request(
            "tools/call", {"_meta": ENVELOPE, "name": "chg_grow", "arguments": {"name": "extra"}}
        )
        assert called["result"]["content"] == [{"type": "text", "text": "ok"}]
        told = set()
        while len(told) < LISTEN_LIMIT:
            frame = server.receive()
            assert frame["method"] == "notifications/tools/list_changed", frame
            told.add(frame["params"]["_meta"][SUBSCRIPTION_ID])
        assert told == acknowledged
        server.close_stdin()
        assert server.wait(5) == 0
        assert server.read_rest().count(b'"result":{"_meta":{"io.modelcontextprotocol/subscriptionId"') == (
            LISTEN_LIMIT
        )


# ---------------------------------------------------------------- Streamable HTTP, both families


@pytest.mark.anyio
async def test_a_stateless_client_listening_over_http_is_told_and_lists_the_new_tool(tmp_path: Path) -> None:
    with http_serve("--config", changing_config(tmp_path), "--no-builtins", cwd=tmp_path) as (url, _):
        async with http_session(url) as session:
            discovered = await session.discover()
            assert discovered.capabilities.tools is not None and discovered.capabilities.tools.list_changed
            async with listen(session, tools_list_changed=True) as changes:
                assert text_of(await session.call_tool("chg_grow", {"name": "extra"})) == "ok"
                assert await next_event(changes) == ToolsListChanged()
                assert "chg_extra" in await names(session)
                assert text_of(await session.call_tool("chg_extra", {})) == "I am extra"


@pytest.mark.anyio
async def test_a_handshake_era_http_session_is_told_on_its_get_stream(tmp_path: Path) -> None:
    told: list[object] = []

    async def on_message(message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            told.append(message)

    with http_serve("--config", changing_config(tmp_path), "--no-builtins", cwd=tmp_path) as (url, _):
        async with http_session(url, message_handler=on_message) as session:
            initialized = await session.initialize()
            assert initialized.capabilities.tools is not None and initialized.capabilities.tools.list_changed
            assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}
            # The client opens its GET stream on its own after the handshake; a change sent before
            # it is open has nowhere to go, so grow tools until one is told (the first, normally).
            grown: list[str] = []
            with anyio.fail_after(20):
                while not told:
                    grown.append(f"extra{len(grown)}")
                    await session.call_tool("chg_grow", {"name": grown[-1]})
                    with anyio.move_on_after(2):
                        while not told:
                            await anyio.sleep(0.02)
            assert {f"chg_{name}" for name in grown} <= await names(session)


def test_sigterm_ends_open_listen_and_get_streams_and_the_http_server_exits(tmp_path: Path) -> None:
    """A stream held open by a client is a response in progress: shutdown ends it rather than waits."""
    ended: list[str] = []

    async def hold_streams_and_stop(url: str, process: subprocess.Popen[bytes]) -> float:
        async with http_session(url) as handshake, http_session(url) as stateless:
            await handshake.initialize()  # the client opens its standalone GET stream
            await handshake.list_tools()
            await stateless.discover()
            async with listen(stateless, tools_list_changed=True) as changes:
                await anyio.sleep(0.5)
                started = time.monotonic()
                process.send_signal(signal.SIGTERM)
                with anyio.fail_after(10):
                    async for _ in changes:
                        pass
                ended.append("listen")  # the loop ended: a graceful close, not SubscriptionLost
                while process.poll() is None and time.monotonic() - started < 10:
                    await anyio.sleep(0.05)
                return time.monotonic() - started

    with http_serve("--config", changing_config(tmp_path), "--no-builtins", cwd=tmp_path) as (url, process):
        took = anyio.run(hold_streams_and_stop, url, process)
        assert process.poll() == 0, f"the server still runs {took:.1f} s after SIGTERM"
    assert ended == ["listen"]
    assert took < 5
    assert "ERROR" not in (tmp_path / "http-stderr.txt").read_text()
