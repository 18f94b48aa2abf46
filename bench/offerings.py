"""``resources/read``, ``prompts/get`` and ``completion/complete`` of server-everything: direct,
through awf-mcp, and through FastMCP's mounted proxy of the same server, in one run.

Run: ``PYTHONPATH=. python bench/offerings.py [CALLS]`` (needs ``npm ci --prefix tests/upstreams``).
Prints, for each method, sequential requests/s and p50 latency of each connection, the latency
each proxy adds (p50 and p99, its latency minus the direct one), and awf-mcp's rate over
FastMCP's. The connections' batches are interleaved so that all see the same machine load.

FastMCP (``fastmcp`` 4.x from PyPI) is never installed into awf-mcp's environment: it lives in
a private venv, ``$AWF_MCP_BENCH_FASTMCP_VENV`` or ``$XDG_CACHE_HOME/awf-mcp/bench/fastmcp-venv``
(``~/.cache`` without ``XDG_CACHE_HOME``), made with ``pip install 'fastmcp>=4,<5'`` on the first
run and reused after. Its proxy runs there as a subprocess: one ``FastMCP`` server with
``create_proxy`` of server-everything mounted under the namespace ``everything`` (so its names are
``everything_<prompt>`` and ``demo://everything/...``). When it cannot be installed or started, the
bench says so and prints awf-mcp's figures alone; a method FastMCP's proxy does not serve is
printed as such, with its answer.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from client import Connection, ServerError

REPO = Path(__file__).resolve().parent.parent
EVERYTHING = REPO / "tests" / "upstreams" / "node_modules" / "@modelcontextprotocol" / "server-everything"
BATCH = 50
FASTMCP_REQUIREMENT = "fastmcp>=4,<5"
FASTMCP_PROXY = """\
import sys

from fastmcp import FastMCP
from fastmcp.server import create_proxy

command, *args = sys.argv[1:]
gateway = FastMCP("gateway")
upstream = create_proxy({"mcpServers": {"everything": {"command": command, "args": args}}})
gateway.mount(upstream, namespace="everything")
gateway.run(show_banner=False)
"""


def fastmcp_venv() -> Path:
    """Where FastMCP's private venv is (see the module docstring)."""
    chosen = os.environ.get("AWF_MCP_BENCH_FASTMCP_VENV")
    if chosen:
        return Path(chosen)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "awf-mcp" / "bench" / "fastmcp-venv"


def fastmcp_python() -> tuple[Path | None, str]:
    """The private venv's interpreter with FastMCP importable (made on first use), and its version;
    ``None`` and the reason when it cannot be had."""
    venv = fastmcp_venv()
    python = venv / "bin" / "python"

    def version() -> str | None:
        if not python.exists():
            return None
        probe = subprocess.run(
            [str(python), "-c", "import fastmcp; print(fastmcp.__version__)"],
            capture_output=True,
            text=True,
            check=False,
        )
        return probe.stdout.strip() if probe.returncode == 0 else None

    found = version()
    if found:
        return python, found
    print(f"installing {FASTMCP_REQUIREMENT} into its own venv {venv} (once) ...", flush=True)
    for step in (
        [sys.executable, "-m", "venv", str(venv)],
        [str(python), "-m", "pip", "install", "--quiet", FASTMCP_REQUIREMENT],
    ):
        done = subprocess.run(step, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
            return None, f"`{' '.join(step[-3:])}` failed: {lines[-1] if lines else done.returncode}"
    found = version()
    return (python, found) if found else (None, f"fastmcp does not import in {venv}")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def timed(conn: Connection, method: str, params: dict[str, Any], count: int) -> list[float]:
    latencies = []
    for _ in range(count):
        before = time.perf_counter()
        answer = conn.call(method, params)
        latencies.append(time.perf_counter() - before)
        if "error" in answer:
            raise SystemExit(f"{method} failed: {answer['error']}")
    return latencies


class Side:
    """One connection measured, with the parameters of each method in its own names."""

    def __init__(self, label: str, conn: Connection, params: dict[str, dict[str, Any]]) -> None:
        self.label = label
        self.conn = conn
        self.params = params
        self.latencies: dict[str, list[float]] = {method: [] for method in params}
        self.refused: dict[str, str] = {}

    def check(self) -> None:
        """Ask each method once: one this side does not serve is left out, with its answer."""
        for method, params in self.params.items():
            try:
                self.conn.call(method, params)
            except ServerError as exc:
                self.refused[method] = str(exc).split(": ", 1)[-1]

    def run(self, method: str, count: int) -> None:
        if method not in self.refused:
            self.latencies[method] += timed(self.conn, method, self.params[method], count)


def everything_params(prompt: str, uri: str) -> dict[str, dict[str, Any]]:
    return {
        "resources/read": {"uri": uri},
        "prompts/get": {"name": f"{prompt}simple-prompt"},
        "completion/complete": {
            "ref": {"type": "ref/prompt", "name": f"{prompt}completable-prompt"},
            "argument": {"name": "department", "value": "E"},
        },
    }


def report(method: str, sides: list[Side]) -> None:
    direct = sides[0]
    alone = direct.latencies[method]
    print(f"{method}: {len(alone)} sequential requests each way")
    rates: dict[str, float] = {}
    for side in sides:
        if method in side.refused:
            print(f"  {side.label:<22} not served: {side.refused[method]}")
            continue
        latencies = side.latencies[method]
        rates[side.label] = len(latencies) / sum(latencies)
        p50 = percentile(latencies, 0.5) * 1000
        line = f"  {side.label:<22} {rates[side.label]:8.0f} req/s   p50 {p50:.3f} ms"
        if side is not direct:
            added_p50 = (percentile(latencies, 0.5) - percentile(alone, 0.5)) * 1000
            added_p99 = (percentile(latencies, 0.99) - percentile(alone, 0.99)) * 1000
            line += f"   added p50 {added_p50:.3f} ms, p99 {added_p99:.3f} ms"
        print(line)
    if "through awf-mcp" in rates and "through FastMCP" in rates:
        ratio = rates["through awf-mcp"] / rates["through FastMCP"]
        print(f"  awf-mcp / FastMCP mounted proxy: {ratio:.2f} x")


def main() -> None:
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    node = shutil.which("node")
    entry = EVERYTHING / "dist" / "index.js"
    if not node or not entry.exists():
        raise SystemExit("server-everything is not installed: npm ci --prefix tests/upstreams")
    fastmcp, fastmcp_version = fastmcp_python()
    if fastmcp is None:
        print(f"FastMCP could not be installed ({fastmcp_version}): awf-mcp's figures alone.")
    else:
        print(f"FastMCP {fastmcp_version} from {fastmcp.parent.parent}")
    with tempfile.TemporaryDirectory() as home, tempfile.TemporaryDirectory() as cwd:
        config = Path(home) / "awf-mcp.toml"  # outside the working directory: no approval needed
        config.write_text(f'[servers.everything]\ncommand = "{node}"\nargs = ["{entry}"]\n')
        env = {**os.environ, "AWF_MCP_NO_PLUGINS": "1", "XDG_STATE_HOME": str(Path(home) / "state")}
        awf = [sys.executable, "-m", "awf_mcp", "serve", "--no-builtins", "--config", str(config)]
        uri = "demo://resource/dynamic/text/1"
        sides = [
            Side("direct", Connection([node, str(entry)], env=env, cwd=cwd), everything_params("", uri)),
            Side(
                "through awf-mcp",
                Connection([*awf, "--log-level", "ERROR"], env=env, cwd=cwd),
                everything_params("everything_", uri),
            ),
        ]
        closers: list[Callable[[], object]] = [sides[0].conn.kill, sides[1].conn.close_stdin_and_wait]
        try:
            if fastmcp is not None:
                proxy = Path(home) / "fastmcp_proxy.py"
                proxy.write_text(FASTMCP_PROXY)
                conn = Connection([str(fastmcp), str(proxy), node, str(entry)], env=env, cwd=cwd)
                closers.append(conn.kill)
                sides.append(
                    Side(
                        "through FastMCP",
                        conn,
                        everything_params("everything_", uri.replace("//", "//everything/")),
                    )
                )
            for side in list(sides):
                try:
                    side.conn.handshake()
                except ServerError as exc:
                    if side.label != "through FastMCP":
                        raise
                    print(f"FastMCP's proxy did not start ({exc}): awf-mcp's figures alone.")
                    sides.remove(side)
            for side in sides:
                side.check()
            for method in sides[0].params:
                for side in sides:
                    side.run(method, BATCH)  # warm-up
                    side.latencies[method].clear()
                for _ in range(calls // BATCH):
                    for side in sides:
                        side.run(method, BATCH)
                report(method, sides)
        finally:
            for close in closers:
                close()


if __name__ == "__main__":
    main()
