"""The memory floor of a session process: what a forked process serving the MCP Python SDK's
bare low-level server costs of its own, however little it does.

``python bench/session_floor.py [--sessions N] [--calls N]`` imports the SDK and
``bench/bare_server.py`` once, freezes the collector (as the shared server does before it
forks), then forks N sessions, each serving the bare server on pipes. Each gets ``initialize``,
``tools/list`` and ``--calls`` calls of its one tool. It prints each session's
``Private_Dirty`` and ``Pss`` (``/proc/PID/smaps_rollup``) and the parent's.

``Private_Dirty`` is memory no other process shares: pages of the parent's heap that the
session wrote (reference counts of every object a request touches, new objects placed in free
slots of shared pages) and what it allocated itself. Any design with a process per session
pays it per session, before awf-mcp's own work: it bounds how close N sessions can come to one
(``bench/shared.py``'s memory figure).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import signal
import statistics
import sys
from pathlib import Path
from typing import Any, BinaryIO

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bare_server


def rollup(pid: int) -> dict[str, int]:
    """KiB of ``Private_Dirty`` and ``Pss`` of ``pid``."""
    figures: dict[str, int] = {}
    with open(f"/proc/{pid}/smaps_rollup") as lines:
        for text in lines:
            key, _, value = text.partition(":")
            if key in ("Private_Dirty", "Pss"):
                figures[key] = int(value.split()[0])
    return figures


def _serve(stdin: int, stdout: int) -> None:
    """In the forked session: the bare server on these descriptors, until killed."""
    os.dup2(stdin, 0)
    os.dup2(stdout, 1)
    try:
        anyio.run(bare_server.main)
    finally:
        os._exit(0)


def _drive(to_session: BinaryIO, from_session: BinaryIO, calls: int) -> None:
    def ask(message: dict[str, Any]) -> None:
        to_session.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        to_session.flush()
        if "id" in message:
            from_session.readline()

    capabilities = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "f", "version": "1"},
    }
    ask({"id": 1, "method": "initialize", "params": capabilities})
    ask({"method": "notifications/initialized"})
    ask({"id": 2, "method": "tools/list"})
    for index in range(calls):
        ask({"id": 3 + index, "method": "tools/call", "params": {"name": "read", "arguments": {}}})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=4, help="sessions to fork (default 4)")
    parser.add_argument("--calls", type=int, default=20, help="tool calls each session answers (default 20)")
    args = parser.parse_args()
    gc.collect()
    gc.freeze()
    sessions: list[tuple[int, BinaryIO, BinaryIO]] = []
    try:
        for _ in range(args.sessions):
            request_read, request_write = os.pipe()
            answer_read, answer_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                _serve(request_read, answer_write)
            os.close(request_read)
            os.close(answer_write)
            to_session: BinaryIO = os.fdopen(request_write, "wb")
            from_session: BinaryIO = os.fdopen(answer_read, "rb")
            sessions.append((pid, to_session, from_session))
            _drive(to_session, from_session, args.calls)
        parent = rollup(os.getpid())
        mib = {key: value / 1024 for key, value in parent.items()}
        print(f"parent: Private_Dirty {mib['Private_Dirty']:.1f} MiB, Pss {mib['Pss']:.1f} MiB")
        private = []
        for pid, _, _ in sessions:
            figures = rollup(pid)
            private.append(figures["Private_Dirty"] / 1024)
            print(
                f"session {pid}: Private_Dirty {figures['Private_Dirty'] / 1024:.1f} MiB, "
                f"Pss {figures['Pss'] / 1024:.1f} MiB"
            )
        own = statistics.median(private)
        print(f"a session process's own memory, p50: {own:.1f} MiB (after {args.calls} calls)")
    finally:
        for pid, to_session, from_session in sessions:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            to_session.close()
            from_session.close()


if __name__ == "__main__":
    main()
