"""Hostile inputs to Glob and Grep, end to end against a real ``awf-mcp serve``.

What each test proves:

* a file name that is not valid UTF-8 (and one with a newline) is listed and
  searched with its bytes escaped, and the server keeps serving (it used to
  exit on the first such name);
* a Grep over a file of 1 MiB lines with 20 hard links answers with one frame
  of at most the output budget plus its envelope (it used to be 210 MiB);
* a cancelled Glob and a cancelled or timed-out Grep of an endless sparse file
  stop burning CPU at once: the server's CPU time (``/proc``) stays flat after
  the cancellation while it had been climbing before it;
* a cancelled search on ripgrep kills ``rg`` at once, and ``rg`` never reads a
  config file planted through ``RIPGREP_CONFIG_PATH``;
* the 3.8 KB brace pattern that used to cost minutes of expansion is refused
  in well under a second, for Glob and for Grep's ``glob``.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.builtins.limits import SEARCH_OUTPUT_BYTES
from tests.helpers.harness import RawServer, children_of, mcp_session, text_of, wait_until

pytestmark = pytest.mark.e2e

NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}
HOSTILE_BRACES = "{a,b}" * 9 + "/" + "/".join(["{" * 250] * 15)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` and its descendants (the one-file binary's child)."""
    total = 0
    for each in (pid, *children_of(pid)):
        try:
            fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])
    return total / os.sysconf("SC_CLK_TCK")


def start_call(server: RawServer, name: str, arguments: dict[str, Any]) -> int:
    """Send a tools/call without waiting; returns its id."""
    server.next_id += 1
    server.send(
        {
            "jsonrpc": "2.0",
            "id": server.next_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )
    return server.next_id


def cancel(server: RawServer, request_id: int) -> None:
    server.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "test"},
        }
    )


def call(server: RawServer, name: str, arguments: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
    result: dict[str, Any] = server.request(
        "tools/call", {"name": name, "arguments": arguments}, timeout=timeout
    )["result"]
    return result


def assert_stops_burning_cpu(server: RawServer, stop: Any) -> None:
    """The call started on ``server`` keeps a core busy until ``stop()``, and not after."""
    busy_from = cpu_seconds(server.pid)
    time.sleep(1.0)
    busy = cpu_seconds(server.pid) - busy_from
    assert busy > 0.3, f"the call was not running before it was stopped ({busy:.2f} s CPU in 1 s)"
    stop()
    time.sleep(0.5)
    idle_from = cpu_seconds(server.pid)
    time.sleep(2.0)
    after = cpu_seconds(server.pid) - idle_from
    assert after < 0.3, f"the server burned {after:.2f} s of CPU in the 2 s after the call was stopped"
    assert call(server, "Glob", {"pattern": "*.none"})["content"][0]["text"].startswith("No files match")


@pytest.mark.anyio
async def test_a_non_utf8_name_is_escaped_and_the_server_keeps_serving(root: Path) -> None:
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("needle\n")
    (root / "two\nlines.txt").write_text("needle\n")
    (root / "plain.txt").write_text("needle\n")
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
        grep = await session.call_tool("Grep", {"pattern": "needle"})
        assert not grep.is_error
        assert sorted(text_of(grep).split("\n")) == [
            "caf\\xe9.txt:1:needle",
            "plain.txt:1:needle",
            "two\\x0alines.txt:1:needle",
        ]
        glob = await session.call_tool("Glob", {"pattern": "*"})
        assert sorted(text_of(glob).split("\n")) == ["caf\\xe9.txt", "plain.txt", "two\\x0alines.txt"]
        listed = await session.call_tool("Grep", {"pattern": "needle", "output_mode": "files_with_matches"})
        assert "caf\\xe9.txt" in text_of(listed).split("\n")
        read = await session.call_tool("Read", {"path": "plain.txt"})
        assert not read.is_error and "needle" in text_of(read)


def test_grep_of_hard_linked_files_with_huge_lines_answers_within_the_budget(root: Path) -> None:
    line = b"needle " + b"x" * (1024 * 1024 - 100) + b"\n"
    (root / "big.txt").write_bytes(line * 10)
    for index in range(20):
        os.link(root / "big.txt", root / f"link{index:02d}.txt")
    with RawServer("--root", str(root), cwd=root, env=NO_PLUGINS) as server:
        server.initialize()
        reply = server.request("tools/call", {"name": "Grep", "arguments": {"pattern": "needle"}}, timeout=60)
        frame = len(json.dumps(reply).encode())
        text = reply["result"]["content"][0]["text"]
        assert not reply["result"]["isError"]
        assert frame < SEARCH_OUTPUT_BYTES + 64 * 1024, frame
        assert text.split("\n")[0].startswith("big.txt:1:needle xxx")
        assert "line cut" in text.split("\n")[0]
        assert server.rss_kib("VmHWM") < 400 * 1024


def test_a_cancelled_glob_stops_its_walk(root: Path) -> None:
    deep = root / "/".join(["dd"] * 40)
    deep.mkdir(parents=True)
    (deep / "target.txt").touch()
    for index in range(30_000):
        os.symlink("target.txt", deep / f"l{index}")
    python_engine = {**NO_PLUGINS, "AWF_MCP_SEARCH_ENGINE": "python"}  # rg lists links without resolving them
    with RawServer("--root", str(root), cwd=root, env=python_engine) as server:
        server.initialize()
        request_id = start_call(server, "Glob", {"pattern": "**/*.x"})
        assert_stops_burning_cpu(server, lambda: cancel(server, request_id))


def test_a_cancelled_grep_of_an_endless_sparse_file_stops_reading(root: Path) -> None:
    with (root / "sparse.txt").open("wb") as sparse:
        sparse.write(b"needle\n" * 10 + b"other\n" * 2000)  # text past the binary sniff, a small answer
        sparse.truncate(1 << 40)
    with RawServer("--root", str(root), cwd=root, env=NO_PLUGINS) as server:
        server.initialize()
        request_id = start_call(server, "Grep", {"pattern": "needle", "path": "sparse.txt"})
        assert_stops_burning_cpu(server, lambda: cancel(server, request_id))


def test_a_timed_out_grep_of_an_endless_sparse_file_stops_reading(root: Path) -> None:
    with (root / "sparse.txt").open("wb") as sparse:
        sparse.write(b"needle\n" * 10 + b"other\n" * 2000)  # text past the binary sniff, a small answer
        sparse.truncate(1 << 40)
    with RawServer("--root", str(root), "--call-timeout", "1.5", cwd=root, env=NO_PLUGINS) as server:
        server.initialize()
        request_id = start_call(server, "Grep", {"pattern": "needle", "path": "sparse.txt"})

        def wait_for_timeout() -> None:
            reply = server.receive(timeout=10)
            assert reply.get("id") == request_id, reply
            assert reply["result"]["isError"] and "timed out" in reply["result"]["content"][0]["text"]

        assert_stops_burning_cpu(server, wait_for_timeout)


@pytest.mark.anyio
async def test_the_hostile_brace_pattern_is_refused_at_once(root: Path) -> None:
    (root / "x.txt").write_text("needle\n")
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
        for name, arguments in (
            ("Glob", {"pattern": HOSTILE_BRACES}),
            ("Grep", {"pattern": "needle", "glob": HOSTILE_BRACES}),
        ):
            with anyio.fail_after(5):
                started = time.monotonic()
                result = await session.call_tool(name, arguments)
                elapsed = time.monotonic() - started
            assert result.is_error and "expands to more than 65,536 characters" in text_of(result)
            assert elapsed < 2.0, elapsed
        glob = await session.call_tool("Glob", {"pattern": "[z-a]"})
        assert glob.is_error and text_of(glob) == (
            "invalid glob pattern '[z-a]': the character range z-a runs backwards "
            "(write the lower character first, e.g. a-z)"
        )
        assert text_of(await session.call_tool("Glob", {"pattern": "*.txt"})) == "x.txt"


def rg_children(pid: int) -> list[int]:
    found = []
    for child in children_of(pid):
        with contextlib.suppress(OSError):
            if Path(f"/proc/{child}/comm").read_text().strip() == "rg":
                found.append(child)
    return found


def test_a_cancelled_ripgrep_search_kills_rg_at_once(root: Path) -> None:
    line = b"".join(b"word%05d " % index for index in range(100)) + b"\n"
    (root / "big.txt").write_bytes(line * (48 * 1024 * 1024 // len(line)))
    for index in range(64):
        os.link(root / "big.txt", root / f"link{index:02d}.txt")
    with RawServer("--root", str(root), cwd=root, env=NO_PLUGINS) as server:
        server.initialize()
        request_id = start_call(
            server, "Grep", {"pattern": r"\w{3}\d{3}\s\w{7}\d\W{2}", "output_mode": "count"}
        )
        assert wait_until(lambda: bool(rg_children(server.pid)), timeout=10), "rg never started"
        assert_stops_burning_cpu(server, lambda: cancel(server, request_id))
        assert rg_children(server.pid) == []


@pytest.mark.anyio
async def test_rg_reads_no_config_file_the_agent_planted(root: Path) -> None:
    (root / "rgconfig").write_text("--ignore-case\n--no-ignore\n")
    (root / ".gitignore").write_text("ignored.txt\n")
    (root / "ignored.txt").write_text("todo ignored\n")
    (root / "a.txt").write_text("todo lower\nTODO upper\n")
    env = {**NO_PLUGINS, "RIPGREP_CONFIG_PATH": str(root / "rgconfig")}
    async with mcp_session("--root", str(root), cwd=root, env=env) as session:
        found = await session.call_tool("Grep", {"pattern": "TODO"})
        assert text_of(found) == "a.txt:2:TODO upper"
