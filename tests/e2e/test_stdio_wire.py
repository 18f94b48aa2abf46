"""The agent's stdio against a real ``awf-mcp serve``: a slow reader, and one that never reads.

The server reads its stdin and writes its stdout on the event loop when they are
pipes (awf_mcp/wire/framing.py): a large answer goes out in several non-blocking
writes as the agent makes room. What each test proves:

* pipelined Reads of a 300 KB file, answered to an agent that reads 16 KB at a
  time with pauses: every answer arrives once, whole, with its own id;
* an agent that sends more than the pipe and the writer's backlog hold, closes
  stdin and never reads: the server still exits within a few seconds (input has
  ended, so shutdown stops waiting for the reader);
* a request past the in-flight limit is refused at once, and cancelled requests (which
  are never answered) give their places back;
* an agent that asks for 180 MB of answers and reads none: the server holds only the
  limit's worth (about 27 MiB of growth here; 178 MiB without the limit).
"""

from __future__ import annotations

import json
import os
import threading
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


def call_request(request_id: int, name: str, arguments: dict[str, object]) -> bytes:
    return json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    ).encode()


def cancel(request_id: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    ).encode()


def test_requests_past_the_limit_are_refused_and_cancelled_ones_free_their_place(tmp_path: Path) -> None:
    limit = 64  # awf_mcp.wire.stdio.REQUESTS_IN_FLIGHT_LIMIT
    with RawServer("--root", str(tmp_path), cwd=tmp_path) as server:
        server.initialize()
        sleeping = [3000 + index for index in range(limit)]
        server.send_lines([call_request(i, "testkit_sleep", {"seconds": 60}) for i in sleeping])
        server.send(call_request(3999, "testkit_echo", {"text": "one too many"}))
        refused = server.receive(timeout=20)
        assert refused["id"] == 3999, refused
        assert refused["error"]["code"] == -32603
        assert "already handling 64 requests" in refused["error"]["message"]
        server.send_lines([cancel(i) for i in sleeping])  # never answered: they must not keep their places
        server.send(call_request(4000, "testkit_echo", {"text": "room again"}))
        answer = server.receive(timeout=20)
        assert answer["id"] == 4000, answer
        assert answer["result"]["content"][0]["text"] == "room again"
        assert server.request("ping", timeout=20)["result"] == {}


def test_a_client_that_never_reads_cannot_make_the_server_hold_every_answer(tmp_path: Path) -> None:
    big_file(tmp_path)  # each Read answers about 300 KB
    with RawServer(*server_args(tmp_path), cwd=tmp_path, env=NO_PLUGINS) as server:
        server.initialize()
        before = server.rss_kib()
        requests = [read_request(5000 + index) for index in range(600)]
        sender = threading.Thread(target=server.send_lines, args=(requests,), daemon=True)
        sender.start()  # about 180 MB of answers asked for; the server stops reading once it is behind
        time.sleep(4)
        grown_mib = (server.rss_kib("VmHWM") - before) / 1024
        assert server.process.poll() is None, server.stderr()
    assert grown_mib < 100, f"the server grew by {grown_mib:.0f} MiB holding answers nobody reads"
