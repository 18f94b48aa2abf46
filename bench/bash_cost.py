"""What one ``Bash`` call of ``true`` costs, against the floor it is built on.

Run from the repository root with the test virtualenv::

    .venv-test/bin/python bench/bash_cost.py [--calls N]

In one run, with the series interleaved (one call of each per round, in a new random
order each round, so machine noise hits all alike), it prints p50 and p90 in ms of:

* ``spawn floor``: ``/bin/bash -c true`` started and waited for from asyncio
  (``anyio.open_process`` + ``wait``) in this process, no server involved;
* ``Read (MCP)``: one round trip of a ``Read`` of a one-line file through a real
  ``awf-mcp serve`` subprocess, driven by the SDK's ``ClientSession`` over stdio
  (the server's per-call floor);
* ``Bash true``: the ``Bash`` tool with command ``true`` through the same server;
* per sandbox mode of ``AWF_MCP_SANDBOX_MODES`` (a comma list; default ``off,bwrap,landlock``):
  ``Bash true``
  through one more server per mode, started with ``--config FILE`` where FILE holds
  ``[sandbox] mode = "off"`` (for ``off``) or ``mode = "contained"`` with
  ``AWF_MCP_SANDBOX_BACKEND=<mode>`` in that server's environment. A mode whose server
  does not start, or whose first ``Bash true`` fails, is reported as
  ``unavailable: <reason>``.

Then the ratio ``Bash / floor`` with floor = spawn floor p50 + Read p50: how much a
Bash call costs beyond starting a shell and answering an MCP request. Each Bash series'
own excess over that floor is printed too. ``AWF_MCP_BINARY`` runs the frozen binary
instead of ``python -m awf_mcp``, as the tests do. The servers get no ``PYTHONPATH`` unless
``AWF_BENCH_KEEP_PYTHONPATH=1`` (to measure a modified copy of the package put first on it).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import IO, Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

START_TIMEOUT = 30.0
"""Seconds a server may take to start and answer its first Bash call."""
CALL_TIMEOUT = 30.0
WARMUP = 5
"""Untimed calls per series first: imports on first use, page cache, the output directory."""


def server_argv(*args: str) -> list[str]:
    """``awf-mcp serve ARGS`` (the frozen binary when ``AWF_MCP_BINARY`` is set)."""
    binary = os.environ.get("AWF_MCP_BINARY")
    return [binary, "serve", *args] if binary else [sys.executable, "-m", "awf_mcp", "serve", *args]


def base_env(scratch: Path, **extra: str) -> dict[str, str]:
    """This environment without awf-mcp's own variables, private state dirs, plus ``extra``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("AWF_MCP_") and key not in {"PYTHONPATH", "XDG_DATA_HOME", "XDG_STATE_HOME"}
    }
    if "PYTHONPATH" in os.environ and os.environ.get("AWF_BENCH_KEEP_PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]  # to bench an instrumented copy of the package
    if os.environ.get("AWF_MCP_BINARY"):
        env["AWF_MCP_BINARY"] = os.environ["AWF_MCP_BINARY"]
    env["XDG_DATA_HOME"] = str(scratch / "data")
    env["AWF_MCP_SHARED"] = "0"  # each mode's server is its own process
    env["XDG_STATE_HOME"] = str(scratch / "state")
    env["AWF_MCP_PLUGIN_PATH"] = str(scratch / "no-plugins")
    env.update(extra)
    return env


def percentile(values: list[float], fraction: float) -> float:
    """The ``fraction`` quantile of ``values`` (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))]


def result_text(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


class Server:
    """One ``awf-mcp serve`` and the SDK session talking to it."""

    def __init__(self, label: str, args: list[str], env: dict[str, str], cwd: Path, errlog: IO[str]) -> None:
        self.label = label
        self.params = StdioServerParameters(
            command=server_argv(*args)[0], args=server_argv(*args)[1:], env=env, cwd=str(cwd)
        )
        self.errlog = errlog
        self.session: ClientSession | None = None

    async def open(self, stack: AsyncExitStack) -> None:
        read, write = await stack.enter_async_context(stdio_client(self.params, errlog=self.errlog))
        self.session = await stack.enter_async_context(ClientSession(read, write))
        await self.session.initialize()

    async def call(self, tool: str, arguments: dict[str, Any]) -> None:
        assert self.session is not None
        result = await self.session.call_tool(tool, arguments)
        if result.is_error:
            raise RuntimeError(f"{tool} failed: {result_text(result)[:300]}")

    async def probe(self) -> str | None:
        """Start this server alone, call ``Bash true`` once, stop it: ``None``, or why it failed."""
        try:
            with anyio.fail_after(START_TIMEOUT):
                async with AsyncExitStack() as stack:
                    await self.open(stack)
                    await self.call("Bash", {"command": "true"})
        except TimeoutError:
            return f"no answer within {START_TIMEOUT:.0f} s{self.stderr_tail()}"
        except Exception as exc:  # any failure makes the mode unavailable, with its reason
            return f"{_describe(exc)}{self.stderr_tail()}"
        finally:
            self.session = None
        return None

    def stderr_tail(self) -> str:
        self.errlog.flush()
        self.errlog.seek(0)
        lines = [line.strip() for line in self.errlog.read().splitlines() if line.strip()]
        self.errlog.seek(0)
        self.errlog.truncate()
        return f" (server stderr: {lines[-1][:300]})" if lines else ""


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}".strip().rstrip(":")


async def spawn_floor() -> None:
    process = await anyio.open_process(
        ["/bin/bash", "-c", "true"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    async with process:
        await process.wait()


def mode_config(scratch: Path, mode: str) -> tuple[Path, dict[str, str]]:
    """The config file and the extra environment of the server for sandbox ``mode``."""
    path = scratch / "config" / f"sandbox-{mode}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    if mode == "off":
        path.write_text('[sandbox]\nmode = "off"\n')
        return path, {}
    path.write_text('[sandbox]\nmode = "contained"\n')
    return path, {"AWF_MCP_SANDBOX_BACKEND": mode}


async def measure(calls: int) -> int:
    chosen = os.environ.get("AWF_MCP_SANDBOX_MODES", "off,bwrap,landlock")
    modes = [m.strip() for m in chosen.split(",") if m.strip()]
    with tempfile.TemporaryDirectory(prefix="awf-bash-cost-") as temp:
        scratch = Path(temp)
        work = scratch / "work"
        work.mkdir()
        (scratch / "no-plugins").mkdir()
        small = work / "small.txt"
        small.write_text("hello\n")
        errlog = tempfile.TemporaryFile("w+")  # noqa: SIM115  (closed below)
        try:
            default = Server("default", ["--root", str(work)], base_env(scratch), work, errlog)
            candidates = [default]
            for mode in modes:
                config, extra = mode_config(scratch, mode)
                candidates.append(
                    Server(
                        f"sandbox {mode}",
                        ["--root", str(work), "--config", str(config)],
                        base_env(scratch, **extra),
                        work,
                        errlog,
                    )
                )
            servers: list[Server] = []
            unavailable: dict[str, str] = {}
            for server in candidates:
                print(f"starting {server.label} ...", file=sys.stderr, flush=True)
                reason = await server.probe()
                if reason is None:
                    servers.append(server)
                else:
                    unavailable[server.label] = reason
            if default not in servers:
                print(f"default server unavailable: {unavailable['default']}")
                return 1
            async with AsyncExitStack() as stack:
                for server in servers:
                    await server.open(stack)
                series: dict[str, Callable[[], Awaitable[None]]] = {
                    "spawn floor (bash -c true)": spawn_floor,
                    "Read (MCP round trip)": lambda: default.call("Read", {"path": str(small)}),
                }
                for server in servers:
                    series[f"Bash true ({server.label})"] = lambda server=server: server.call(
                        "Bash", {"command": "true"}
                    )
                times: dict[str, list[float]] = {name: [] for name in series}
                names = list(series)
                for _ in range(WARMUP):
                    for name in names:
                        await series[name]()
                print(f"{len(names)} series x {calls} calls, interleaved ...", file=sys.stderr, flush=True)
                for _ in range(calls):
                    random.shuffle(names)
                    for name in names:
                        with anyio.fail_after(CALL_TIMEOUT):
                            started = time.perf_counter()
                            await series[name]()
                            times[name].append(time.perf_counter() - started)
        finally:
            errlog.close()
    report(times, unavailable, calls)
    return 0


def report(times: dict[str, list[float]], unavailable: dict[str, str], calls: int) -> None:
    width = max(len(name) for name in [*times, *(f"Bash true ({m})" for m in unavailable)])
    print(f"{'series':<{width}}  {'p50 ms':>8}  {'p90 ms':>8}   ({calls} calls each)")
    p50 = {name: percentile(values, 0.5) * 1000 for name, values in times.items()}
    for name, values in times.items():
        print(f"{name:<{width}}  {p50[name]:8.2f}  {percentile(values, 0.9) * 1000:8.2f}")
    for label, reason in unavailable.items():
        print(f"{'Bash true (' + label + ')':<{width}}  unavailable: {reason}")
    floor = p50["spawn floor (bash -c true)"] + p50["Read (MCP round trip)"]
    bash = p50["Bash true (default)"]
    print(f"floor = spawn p50 + Read p50 = {floor:.2f} ms")
    print(f"Bash/floor (default) = {bash / floor:.2f}x  ({bash - floor:+.2f} ms over the floor)")
    for name in times:
        if name.startswith("Bash true (") and name != "Bash true (default)":
            print(f"{name}/floor = {p50[name] / floor:.2f}x  ({p50[name] - floor:+.2f} ms over the floor)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=200, help="timed calls per series (default 200)")
    args = parser.parse_args()
    if args.calls < 1:
        parser.error("--calls must be at least 1")
    return anyio.run(measure, args.calls)


if __name__ == "__main__":
    sys.exit(main())
