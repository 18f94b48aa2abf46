"""The agent's stdio against a real ``awf-mcp serve``: a slow reader, and one that never reads.

The server reads its stdin and writes its stdout on the event loop when they are
pipes (awf_mcp/wire/framing.py): a large answer goes out in several non-blocking
writes as the agent makes room. What each test proves:

* pipelined Reads of a 300 KB file, answered to an agent that reads 16 KB at a
  time with pauses: every answer arrives once, whole, with its own id;
* an agent that sends more than the pipe and the writer's backlog hold, closes
  stdin and never reads: the server still exits within a few seconds (input has
  ended, so shutdown stops waiting for the reader).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.helpers.harness import RawServer

NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}


def server_args(root: Path) -> tuple[str, ...]:
    return ("--root", str(root), "--output-budget", "1048576")


def big_file(root: Path) -> str:
    line = "the quick brown fox jumps over the lazy dog, line after line"
    text = "".join(f"{number:06d} {line}\n" for number in range(4000))
    (root / "big.txt").write_text(text, encoding="utf-8")
    return text


def read_request(request_id: int) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "Read", "arguments": {"path": "big.txt", "limit": 10000}},
        }
    ).encode()


def test_a_slow_reader_gets_every_large_answer_whole_and_once(tmp_path: Path) -> None:
    text = big_file(tmp_path)
    with RawServer(*server_args(tmp_path), cwd=tmp_path, env=NO_PLUGINS) as server:
        server.initialize()
        server.send_lines([read_request(1000 + index) for index in range(40)])
        assert server.process.stdout is not None
        fd = server.process.stdout.fileno()
        received = bytearray()
        deadline = time.monotonic() + 60
        while (answers := received.count(b"\n")) < 40:
            assert time.monotonic() < deadline, f"{answers} of 40 answers; {server.stderr()}"
            chunk = os.read(fd, 16 * 1024)
            assert chunk, server.stderr()
            received += chunk
            time.sleep(0.002)
        replies = [json.loads(line) for line in bytes(received).split(b"\n") if line]
    assert sorted(reply["id"] for reply in replies) == [1000 + index for index in range(40)]
    for reply in replies:
        assert reply["result"]["content"][0]["text"] == text, reply["id"]


def test_eof_with_a_reader_that_never_reads_still_ends_the_server(tmp_path: Path) -> None:
    big_file(tmp_path)
    with RawServer(*server_args(tmp_path), cwd=tmp_path, env=NO_PLUGINS) as server:
        server.initialize()
        server.send_lines([read_request(2000 + index) for index in range(60)])  # about 18 MB of answers
        time.sleep(2)  # answers pile up: the pipe is full and the writer's backlog is over its mark
        started = time.monotonic()
        server.close_stdin()
        code = server.wait(timeout=15)
        took = time.monotonic() - started
    assert code == 0, code
    assert took < 5, f"the server took {took:.1f} s to exit after EOF"
