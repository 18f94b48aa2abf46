"""``resources/read`` and ``prompts/get`` through awf-mcp against server-everything alone.

Run: ``PYTHONPATH=. python bench/offerings.py [CALLS]`` (needs ``npm ci --prefix tests/upstreams``).
Prints, for each method, sequential requests/s direct and through ``awf-mcp serve``, and the
added latency p50 and p99 (latency through awf-mcp minus the direct one), in one run,
interleaving the two connections' batches so that both see the same machine load.

FastMCP is not installed here: the ratio to its mounted proxy uses the figure recorded for
tools (206 calls/s sequential, same machine class), the nearest one there is.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from client import Connection

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests" / "upstreams" / "node_modules" / "@modelcontextprotocol" / "server-everything"
FASTMCP_MOUNTED_SEQUENTIAL = 206.0
BATCH = 50


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(conn: Connection, method: str, params: dict[str, object], count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        before = time.perf_counter()
        answer = conn.call(method, params)
        latencies.append(time.perf_counter() - before)
        if "error" in answer:
            raise SystemExit(f"{method} failed: {answer['error']}")
    return latencies


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    node = shutil.which("node")
    entry = EVERYTHING / "dist" / "index.js"
    if not node or not entry.exists():
        raise SystemExit("server-everything is not installed: npm ci --prefix tests/upstreams")
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        config = Path(home) / "awf-mcp.toml"  # outside the working directory: no approval needed
        config.write_text(f'[servers.everything]\ncommand = "{node}"\nargs = ["{entry}"]\n')
        env = {**os.environ, "AWF_MCP_NO_PLUGINS": "1", "XDG_STATE_HOME": str(Path(home) / "state")}
        awf = [sys.executable, "-m", "awf_mcp", "serve", "--no-builtins", "--config", str(config)]
        direct = Connection([node, str(entry)], env=env, cwd=cwd)
        proxied = Connection([*awf, "--log-level", "ERROR"], env=env, cwd=cwd)
        try:
            direct.handshake()
            proxied.handshake()
            work = {
                "resources/read": (
                    {"uri": "demo://resource/dynamic/text/1"},
                    {"uri": "demo://resource/dynamic/text/1"},
                ),
                "prompts/get": ({"name": "simple-prompt"}, {"name": "everything_simple-prompt"}),
            }
            for method, (plain, prefixed) in work.items():
                timed(direct, method, plain, BATCH)  # warm-up
                timed(proxied, method, prefixed, BATCH)
                alone: list[float] = []
                through: list[float] = []
                for _ in range(calls // BATCH):
                    alone += timed(direct, method, plain, BATCH)
                    through += timed(proxied, method, prefixed, BATCH)
                rate_alone = len(alone) / sum(alone)
                rate_through = len(through) / sum(through)
                added_p50 = (percentile(through, 0.5) - percentile(alone, 0.5)) * 1000
                added_p99 = (percentile(through, 0.99) - percentile(alone, 0.99)) * 1000
                print(f"{method}: {len(alone)} sequential requests each way")
                for label, rate, latencies in (
                    ("direct", rate_alone, alone),
                    ("through awf-mcp", rate_through, through),
                ):
                    p50 = percentile(latencies, 0.5) * 1000
                    print(f"  {label:<18} {rate:8.0f} req/s   p50 {p50:.3f} ms")
                print(f"  added latency      p50 {added_p50:.3f} ms   p99 {added_p99:.3f} ms")
                print(
                    f"  / FastMCP mounted (recorded {FASTMCP_MOUNTED_SEQUENTIAL:g}/s for tools): "
                    f"{rate_through / FASTMCP_MOUNTED_SEQUENTIAL:.2f} x"
                )
        finally:
            direct.kill()
            proxied.close_stdin_and_wait()


if __name__ == "__main__":
    main()
