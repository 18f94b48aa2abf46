"""Hostile output and input at the wire, end to end through a real ``awf-mcp serve``.

Strings a plugin returns that JSON cannot carry (lone surrogates, as undecodable
file names arrive), results far over the 10 MiB frame limit, and input lines
whose JSON is too deep or whose numbers are too long: each gets one clear
answer, no frame over the limit leaves the server, and the server keeps serving.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Any

import pytest

from tests.helpers.harness import RawServer, mcp_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("testkit")]

PLUGINS_ONLY = ("--no-builtins",)
LIMIT = 10 * 1024 * 1024


@pytest.fixture
def server() -> Any:
    with RawServer(*PLUGINS_ONLY) as raw:
        raw.initialize()
        yield raw


def raw_line(server: RawServer, timeout: float = 30.0) -> bytes:
    """The next line the server writes, as bytes (to check its size and encoding)."""
    assert server.process.stdout is not None
    fd = server.process.stdout.fileno()
    pending = bytearray()
    deadline = time.monotonic() + timeout
    while b"\n" not in pending:
        remaining = deadline - time.monotonic()
        assert remaining > 0, "no reply in time"
        if select.select([fd], [], [], remaining)[0]:
            chunk = os.read(fd, 1 << 20)
            assert chunk, f"server closed stdout; stderr: {server.stderr()}"
            pending += chunk
    line, _, rest = bytes(pending).partition(b"\n")
    assert not rest, "one reply expected"
    return line


def call(server: RawServer, name: str, arguments: dict[str, Any], request_id: int) -> bytes:
    server.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    return raw_line(server)


# ---------------------------------------------------------------- strings JSON cannot carry


@pytest.mark.anyio
async def test_lone_surrogates_from_a_plugin_are_escaped_and_the_server_keeps_serving() -> None:
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with mcp_session(*PLUGINS_ONLY) as session:
        result = await session.call_tool("testkit_surrogates", {}, progress_callback=on_progress)
        assert not result.is_error
        assert text_of(result) == "found caf\\xe9.txt and \\ud800"
        assert result.structured_content == {"caf\\xe9.txt": ["caf\\xe9.txt", {"\\udfff": 1}]}
        failed = await session.call_tool("testkit_surrogates", {"raise": True})
        assert failed.is_error and text_of(failed) == "cannot open caf\\xe9.txt"
        assert (await session.call_tool("testkit_echo", {"text": "still here"})).content
        assert "found caf\\xe9.txt" in progress


def test_raw_frames_with_surrogates_are_valid_utf8(server: RawServer) -> None:
    line = call(server, "testkit_surrogates", {}, 1)
    line.decode("utf-8")  # strict: a lone surrogate would not decode
    reply = json.loads(line)
    assert reply["id"] == 1 and "caf\\xe9.txt" in reply["result"]["content"][0]["text"]
    unknown = call(server, "nope_\udce9", {}, 2)  # json.dumps escapes it; the SDK refuses the line
    assert json.loads(unknown)["error"]["code"] in (-32700, -32602)
    assert server.request("ping")["result"] == {}
    assert server.process.poll() is None


# ---------------------------------------------------------------- results over the frame limit


@pytest.mark.parametrize("where", ["text", "structured", "items", "image"])
def test_a_50_mib_result_never_makes_a_frame_over_the_limit(server: RawServer, where: str) -> None:
    """Text is cut to the output budget, structured content over it is refused, and what the
    budget does not count (an image) is refused at the frame limit: never a frame over 10 MiB."""
    size = 50 * 1024 * 1024
    server.request("tools/list")
    baseline = server.rss_kib()
    if where == "image":
        line = call(server, "testkit_big_image", {"size": size}, 7)
    else:
        line = call(server, "testkit_big", {"size": size, "where": where}, 7)
    assert len(line) <= LIMIT
    reply = json.loads(line)
    assert reply["id"] == 7
    message = reply["result"]["content"][-1]["text"]
    if where in ("text", "items"):
        assert reply["result"].get("isError") is not True and message.startswith("[awf-mcp: output cut")
    elif where == "structured":
        assert reply["result"]["isError"] is True and "structured content" in message
    else:
        assert reply["result"]["isError"] is True
        assert "testkit_big_image" in message and "10,485,760-byte" in message and "at least" in message
    # the tool itself holds 50 MiB (and json.dumps of the result is never built whole)
    peak_growth_mib = (server.rss_kib("VmHWM") - baseline) / 1024
    assert peak_growth_mib < 160, f"RSS peak grew by {peak_growth_mib:.0f} MiB"
    assert server.request("ping")["result"] == {}


def test_a_result_just_under_the_limit_is_sent_whole(server: RawServer) -> None:
    size = 9 * 1024 * 1024
    line = call(server, "testkit_big_image", {"size": size}, 8)
    assert size < len(line) <= LIMIT
    assert json.loads(line)["result"]["content"][0]["data"] == "A" * size


# ---------------------------------------------------------------- input lines: say what is wrong


@pytest.mark.parametrize("depth", [210, 5000])
def test_deeply_nested_json_gets_a_parse_error_saying_so(server: RawServer, depth: int) -> None:
    server.send(
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"[" * depth + b"]" * depth + b"}}"
    )
    error = server.receive()["error"]
    assert error["code"] == -32700 and "nested too deeply" in error["message"]
    assert server.request("ping")["result"] == {}


def test_a_5000_digit_number_gets_a_parse_error_saying_so(server: RawServer) -> None:
    server.send(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + b"9" * 5000 + b"}}")
    error = server.receive()["error"]
    assert error["code"] == -32700 and "number is too long" in error["message"]
    assert server.request("ping")["result"] == {}
