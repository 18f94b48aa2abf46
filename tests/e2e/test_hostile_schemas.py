"""Hostile schemas and results from an upstream server: nothing it sends stalls the server.

tests/upstreams/hostile_upstream.py declares the pattern ``(a+)+$`` on an argument, on
argument names and on its structured result; Python's ``re`` takes hours to fail it on
forty ``a`` and a ``!``. While such a call is checked, ``ping`` and ``Read`` must be
answered, the call must end as an ``isError`` result, and SIGTERM must end the server.
Its results that are not plain text (an embedded resource's text, ``_meta``, annotations,
a ``resource_link``) must fit the client's output budget like text does.
"""

from __future__ import annotations

import json
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import RawServer

pytestmark = [pytest.mark.e2e]

HOSTILE = Path(__file__).resolve().parents[1] / "upstreams" / "hostile_upstream.py"
NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}
EVIL_VALUE = "a" * 40 + "!"

EVIL_CALLS = {
    "argument": ("hostile_evil_input", {"name": EVIL_VALUE}, "does not match '(a+)+$'"),
    "argument name": ("hostile_evil_keys", {EVIL_VALUE: 1}, "not match any of the regexes"),
    "structured result": ("hostile_evil_output", {"name": EVIL_VALUE}, "does not match its output schema"),
}


def start(tmp_path: Path, *extra: str) -> RawServer:
    """A server of the hostile upstream, configured by the user's own file (outside the project)."""
    config = tmp_path / "user" / "awf-mcp.toml"
    config.parent.mkdir(exist_ok=True)
    config.write_text(f'[servers.hostile]\ncommand = "{sys.executable}"\nargs = ["{HOSTILE}"]\n')
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    (root / "notes.txt").write_text("still here\n")
    server = RawServer("--config", str(config), "--root", str(root), *extra, env=NO_PLUGINS, cwd=root)
    server.initialize()
    names = [tool["name"] for tool in server.request("tools/list")["result"]["tools"]]
    assert "hostile_evil_input" in names, server.stderr()
    return server


def call(server: RawServer, request_id: int, name: str, arguments: dict[str, Any]) -> None:
    server.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


def replies(server: RawServer, ids: set[int], timeout: float) -> dict[int, dict[str, Any]]:
    """The replies to ``ids``, each within ``timeout`` seconds of the one before."""
    got: dict[int, dict[str, Any]] = {}
    while set(got) != ids:
        reply = server.receive(timeout)
        if reply.get("id") in ids:
            got[reply["id"]] = reply
    return got


def text(reply: dict[str, Any]) -> str:
    return "".join(item.get("text", "") for item in reply["result"]["content"])


@pytest.mark.parametrize("where", sorted(EVIL_CALLS))
def test_a_backtracking_pattern_stalls_nothing(tmp_path: Path, where: str) -> None:
    name, arguments, refusal = EVIL_CALLS[where]
    with start(tmp_path) as server:
        call(server, 1, name, arguments)
        server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        call(server, 3, "Read", {"path": "notes.txt"})
        got = replies(server, {1, 2, 3}, timeout=5)
        assert got[2]["result"] == {}
        assert "still here" in text(got[3])
        assert got[1]["result"]["isError"] is True and refusal in text(got[1]), got[1]
        call(server, 4, name, arguments)
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
        print(f"\n{where}: exit {time.monotonic() - started:.2f} s after SIGTERM")


def test_a_check_past_the_call_timeout_ends_the_call_and_stalls_nothing(tmp_path: Path) -> None:
    halves = bytes(b"ab"[n & 1] for n in range(256))
    value = random.Random(7).randbytes(8 << 20).translate(halves).decode()  # RE2 needs about 20 s here
    with start(tmp_path, "--call-timeout", "1") as server:
        call(server, 1, "hostile_slow_input", {"name": value})
        server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        call(server, 3, "Read", {"path": "notes.txt"})
        got = replies(server, {1, 2, 3}, timeout=10)
        assert got[2]["result"] == {} and "still here" in text(got[3])
        assert got[1]["result"]["isError"] is True
        assert "could not be checked against its input schema within 1 s" in text(got[1])
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
        print(f"\nexit {time.monotonic() - started:.2f} s after SIGTERM, the check still running")


def test_values_the_patterns_accept_pass_and_a_pattern_re2_refuses_is_not_run(tmp_path: Path) -> None:
    with start(tmp_path) as server:
        fine = server.request("tools/call", {"name": "hostile_evil_input", "arguments": {"name": "aaa"}})
        assert fine["result"].get("isError") is not True and text(fine) == "ok"
        keyed = server.request("tools/call", {"name": "hostile_evil_keys", "arguments": {"xaa": 1}})
        assert keyed["result"].get("isError") is not True, keyed
        structured = server.request(
            "tools/call", {"name": "hostile_evil_output", "arguments": {"name": "aa"}}
        )
        assert structured["result"]["structuredContent"] == {"name": "aa"}
        refused = server.request("tools/call", {"name": "hostile_lookahead", "arguments": {"name": "abc"}})
        assert refused["result"]["isError"] is True
        assert "pattern '^(?!x)' cannot be checked: RE2 refuses it" in text(refused)
        assert "cannot be checked" in server.stderr()


BUDGET = 10_000
FAT = 9_000_000


def wire_size(reply: dict[str, Any]) -> int:
    return len(json.dumps(reply["result"]["content"], ensure_ascii=False).encode())


@pytest.mark.parametrize("where", ["resource", "meta", "annotations", "link", "blob"])
def test_items_that_are_not_plain_text_fit_the_budget(tmp_path: Path, where: str) -> None:
    with start(tmp_path, "--output-budget", str(BUDGET)) as server:
        reply = server.request(
            "tools/call", {"name": "hostile_fat", "arguments": {"where": where, "size": FAT}}, timeout=30
        )
        result = reply["result"]
        assert wire_size(reply) <= BUDGET + 1_000, (where, wire_size(reply))
        assert result["content"][0] == {"type": "text", "text": "first"}
        assert "fit this client's output budget of 10,000 bytes" in result["content"][-1]["text"]
        small = server.request(
            "tools/call", {"name": "hostile_fat", "arguments": {"where": where, "size": 100}}
        )
        kept = small["result"]["content"]
        assert len(kept) == 2 and wire_size(small) > 100, kept  # within the budget: whole


def test_images_travel_whole_past_the_budget(tmp_path: Path) -> None:
    with start(tmp_path, "--output-budget", str(BUDGET)) as server:
        reply = server.request(
            "tools/call", {"name": "hostile_fat", "arguments": {"where": "image", "size": 100_000}}
        )
        assert [item["type"] for item in reply["result"]["content"]] == ["text", "image"]
