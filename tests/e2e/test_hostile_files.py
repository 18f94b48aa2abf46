"""Hostile files and commands against a real ``awf-mcp serve``: the server survives, answers in
bounded frames, stops abandoned work, loses no edit, and leaves no process behind.

Plugins are off; each test has its own root. Raw JSON lines (:class:`RawServer`) are
used where the test needs the frame's bytes, parallel calls or signals.
"""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import RawServer, marked_pids, wait_until

pytestmark = pytest.mark.e2e

NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}


def call(server: RawServer, tool: str, arguments: dict[str, Any], timeout: float = 30) -> tuple[bool, str]:
    """(isError, text) of one tools/call."""
    reply = server.request("tools/call", {"name": tool, "arguments": arguments}, timeout=timeout)
    result = reply["result"]
    return bool(result.get("isError")), "".join(item.get("text", "") for item in result["content"])


def test_a_symlink_to_a_non_utf8_path_outside_is_refused_and_the_server_lives(
    tmp_path: Path, root: Path
) -> None:
    outside = os.fsencode(tmp_path) + b"/caf\xe9.txt"
    with open(outside, "wb") as handle:
        handle.write(b"secret\n")
    os.symlink(outside, os.fsencode(root) + b"/lnk")
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        failed, text = call(server, "Read", {"path": "lnk"})
        assert failed and "outside the root" in text
        assert "caf\\xe9.txt" in text and "secret" not in text
        assert call(server, "Bash", {"command": "echo alive"}) == (
            False,
            "exit code 0\n--- stdout ---\nalive",
        )


def test_reading_a_latin1_file_stays_within_the_frame_budget(root: Path) -> None:
    (root / "latin.txt").write_bytes((b"caf\xe9 " + b"\xe9" * 70 + b"\n") * 60_000)
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {"name": "Read", "arguments": {"path": "latin.txt", "limit": 1_000_000}},
            }
        )
        assert server.process.stdout is not None
        fd = server.process.stdout.fileno()
        frame = bytearray()
        deadline = time.monotonic() + 30
        while not frame.endswith(b"\n") and time.monotonic() < deadline:
            frame += os.read(fd, 1 << 20)
        assert frame.endswith(b"\n")
        assert len(frame) < 6.5 * 1024 * 1024
        assert b"more follow: call Read with offset=" in frame


def _read_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar")


def test_a_cancelled_read_of_a_huge_sparse_file_stops_reading(root: Path) -> None:
    huge = root / "sparse.txt"
    with huge.open("wb") as handle:
        handle.write(b"a" * 10_000)  # no NUL in the sniffed head, and no newline
        handle.truncate(16 * 1024**4 - 4096)
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "tools/call",
                "params": {"name": "Read", "arguments": {"path": "sparse.txt", "offset": 1}},
            }
        )
        assert wait_until(lambda: _read_bytes(server.pid) > 200 * 1024 * 1024, timeout=20)
        server.send(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9, "reason": "t"}}
        )
        time.sleep(1.0)
        before = _read_bytes(server.pid)
        time.sleep(1.0)
        assert _read_bytes(server.pid) - before < 16 * 1024 * 1024
        assert call(server, "Bash", {"command": "echo alive"})[1].endswith("alive")


def test_parallel_edits_of_one_file_all_land(root: Path) -> None:
    lines = [f"line {index:05d} " + "x" * 40 for index in range(4000)]
    target = root / "big.txt"
    target.write_text("\n".join(lines) + "\n")
    edits = list(range(0, 4000, 200))
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        server.send_lines(
            [
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 1000 + n,
                        "method": "tools/call",
                        "params": {
                            "name": "Edit",
                            "arguments": {
                                "path": "big.txt",
                                "old": f"line {n:05d} ",
                                "new": f"EDITED {n:05d} ",
                            },
                        },
                    }
                ).encode()
                for n in edits
            ]
        )
        replies = [server.receive(60) for _ in edits]
    assert all(not reply["result"].get("isError") for reply in replies), replies
    assert all("OK: replaced 1 occurrence" in reply["result"]["content"][0]["text"] for reply in replies)
    text = target.read_text()
    assert [n for n in edits if f"EDITED {n:05d} " not in text] == []


ESCAPERS = {
    "setsid &": "setsid sh -c 'sleep 301; : {m}' &",
    "setsid -f": "setsid -f sh -c 'sleep 302; : {m}'",
    "nohup setsid": "nohup setsid sh -c 'sleep 303; : {m}' >/dev/null 2>&1 &",
    "fork then setsid": "python3 -c 'import os,time; os.fork() or (os.setsid(), time.sleep(304))' {m} &",
}


def _escapers(marker: str) -> str:
    return "\n".join(command.format(m=marker) for command in ESCAPERS.values())


def _sleeps(marker: str) -> list[int]:
    """Marked processes other than the shell and the keeper (whose command lines hold the marker too)."""
    found = []
    for pid in marked_pids(marker):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:  # it exited since the scan
            continue
        if b"children.py" not in cmdline and not cmdline.startswith(b"/bin/bash\0-c"):
            found.append(pid)
    return found


def _gone(marker: str) -> bool:
    return wait_until(lambda: marked_pids(marker) == [], timeout=10)


@pytest.mark.parametrize("ending", ["exit", "timeout"])
def test_detached_processes_end_with_their_call(root: Path, ending: str) -> None:
    marker = f"awf-e2e-{uuid.uuid4().hex}"
    tail = "\nsleep 300" if ending == "timeout" else "\nsleep 1; echo ready"
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        failed, text = call(server, "Bash", {"command": _escapers(marker) + tail, "timeout_seconds": 3})
        if ending == "timeout":
            assert failed and text.startswith("timed out after 3 s"), text
        else:
            assert not failed and text.startswith("exit code 0\n--- stdout ---\nready"), text
        assert _gone(marker), marked_pids(marker)
        assert call(server, "Bash", {"command": "echo alive"})[1].endswith("alive")


@pytest.mark.parametrize("ending", ["eof", "sigterm", "kill -9"])
def test_no_process_outlives_the_server(root: Path, ending: str) -> None:
    marker = f"awf-e2e-{uuid.uuid4().hex}"
    with RawServer("--root", str(root), env=NO_PLUGINS) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 5,
                "method": "tools/call",
                "params": {"name": "Bash", "arguments": {"command": _escapers(marker) + "\nsleep 300"}},
            }
        )
        assert wait_until(lambda: len(_sleeps(marker)) >= len(ESCAPERS), timeout=20), marked_pids(marker)
        if ending == "eof":
            server.close_stdin()
        elif ending == "sigterm":
            server.process.send_signal(signal.SIGTERM)
        else:
            server.process.kill()
        server.wait(10)
        assert _gone(marker), marked_pids(marker)
