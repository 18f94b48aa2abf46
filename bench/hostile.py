"""Figures for the hostile inputs of docs/design/security-history.md ("Hostile inputs, round two").

``PYTHONPATH=. python bench/hostile.py [schemas] [results] [pages] [disk]`` (all four without
arguments) prints:

* ``schemas``: how long the call, a ``ping`` and a ``Read`` sent behind it take while an
  upstream's backtracking pattern is checked, and how long the exit after SIGTERM takes;
* ``results``: bytes of content a 9 MB item that is not plain text puts in a reply, at a
  10,000-byte budget;
* ``pages``: whether ``BashOutput`` returns every line of ``seq 1 N`` once and in order, in
  how many pages;
* ``disk``: files and bytes 224 background jobs of 19 MiB each leave, and the exit time.
"""

from __future__ import annotations

import glob
import math
import os
import random
import signal
import sys
import tempfile
import time
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from awf_mcp.builtins import BuiltinTools, Sandbox
from tests.e2e.test_hostile_schemas import EVIL_VALUE, call, start, wire_size
from tests.helpers.harness import RawServer
from tests.unit.test_builtins_jobs import read_everything


def schemas() -> None:
    halves = bytes(b"ab"[n & 1] for n in range(256))
    slow = random.Random(7).randbytes(8 << 20).translate(halves).decode()
    cases = [
        ("hostile_evil_input", {"name": EVIL_VALUE}, ()),
        ("hostile_evil_keys", {EVIL_VALUE: 1}, ()),
        ("hostile_evil_output", {"name": EVIL_VALUE}, ()),
        ("hostile_slow_input", {"name": slow}, ("--call-timeout", "1")),
    ]
    for name, arguments, extra in cases:
        server = start(Path(tempfile.mkdtemp()), *extra)
        sent = time.monotonic()
        call(server, 1, name, arguments)
        server.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        call(server, 3, "Read", {"path": "notes.txt"})
        answered: dict[int, float] = {}
        while len(answered) < 3:
            try:
                reply = server.receive(30)
            except AssertionError:
                break
            if reply.get("id") in (1, 2, 3):
                answered[reply["id"]] = time.monotonic() - sent
        call(server, 4, name, arguments)
        stopping = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        try:
            server.wait(10)
            exited = f"{time.monotonic() - stopping:.2f} s"
        except Exception:
            exited = "not within 10 s"
        server.kill()
        shown = ", ".join(
            f"{what} {answered.get(i, math.nan):.3f} s" for i, what in ((1, "call"), (2, "ping"), (3, "Read"))
        )
        print(f"{name}: {shown}; exit {exited} after SIGTERM")


def results() -> None:
    with start(Path(tempfile.mkdtemp()), "--output-budget", "10000") as server:
        for where in ("resource", "meta", "annotations", "link", "blob"):
            arguments = {"where": where, "size": 9_000_000}
            reply = server.request("tools/call", {"name": "hostile_fat", "arguments": arguments}, timeout=60)
            note = reply["result"]["content"][-1]["text"][:160]
            print(f"{where}: {wire_size(reply):,} bytes of content; {note}")


async def pages() -> None:
    for lines, budget in ((3000, 10_000), (10_000, 40_000), (100_000, 10_000)):
        tools = BuiltinTools(Sandbox([tempfile.mkdtemp()]))
        await tools.call_tool("Bash", {"command": f"seq 1 {lines}", "run_in_background": True})
        await anyio.sleep(0.5)
        stdout, _, count = await read_everything(tools, budget)
        whole = stdout.split() == [str(n) for n in range(1, lines + 1)]
        print(f"seq 1 {lines}, budget {budget:,}: every line once and in order: {whole}; {count} pages")
        await tools.close()


def disk() -> None:
    server = RawServer("--root", tempfile.mkdtemp(), env={"AWF_MCP_NO_PLUGINS": "1"})
    server.initialize()
    command = "head -c 19922944 /dev/zero | tr '\\0' y"
    for _ in range(224):
        while True:
            arguments = {"command": command, "run_in_background": True}
            reply = server.request("tools/call", {"name": "Bash", "arguments": arguments}, timeout=60)
            if "running already" not in reply["result"]["content"][0]["text"]:
                break
            time.sleep(0.05)
    time.sleep(3)
    directories = glob.glob(f"{tempfile.gettempdir()}/awf-mcp-{server.pid}-*")
    files = [os.path.join(d, name) for d in directories for name in os.listdir(d)]
    size = sum(os.path.getsize(path) for path in files)
    stopping = time.monotonic()
    server.process.send_signal(signal.SIGTERM)
    server.wait(10)
    took = time.monotonic() - stopping
    print(f"224 jobs: {len(files)} files, {size / 2**20:,.0f} MiB; exit {took:.2f} s after SIGTERM")


if __name__ == "__main__":
    chosen = sys.argv[1:] or ["schemas", "results", "pages", "disk"]
    for name in chosen:
        if name == "pages":
            anyio.run(pages)
        else:
            {"schemas": schemas, "results": results, "disk": disk}[name]()
