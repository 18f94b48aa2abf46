"""Memory of ``awf-mcp serve`` against hostile upstreams: prints figures, asserts nothing.

``python -m tests.upstreams.measure_hostile`` from the repository root (``PYTHONPATH`` picks
the awf_mcp measured). Each case starts ``serve`` with tests/upstreams/fake_upstream.py:

* ``pages``: 20 pages of ``tools/list``, each one tool with a 9 MB description;
* ``tools``: two tools with 6 MB descriptions (the size of the ``tools/list`` answer);
* ``instructions``: two servers with 6 MB ``instructions`` each (does ``initialize`` answer);
* ``progress``: one call sending 3,000 progress notifications of 100 KB while the agent reads
  nothing, until the upstream has sent them all.

Figures are the server's ``VmRSS`` (after) and ``VmHWM`` (peak) in MiB.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from tests.e2e.test_upstream import NO_PLUGINS, fake, write_config
from tests.helpers.harness import RawServer, wait_until


def mib(server: RawServer, field: str = "VmRSS") -> float:
    return server.rss_kib(field) / 1024


def serve(directory: Path, *tables: str) -> RawServer:
    config = write_config(directory, *tables)
    return RawServer("--config", config, env=NO_PLUGINS, cwd=directory)


def pages(directory: Path) -> str:
    with serve(directory, fake("fake", "good", directory, env={"FAKE_HUGE": "20:9000000"})) as server:
        server.initialize()
        listed = server.request("tools/list", timeout=120)
        count = len(listed.get("result", {}).get("tools", []))
        return f"tools/list: {count} tools; RSS {mib(server):.0f} MiB, peak {mib(server, 'VmHWM'):.0f} MiB"


def tools(directory: Path) -> str:
    with serve(directory, fake("fake", "good", directory, env={"FAKE_HUGE": "2:6000000"})) as server:
        server.initialize()
        server.next_id += 1
        server.send({"jsonrpc": "2.0", "id": server.next_id, "method": "tools/list"})
        raw = b""
        while b"\n" not in raw:
            raw += server.process.stdout.read1(1 << 20)  # type: ignore[union-attr]
        answer = "error" if b'"error"' in raw[:200] else "answer"
        return f"tools/list: {answer} of {len(raw.strip()):,} bytes; RSS {mib(server):.0f} MiB"


def instructions(directory: Path) -> str:
    huge = {"FAKE_INSTRUCTIONS_BYTES": "6000000"}
    with serve(
        directory, fake("one", "good", directory, env=huge), fake("two", "good", directory, env=huge)
    ) as server:
        reply = server.initialize()
        if "result" not in reply:
            return f"initialize: error {reply.get('error', {}).get('code')}; RSS {mib(server):.0f} MiB"
        size = len(reply["result"].get("instructions", "").encode())
        return f"initialize: answered, instructions of {size:,} bytes; RSS {mib(server):.0f} MiB"


def progress(directory: Path) -> str:
    with serve(directory, fake("fake", "good", directory)) as server:
        server.initialize()
        before = mib(server)
        call = {
            "name": "fake_progress",
            "arguments": {"count": 3000, "size": 100_000},
            "_meta": {"progressToken": 1},
        }
        server.send({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": call})
        wait_until(lambda: (directory / "progress-sent").exists(), timeout=300)
        wait_until(lambda: False, timeout=2)  # let the server take in what the pipe still holds
        after, peak = mib(server), mib(server, "VmHWM")
        received = 0
        while (message := server.receive(timeout=60)).get("id") != 7:
            received += message.get("method") == "notifications/progress"
        return (
            f"RSS {before:.0f} -> {after:.0f} MiB (peak {peak:.0f}) while the agent read nothing; "
            f"{received} of 3,000 notifications delivered"
        )


def main() -> None:
    cases = {"pages": pages, "tools": tools, "instructions": instructions, "progress": progress}
    for name in sys.argv[1:] or list(cases):
        with tempfile.TemporaryDirectory() as directory:
            print(f"{name}: {cases[name](Path(directory))}", flush=True)


if __name__ == "__main__":
    main()
