"""The ``throughput`` and ``memory`` sections of ``bench/run.py``: ``Read`` calls on a warm server.

Contract: ``throughput`` measures sequential ``Read`` calls of the 2,000-line file per
second, awf-mcp against the Node reference server (npm-installed into a temporary directory,
skipped without npm) and the bare SDK floor, in rounds in a new order each time over
:data:`THROUGHPUT_PROCESSES` processes of each server, and takes the floor apart
(:data:`MEMORY_TOOLS`); every answer is checked to be the whole file first. ``memory``
reads the RSS of awf-mcp and of the bare SDK server after start-up and after many ``Read``
calls.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from client import Connection, ServerError, text_of
from figures import MIB, Report, log, median, ratio
from servers import Setup, Variant, read_args
from workloads import READ_LINES, make_memory_plugin

NODE_PACKAGE = "@modelcontextprotocol/server-filesystem"


@contextmanager
def node_reference(setup: Setup, report: Report) -> Iterator[Variant | None]:
    """The Node reference filesystem server, installed into a temp dir; ``None`` when unavailable."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if not npm or not node:
        report.skip("throughput", "npm/node not found: the Node reference server is not measured")
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="awf-bench-node-") as directory:
        log(f"[throughput] npm install {NODE_PACKAGE} into {directory}")
        try:
            subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", NODE_PACKAGE],
                cwd=directory,
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                timeout=300,
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
            detail = getattr(exc, "stderr", b"") or b""
            report.skip("throughput", f"npm install {NODE_PACKAGE} failed: {exc} {detail.decode()[-300:]}")
            yield None
            return
        package = Path(directory) / "node_modules" / NODE_PACKAGE
        version = json.loads((package / "package.json").read_text(encoding="utf-8"))["version"]
        report.details.setdefault("versions", {})["node_server"] = f"{NODE_PACKAGE} {version}"
        report.details["versions"]["node"] = subprocess.run(
            [node, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        yield Variant(
            "node",
            f"Node reference ({version})",
            [node, str(package / "dist" / "index.js"), str(setup.work.resolve())],
            setup.base_env(),
            read_tool="read_text_file",
        )


MEMORY_TOOLS = {
    "memory_on_loop": "awf-mcp, same text from memory, on the event loop (plugin)",
    "memory_in_thread": "awf-mcp, a fresh copy of the text made in a worker thread (plugin)",
}
"""The Read floor taken apart: awf-mcp's call path alone (the very string the floor returns), then
with the worker thread hand-off and a fresh string, as any file tool returns; Read adds the file."""


THROUGHPUT_PROCESSES = 3
"""Processes started of each server in ``throughput``: which CPU a process settles on, next to the
client or not, moved one process's rate by up to 17 % here, so no ratio rests on one process."""


def bench_throughput(setup: Setup, report: Report) -> None:
    expected = setup.read_path.read_text(encoding="utf-8")
    plugins = make_memory_plugin(setup.work.parent / "plugins-memory", setup.read_path)
    with node_reference(setup, report) as node:
        awf = setup.awf(AWF_MCP_PLUGIN_PATH=str(plugins))
        variants = [awf, setup.bare(setup.read_path)]
        variants += [
            Variant(key, label, awf.argv, awf.env, read_tool=key) for key, label in MEMORY_TOOLS.items()
        ]
        if node is not None:
            variants.append(node)
        processes = 2 if setup.quick else THROUGHPUT_PROCESSES
        rounds = 3 if setup.quick else 6
        per_round = 40 if setup.quick else 100
        conns: dict[str, list[Connection]] = {}
        try:
            for variant in variants:
                if variant.key in MEMORY_TOOLS:  # served by the same awf-mcp processes as Read
                    conns[variant.key] = conns["awf-mcp"]
                    continue
                conns[variant.key] = []
                for _ in range(processes):
                    conn = variant.spawn(cwd=str(setup.work))
                    conns[variant.key].append(conn)
                    conn.handshake()
            runs = [(variant, index) for variant in variants for index in range(processes)]
            for variant, index in runs:
                conn = conns[variant.key][index]
                got = text_of(conn.call_tool(variant.read_tool, read_args(variant, setup)))
                if got != expected:
                    raise ServerError(f"{variant.label} returned {len(got)} chars, expected {len(expected)}")
                for _ in range(30):  # warm-up
                    conn.call_tool(variant.read_tool, read_args(variant, setup))
            log(
                f"[throughput] {len(variants)} servers x {processes} processes x {rounds} rounds "
                f"x {per_round} calls, in a new order each round"
            )
            rates: dict[tuple[str, int], list[float]] = {(v.key, i): [] for v, i in runs}
            shuffle = random.Random(READ_LINES)
            for _ in range(rounds):
                for variant, index in shuffle.sample(runs, len(runs)):
                    conn = conns[variant.key][index]
                    arguments = read_args(variant, setup)
                    started = time.perf_counter()
                    for _ in range(per_round):
                        conn.call_tool(variant.read_tool, arguments)
                    rates[(variant.key, index)].append(per_round / (time.perf_counter() - started))
        finally:
            for key, group in conns.items():
                if key not in MEMORY_TOOLS:  # those share the awf-mcp processes
                    for conn in group:
                        conn.kill()
    results = {
        v.key: {
            "median_calls_per_s": median([r for i in range(processes) for r in rates[(v.key, i)]]),
            "per_process_median": [median(rates[(v.key, i)]) for i in range(processes)],
            "rounds": [rates[(v.key, i)] for i in range(processes)],
        }
        for v in variants
    }
    report.details["throughput"] = {
        "file_lines": READ_LINES,
        "file_bytes": len(expected.encode()),
        "processes_per_server": processes,
        "calls_per_round": per_round,
        **results,
    }
    for variant in variants:
        report.row(
            "throughput",
            f"Read 2,000 lines: {variant.label}",
            results[variant.key]["median_calls_per_s"],
            "calls/s",
        )
    for key in ("awf-mcp", "bare SDK"):
        slowest, fastest = min(results[key]["per_process_median"]), max(results[key]["per_process_median"])
        spread = ratio(fastest, slowest)
        report.row("throughput", f"{key}: fastest / slowest of its {processes} processes", spread, "x")
    awf_rate = results["awf-mcp"]["median_calls_per_s"]
    floor = results["bare SDK"]["median_calls_per_s"]
    node_rate = results["node"]["median_calls_per_s"] if node is not None else None
    report.row("throughput", "awf-mcp / Node reference", ratio(awf_rate, node_rate), "x")
    report.row("throughput", "awf-mcp / bare SDK floor", ratio(awf_rate, floor), "x")
    for key, label in MEMORY_TOOLS.items():
        report.row(
            "throughput", f"{label} / bare SDK floor", ratio(results[key]["median_calls_per_s"], floor), "x"
        )
    report.target("Read throughput >= 1.0 x Node reference", ratio(awf_rate, node_rate), 1.0, ">=")
    report.target("Read throughput >= 0.90 x SDK floor", ratio(awf_rate, floor), 0.90, ">=")


def bench_memory(setup: Setup, report: Report) -> None:
    calls = 500 if setup.quick else 5000
    checkpoints = max(1, calls // 5)
    results: dict[str, dict[str, Any]] = {}
    for variant in (setup.awf(), setup.bare(setup.read_path)):
        with variant.spawn(cwd=str(setup.work)) as conn:
            conn.handshake()
            time.sleep(0.2)
            after_start = conn.rss_bytes()
            arguments = read_args(variant, setup)
            trace = []
            log(f"[memory] {variant.label}: {calls} calls")
            for index in range(1, calls + 1):
                conn.call_tool(variant.read_tool, arguments)
                if index % checkpoints == 0:
                    trace.append(conn.rss_bytes())
            after_calls = conn.rss_bytes()
        results[variant.key] = {
            "rss_after_start": after_start,
            "rss_after_calls": after_calls,
            "growth": after_calls - after_start,
            "trace": trace,
        }
    report.details["memory"] = {"calls": calls, **results}
    awf = results["awf-mcp"]
    bare = results["bare SDK"]
    report.row("memory", "RSS after start-up: awf-mcp", awf["rss_after_start"] / MIB, "MiB")
    report.row("memory", "RSS after start-up: bare SDK", bare["rss_after_start"] / MIB, "MiB")
    report.row("memory", f"RSS growth after {calls:,} Read calls: awf-mcp", awf["growth"] / MIB, "MiB")
    report.row("memory", f"RSS growth after {calls:,} calls: bare SDK", bare["growth"] / MIB, "MiB")
    report.target(
        "RSS <= 1.15 x bare SDK server", ratio(awf["rss_after_start"], bare["rss_after_start"]), 1.15, "<="
    )
    report.target(f"RSS growth after {calls:,} calls < 10 MiB", awf["growth"] / MIB, 10.0, "<", "MiB")
