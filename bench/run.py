"""awf-mcp benchmarks: one command, a table on stdout, the figures as JSON.

Run from the repository root with the project's virtualenv (``tests/run.sh`` creates it)::

    .venv-test/bin/python bench/run.py   # full run, about 4-5 minutes on 2 cores (+ the Grep tree, once)
    .venv-test/bin/python bench/run.py --quick    # smaller workloads and 3 runs, about 2 minutes

``--only startup,exit`` runs a subset; ``--json OUT`` moves the results (default
``bench/results/latest.json``, git-ignored); ``--markdown`` also prints the tables as
Markdown (what ``docs/performance.md`` shows); ``--runs N`` sets the start-up runs per variant.

Sections:

* ``startup``     spawn -> ``initialize`` -> ``tools/list`` answered, median of >= 10 runs
                  (interleaved, after one untimed start each), for ``awf-mcp serve`` with the
                  built-ins and every plugin installed (the example plugins in a dev install),
                  ``python -m awf_mcp serve``, the built-ins alone (``AWF_MCP_NO_PLUGINS=1``),
                  the bare SDK server (``bench/bare_server.py``) and the frozen binaries: the
                  one file ``dist/awf-mcp`` (or ``$AWF_MCP_BINARY``) and the one-directory build
                  ``dist/awf-mcp-onedir/awf-mcp`` (or ``$AWF_MCP_BINARY_ONEDIR``), each measured
                  when present (build them with ``scripts/build-binary.sh``, ``AWF_MCP_ONEDIR=1``
                  for the directory). A frozen binary sees no site-packages plugins, so it is
                  compared with the built-ins-only row. ``$AWF_MCP_BINARY_BASELINE`` adds
                  another one-file binary to compare with (start-up and ``bash``);
* ``throughput``  sequential ``Read`` of a 2,000-line file: awf-mcp vs the Node reference
                  server (``@modelcontextprotocol/server-filesystem``, npm-installed into a temp
                  dir; skipped with a message without npm) vs the bare SDK floor (same text
                  from memory); same client, same file, three processes of each server
                  (:data:`THROUGHPUT_PROCESSES`), rounds in a new order each time. The floor taken
                  apart: the same awf-mcp serves a plugin's two tools returning the text from
                  memory, on the event loop and (a fresh copy) in a worker thread;
* ``concurrency`` 16 concurrent ``Bash`` ``sleep 1`` calls: total wall time;
* ``bash``        one ``Bash`` ``true`` call at a time on a warm server, median of 30: the pip
                  install vs the frozen one-file binary (when present) and the baseline binary,
                  and the difference;
* ``memory``      RSS after start-up and after 5,000 ``Read`` calls, awf-mcp vs the bare SDK;
* ``plugins``     start-up with 0 vs 50 trivial plugins in ``AWF_MCP_PLUGIN_PATH``;
* ``exit``        stdin EOF -> process exit;
* ``grep``        awf-mcp ``Grep`` (content, files_with_matches) and ``Glob **/*.txt``
                  through the server over a generated tree (50,000 files, about 200 MiB,
                  generated once under ``~/.cache/awf-mcp-bench``), on the ripgrep engine and
                  on the pure-Python one (``AWF_MCP_SEARCH_ENGINE=python``), vs ``grep -rn`` /
                  ``grep -rl`` / ``find -name`` and bare ``rg -n`` / ``rg -l`` / ``rg --files``
                  (the wheel's ``rg``, else one on PATH), all in one run.
* ``upstream``    three real upstream MCP servers direct and behind awf-mcp: start-up, echo
                  calls/s (sequential, 16 in flight), added latency, RSS (``bench/upstreams.py``).
* ``replicas``    ``serve --transport http``: a plugin tool's calls/s with 32 concurrent
                  stateless clients, one replica directly vs HAProxy to two (``docs/haproxy.cfg``),
                  the CPU each process used, and the latency HAProxy adds (``bench/replicas.py``).
* ``tokens``      ``serve --transport http``: a call's p50 and p99 with no token, a static token
                  and a JWT of an authorization server, the latency each check adds, and the
                  check alone in process (``bench/tokens.py``).

awf-mcp runs with ``--output-budget`` 1 MiB (:data:`OUTPUT_BUDGET`): the bench client is no client
awf-mcp knows, and the default budget of 10,000 bytes would cut Read and the searches short of
what the floors return.

Contract: every comparison is between numbers measured in the same run (the machines this
runs on are noisy), so targets are ratios and print PASS, MISS or SKIP (not measured). The
client (``bench/client.py``) speaks raw JSON-RPC over pipes and adds no cost of its own. The
exit code is 0 when every section ran, whatever the verdicts, and 1 when a section failed
(its error is in the JSON under ``failures``); a missed target is a finding, not a failure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from client import Connection, ServerError, text_of  # noqa: E402
from replicas import bench_replicas  # noqa: E402
from tokens import bench_tokens  # noqa: E402
from upstreams import bench_upstream  # noqa: E402
from workloads import (  # noqa: E402
    READ_LINES,
    default_cache_dir,
    grep_tree,
    make_memory_plugin,
    make_plugins,
    read_file_text,
)

SECTIONS = (
    "startup",
    "throughput",
    "concurrency",
    "bash",
    "memory",
    "plugins",
    "exit",
    "grep",
    "upstream",
    "replicas",
    "tokens",
)
NODE_PACKAGE = "@modelcontextprotocol/server-filesystem"
MIB = 1024 * 1024
OUTPUT_BUDGET = MIB
"""``--output-budget`` of the awf-mcp runs: whole answers (the largest budget awf-mcp accepts)."""


# -- results ------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    section: str
    metric: str
    value: float | None
    unit: str
    note: str = ""


@dataclass(slots=True)
class Target:
    name: str
    measured: float | None
    limit: float
    op: str  # "<=", ">=" or "<"
    unit: str = "x"

    @property
    def passed(self) -> bool | None:
        if self.measured is None:
            return None
        if self.op == "<=":
            return self.measured <= self.limit
        if self.op == ">=":
            return self.measured >= self.limit
        return self.measured < self.limit

    @property
    def verdict(self) -> str:
        return {True: "PASS", False: "MISS", None: "SKIP"}[self.passed]


@dataclass(slots=True)
class Report:
    rows: list[Row] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def row(self, section: str, metric: str, value: float | None, unit: str, note: str = "") -> None:
        self.rows.append(Row(section, metric, value, unit, note))

    def target(self, name: str, measured: float | None, limit: float, op: str, unit: str = "x") -> None:
        self.targets.append(Target(name, measured, limit, op, unit))

    def skip(self, section: str, reason: str) -> None:
        print(f"[{section}] skipped: {reason}", flush=True)
        self.skipped.append({"section": section, "reason": reason})


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- servers ------------------------------------------------------------------------------


@dataclass(slots=True)
class Variant:
    """One way to start a server."""

    key: str
    label: str
    argv: list[str]
    env: dict[str, str]
    read_tool: str = "Read"

    def spawn(self, cwd: str | None = None) -> Connection:
        return Connection(self.argv, env=self.env, cwd=cwd)


@dataclass(slots=True)
class Setup:
    quick: bool
    runs: int
    work: Path
    read_path: Path
    plugin_empty: Path
    xdg: Path
    python: str
    awf_script: str
    frozen: str | None
    frozen_onedir: str | None
    frozen_baseline: str | None
    cache_dir: Path

    def base_env(self, **extra: str) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("AWF_MCP_") and k not in {"PYTHONPATH", "XDG_DATA_HOME"}
        }
        env["XDG_DATA_HOME"] = str(self.xdg)
        env["AWF_MCP_PLUGIN_PATH"] = str(self.plugin_empty)
        env.update(extra)
        return env

    def awf(self, root: Path | None = None, **env: str) -> Variant:
        # The largest output budget: the bench client is no client awf-mcp knows, whose default
        # (10,000 bytes) would cut the Read and search answers short of what the floors return.
        return Variant(
            "awf-mcp",
            "awf-mcp serve (console script)",
            [
                self.awf_script,
                "serve",
                "--root",
                str(root or self.work),
                "--output-budget",
                str(OUTPUT_BUDGET),
            ],
            self.base_env(**env),
        )

    def awf_module(self) -> Variant:
        return Variant(
            "python -m awf_mcp",
            "python -m awf_mcp serve",
            [self.python, "-m", "awf_mcp", "serve", "--root", str(self.work)],
            self.base_env(),
        )

    def bare(self, text_file: Path | None = None) -> Variant:
        argv = [self.python, str(BENCH / "bare_server.py")]
        if text_file is not None:
            argv.append(str(text_file))
        return Variant("bare SDK", "bare SDK server (1 tool)", argv, self.base_env(), read_tool="read")

    def frozen_variant(self, onedir: bool = False) -> Variant | None:
        binary = self.frozen_onedir if onedir else self.frozen
        if not binary:
            return None
        return Variant(
            "frozen onedir" if onedir else "frozen",
            "frozen binary, one directory (built-ins)" if onedir else "frozen binary, one file (built-ins)",
            [binary, "serve", "--root", str(self.work)],
            self.base_env(),
        )

    def frozen_baseline_variant(self) -> Variant | None:
        """Another one-file binary to compare with (``$AWF_MCP_BINARY_BASELINE``, e.g. an older build)."""
        if not self.frozen_baseline:
            return None
        return Variant(
            "frozen baseline",
            "frozen binary, baseline (built-ins)",
            [self.frozen_baseline, "serve", "--root", str(self.work)],
            self.base_env(),
        )


def cold_start(variant: Variant) -> tuple[float, int]:
    """Seconds from spawn to the ``tools/list`` answer, and how many tools it listed."""
    with variant.spawn() as conn:
        tools = conn.handshake()
        elapsed = time.perf_counter() - conn.started
    return elapsed, len(tools)


def interleaved_starts(variants: Sequence[Variant], runs: int) -> dict[str, dict[str, Any]]:
    """``runs`` cold starts of every variant, round-robin so machine noise hits all alike."""
    times: dict[str, list[float]] = {v.key: [] for v in variants}
    tools: dict[str, int] = {}
    for variant in variants:  # one untimed start each: page cache, .pyc files
        cold_start(variant)
    for _ in range(runs):
        for variant in variants:
            elapsed, count = cold_start(variant)
            times[variant.key].append(elapsed)
            tools[variant.key] = count
    return {
        key: {
            "median_s": median(values),
            "min_s": min(values),
            "max_s": max(values),
            "runs": values,
            "tools": tools[key],
        }
        for key, values in times.items()
    }


# -- sections ----------------------------------------------------------------------------


def bench_startup(setup: Setup, report: Report) -> None:
    variants = [setup.awf(), setup.awf_module(), setup.bare(), setup.awf(AWF_MCP_NO_PLUGINS="1")]
    variants[3].key = "awf-mcp built-ins only"
    variants[3].label = "awf-mcp serve, AWF_MCP_NO_PLUGINS=1"
    frozen = setup.frozen_variant()
    if frozen is not None:
        variants.append(frozen)
    else:
        report.skip("startup", "no frozen binary (set AWF_MCP_BINARY or build dist/awf-mcp)")
    onedir = setup.frozen_variant(onedir=True)
    if onedir is not None:
        variants.append(onedir)
    baseline = setup.frozen_baseline_variant()
    if baseline is not None:
        variants.append(baseline)
    log(f"[startup] {len(variants)} variants x {setup.runs} runs")
    results = interleaved_starts(variants, setup.runs)
    report.details["startup"] = results
    for variant in variants:
        r = results[variant.key]
        report.row(
            "startup",
            f"{variant.label} [{r['tools']} tools]",
            r["median_s"] * 1000,
            "ms",
            f"min {r['min_s'] * 1000:.0f}",
        )
    awf = results["awf-mcp"]["median_s"]
    bare = results["bare SDK"]["median_s"]
    module = results["python -m awf_mcp"]["median_s"]
    report.row("startup", "awf-mcp / bare SDK", ratio(awf, bare), "x")
    report.row("startup", "python -m awf_mcp / bare SDK", ratio(module, bare), "x")
    report.target("start-up <= 1.10 x bare SDK server", ratio(awf, bare), 1.10, "<=")
    if frozen is not None:
        same_tools = results["awf-mcp built-ins only"]["median_s"]
        report.row(
            "startup",
            "frozen / pip install (same tools)",
            ratio(results["frozen"]["median_s"], same_tools),
            "x",
        )
        report.row(
            "startup", "frozen / pip install (with plugins)", ratio(results["frozen"]["median_s"], awf), "x"
        )
        report.target(
            "frozen start-up <= 1.5 x pip install",
            ratio(results["frozen"]["median_s"], same_tools),
            1.5,
            "<=",
        )
    if frozen is not None and baseline is not None:
        added = results["frozen"]["median_s"] - results["frozen baseline"]["median_s"]
        report.row("startup", "frozen - frozen baseline", added * 1000, "ms")
        report.target("frozen start-up <= frozen baseline + 150 ms", added * 1000, 150, "<=", "ms")
    for variant in (frozen, baseline):
        if variant is not None:
            size = os.path.getsize(variant.argv[0])
            report.row("startup", f"file size: {variant.label}", size / 2**20, "MiB", f"{size:,} B")
    if onedir is not None:
        report.row(
            "startup",
            "frozen onedir / pip install (same tools)",
            ratio(results["frozen onedir"]["median_s"], results["awf-mcp built-ins only"]["median_s"]),
            "x",
        )


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


def read_args(variant: Variant, setup: Setup) -> dict[str, Any]:
    if variant.key == "node":
        return {"path": str(setup.read_path.resolve())}
    return {"path": setup.read_path.name}


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


def bench_concurrency(setup: Setup, report: Report) -> None:
    repeats = 1 if setup.quick else 3
    walls = []
    with setup.awf().spawn() as conn:
        conn.handshake()
        for _ in range(repeats):
            started = time.perf_counter()
            ids = [conn.start_tool("Bash", {"command": "sleep 1"}) for _ in range(16)]
            results = conn.collect(ids)
            walls.append(time.perf_counter() - started)
            failed = [r for r in results if r.get("isError")]
            if failed:
                raise ServerError(f"Bash sleep 1 failed: {text_of(failed[0])}")
    wall = median(walls)
    report.details["concurrency"] = {"calls": 16, "command": "sleep 1", "wall_s": walls}
    report.row("concurrency", "16 x Bash `sleep 1`, wall time", wall, "s", f"of {repeats} runs")
    report.target("16 x sleep 1 concurrently", wall, 2.0, "<", "s")


def bench_bash(setup: Setup, report: Report) -> None:
    """One ``Bash`` call of ``true`` at a time, on a warm server: pip install vs the frozen binary."""
    calls = 10 if setup.quick else 30
    variants = [setup.awf()]
    frozen = setup.frozen_variant()
    for extra in (frozen, setup.frozen_baseline_variant()):
        if extra is not None:
            variants.append(extra)
    log(f"[bash] {len(variants)} variants x {calls} calls")
    times: dict[str, list[float]] = {}
    for variant in variants:
        with variant.spawn(cwd=str(setup.work)) as conn:
            conn.handshake()
            conn.call_tool("Bash", {"command": "true"})  # untimed: imports on first use
            for _ in range(calls):
                started = time.perf_counter()
                result = conn.call_tool("Bash", {"command": "true"})
                times.setdefault(variant.key, []).append(time.perf_counter() - started)
                if result.get("isError"):
                    raise ServerError(f"Bash true failed: {text_of(result)}")
    report.details["bash"] = {key: {"median_s": median(v), "runs": v} for key, v in times.items()}
    for variant in variants:
        values = times[variant.key]
        report.row("bash", f"Bash `true`, one call: {variant.label}", median(values) * 1000, "ms",
                   f"max {max(values) * 1000:.0f}")  # fmt: skip
    if frozen is not None:
        added = median(times["frozen"]) - median(times["awf-mcp"])
        report.row("bash", "Bash call: frozen binary - pip install", added * 1000, "ms")


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


def bench_plugins(setup: Setup, report: Report) -> None:
    with tempfile.TemporaryDirectory(prefix="awf-bench-plugins-") as directory:
        target = make_plugins(Path(directory) / "site", 50)
        none = setup.awf()
        none.key = "0 plugins"
        fifty = setup.awf(AWF_MCP_PLUGIN_PATH=str(target))
        fifty.key = "50 plugins"
        log(f"[plugins] 2 variants x {setup.runs} runs")
        results = interleaved_starts([none, fifty], setup.runs)
    report.details["plugins"] = results
    added = results["50 plugins"]["tools"] - results["0 plugins"]["tools"]
    if added != 50:
        raise ServerError(f"the 50 generated plugins added {added} tools, not 50")
    for key in ("0 plugins", "50 plugins"):
        r = results[key]
        report.row("plugins", f"start-up, {key} extra [{r['tools']} tools]", r["median_s"] * 1000, "ms")
    scaling = ratio(results["50 plugins"]["median_s"], results["0 plugins"]["median_s"])
    report.row("plugins", "50 plugins / 0 plugins", scaling, "x")
    report.target("start-up with 50 plugins <= 1.2 x with none", scaling, 1.2, "<=")


def exit_time(variant: Variant, setup: Setup) -> float:
    with variant.spawn(cwd=str(setup.work)) as conn:
        conn.handshake()
        conn.call_tool(variant.read_tool, read_args(variant, setup))
        return conn.close_stdin_and_wait()


def bench_exit(setup: Setup, report: Report) -> None:
    variants = [setup.awf(), setup.bare(setup.read_path)]
    frozen = setup.frozen_variant()
    if frozen is not None:
        variants.append(frozen)
    log(f"[exit] {len(variants)} variants x {setup.runs} runs")
    times: dict[str, list[float]] = {v.key: [] for v in variants}
    for _ in range(setup.runs):
        for variant in variants:
            times[variant.key].append(exit_time(variant, setup))
    report.details["exit"] = {key: {"median_s": median(v), "runs": v} for key, v in times.items()}
    for variant in variants:
        values = times[variant.key]
        report.row(
            "exit",
            f"stdin EOF -> exit: {variant.label}",
            median(values) * 1000,
            "ms",
            f"max {max(values) * 1000:.0f}",
        )
    report.target("exit after EOF <= 0.3 s", median(times["awf-mcp"]), 0.3, "<=", "s")


def timed_command(argv: Sequence[str], cwd: Path) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run(list(argv), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise ServerError(f"{argv[0]} exited {done.returncode}")
    return elapsed, len(done.stdout.splitlines())


def bare_rg() -> str | None:
    """The rg awf-mcp runs (the ripgrep wheel's), else one on PATH."""
    try:
        from awf_mcp.builtins.ripgrep import ripgrep_binary

        return ripgrep_binary() or shutil.which("rg")
    except ImportError:
        return shutil.which("rg")


def bench_grep(setup: Setup, report: Report) -> None:
    """Grep (content, files_with_matches) and Glob over one tree, on both engines and the bare tools."""
    files, size = (2_000, 4_200) if setup.quick else (50_000, 4_200)
    log(f"[grep] tree of {files:,} files in {setup.cache_dir} (generated once)")
    tree = grep_tree(setup.cache_dir, files=files, file_bytes=size)
    repeats = 2 if setup.quick else 3
    pattern = tree.PATTERN
    commands: dict[str, list[str]] = {
        "grep -rl": ["grep", "-rlE", pattern, "."],
        "grep -rn": ["grep", "-rnE", pattern, "."],
        "find -name": ["find", ".", "-name", "*.txt"],
    }
    rg = bare_rg()
    if rg:
        commands["rg -l"] = [rg, "--no-config", "-l", pattern, "."]
        commands["rg -n"] = [rg, "--no-config", "-n", pattern, "."]
        commands["rg -n -j1"] = [rg, "--no-config", "-n", "-j1", pattern, "."]
        commands["rg --files"] = [rg, "--no-config", "--files", "-g", "*.txt", "."]
    else:
        report.skip("grep", "rg not found: bare ripgrep not measured")
    calls: dict[str, tuple[str, dict[str, Any]]] = {
        "Grep content": ("Grep", {"pattern": pattern, "output_mode": "content"}),
        "Grep files_with_matches": ("Grep", {"pattern": pattern, "output_mode": "files_with_matches"}),
        "Glob **/*.txt": ("Glob", {"pattern": "**/*.txt"}),
    }
    engines = {"ripgrep": {}, "python": {"AWF_MCP_SEARCH_ENGINE": "python"}}
    timings: dict[str, list[float]] = {}
    lines: dict[str, int] = {}
    for argv in commands.values():  # warm the page cache
        timed_command(argv, tree.root)
    for engine, env in engines.items():
        with setup.awf(root=tree.root, **env).spawn() as conn:
            conn.handshake()
            for tool, arguments in calls.values():  # warm the server
                conn.call_tool(tool, arguments)
            for _ in range(repeats):
                for name, (tool, arguments) in calls.items():
                    key = f"awf-mcp {name} [{engine}]"
                    started = time.perf_counter()
                    result = conn.call_tool(tool, arguments)
                    timings.setdefault(key, []).append(time.perf_counter() - started)
                    if result.get("isError"):
                        raise ServerError(f"{tool} failed: {text_of(result)}")
                    lines[key] = len([x for x in text_of(result).splitlines() if not x.startswith("[")])
                for name, argv in commands.items():
                    elapsed, count = timed_command(argv, tree.root)
                    timings.setdefault(name, []).append(elapsed)
                    lines[name] = count
    medians = {key: median(values) for key, values in timings.items()}
    report.details["grep"] = {
        "files": tree.files,
        "bytes": tree.total_bytes,
        "pattern": pattern,
        "needle_files": tree.needle_files,
        "needle_lines": tree.needle_lines,
        "rg": rg,
        "timings_s": timings,
        "output_lines": lines,
    }
    note = f"{tree.files:,} files, {tree.total_bytes / MIB:.0f} MiB"
    for key, value in medians.items():
        report.row("grep", f"{key} ({lines[key]:,} lines)", value * 1000, "ms", note)
    for engine in engines:
        content = medians[f"awf-mcp Grep content [{engine}]"]
        listed = medians[f"awf-mcp Grep files_with_matches [{engine}]"]
        globbed = medians[f"awf-mcp Glob **/*.txt [{engine}]"]
        report.row("grep", f"Grep content / grep -rn [{engine}]", ratio(content, medians["grep -rn"]), "x")
        report.row(
            "grep", f"Grep files_with_matches / grep -rl [{engine}]", ratio(listed, medians["grep -rl"]), "x"
        )
        report.row(
            "grep", f"Glob **/*.txt / find -name [{engine}]", ratio(globbed, medians["find -name"]), "x"
        )
        if rg:
            report.row("grep", f"Grep content / rg -n [{engine}]", ratio(content, medians["rg -n"]), "x")
    content = medians["awf-mcp Grep content [ripgrep]"]
    report.target("Grep content / grep -rn <= 1.0", ratio(content, medians["grep -rn"]), 1.0, "<=")
    if rg:
        report.target("Grep content / bare rg -n <= 1.5", ratio(content, medians["rg -n"]), 1.5, "<=")
    report.target(
        "Grep files_with_matches / grep -rl <= 1.0",
        ratio(medians["awf-mcp Grep files_with_matches [ripgrep]"], medians["grep -rl"]),
        1.0,
        "<=",
    )
    report.target(
        "Glob **/*.txt / find -name <= 2.0",
        ratio(medians["awf-mcp Glob **/*.txt [ripgrep]"], medians["find -name"]),
        2.0,
        "<=",
    )


BENCHES: dict[str, Callable[[Setup, Report], None]] = {
    "startup": bench_startup,
    "throughput": bench_throughput,
    "concurrency": bench_concurrency,
    "bash": bench_bash,
    "memory": bench_memory,
    "plugins": bench_plugins,
    "exit": bench_exit,
    "grep": bench_grep,
    "upstream": bench_upstream,
    "replicas": bench_replicas,
    "tokens": bench_tokens,
}


# -- output -----------------------------------------------------------------------------


def format_value(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit == "x":
        return f"{value:.2f} x"
    if unit in ("ms", "calls/s"):
        return f"{value:,.0f} {unit}"
    return f"{value:,.2f} {unit}"


def table(report: Report) -> str:
    out = []
    width = max([len(r.metric) for r in report.rows] + [len(t.name) for t in report.targets] + [20])
    section = None
    out.append(f"{'metric':<{width}}  {'value':>14}  note")
    out.append("-" * (width + 30))
    for r in report.rows:
        if r.section != section:
            section = r.section
            out.append(f"[{section}]")
        out.append(f"{r.metric:<{width}}  {format_value(r.value, r.unit):>14}  {r.note}".rstrip())
    if report.targets:
        out.append("")
        out.append(f"{'target':<{width}}  {'measured':>14}  verdict")
        out.append("-" * (width + 30))
        for t in report.targets:
            out.append(f"{t.name:<{width}}  {format_value(t.measured, t.unit):>14}  {t.verdict}")
    return "\n".join(out)


def markdown(report: Report) -> str:
    out = ["| section | metric | value | note |", "|---|---|---:|---|"]
    for r in report.rows:
        out.append(f"| {r.section} | {r.metric} | {format_value(r.value, r.unit)} | {r.note} |")
    out += ["", "| target | measured | verdict |", "|---|---:|---|"]
    for t in report.targets:
        out.append(f"| {t.name} | {format_value(t.measured, t.unit)} | {t.verdict} |")
    return "\n".join(out)


def machine() -> dict[str, Any]:
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = subprocess.run(["free", "-h"], capture_output=True, text=True, check=False).stdout.strip()
    try:
        os_name = platform.freedesktop_os_release().get("PRETTY_NAME", "")
    except OSError:
        os_name = platform.system()
    node = shutil.which("node")
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu or platform.processor(),
        "free_h": memory,
        "os": os_name,
        "kernel": platform.release(),
        "node": subprocess.run(
            [node, "--version"], capture_output=True, text=True, check=False
        ).stdout.strip()
        if node
        else None,
        "python": sys.version.split()[0],
        "loadavg_at_start": os.getloadavg(),
    }


def versions(python: str) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({d: m.version(d) for d in ('awf-mcp', 'mcp', 'pydantic', 'anyio')}))"
    )
    done = subprocess.run([python, "-c", code], capture_output=True, text=True, check=False)
    try:
        return dict(json.loads(done.stdout))
    except ValueError:
        return {}


def find_binary(variable: str, default: Path) -> str | None:
    """The frozen binary named by ``$variable`` (else ``default``), when it is an executable file."""
    candidate = os.environ.get(variable) or str(default)
    return candidate if os.access(candidate, os.X_OK) and Path(candidate).is_file() else None


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="awf-mcp benchmarks", prog="bench/run.py")
    parser.add_argument("--quick", action="store_true", help="fewer runs and smaller workloads")
    parser.add_argument(
        "--json", default=str(BENCH / "results" / "latest.json"), help="where to write the results"
    )
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(SECTIONS)}")
    parser.add_argument("--runs", type=int, default=0, help="start-up/exit runs per variant (10; quick 3)")
    parser.add_argument("--cache-dir", default=str(default_cache_dir()), help="where the Grep tree is kept")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the awf-mcp install")
    parser.add_argument("--markdown", action="store_true", help="also print the table as Markdown")
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.only.split(",") if s.strip()] or list(SECTIONS)
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    args.sections = [s for s in SECTIONS if s in wanted]
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    python = args.python
    script = str(Path(python).with_name("awf-mcp"))
    if not os.access(script, os.X_OK):
        script = shutil.which("awf-mcp") or script
    report = Report()
    host = machine()
    report.details["versions"] = versions(python)
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="awf-bench-") as temp:
        work = Path(temp) / "work"
        work.mkdir()
        read_path = work / "bench-2000.txt"
        read_path.write_text(read_file_text(), encoding="utf-8")
        (Path(temp) / "plugins-empty").mkdir()
        (Path(temp) / "xdg").mkdir()
        cache_dir = Path(args.cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        setup = Setup(
            quick=args.quick,
            runs=args.runs or (3 if args.quick else 10),
            work=work,
            read_path=read_path,
            plugin_empty=Path(temp) / "plugins-empty",
            xdg=Path(temp) / "xdg",
            python=python,
            awf_script=script,
            frozen=find_binary("AWF_MCP_BINARY", REPO / "dist" / "awf-mcp"),
            frozen_onedir=find_binary("AWF_MCP_BINARY_ONEDIR", REPO / "dist" / "awf-mcp-onedir" / "awf-mcp"),
            frozen_baseline=os.environ.get("AWF_MCP_BINARY_BASELINE") or None,
            cache_dir=cache_dir,
        )
        for name in args.sections:
            section_started = time.perf_counter()
            try:
                BENCHES[name](setup, report)
            except (ServerError, OSError, subprocess.SubprocessError) as exc:
                failures[name] = f"{type(exc).__name__}: {exc}"
                log(f"[{name}] FAILED: {exc}")
            report.details.setdefault("section_seconds", {})[name] = time.perf_counter() - section_started
    elapsed = time.perf_counter() - started
    print(table(report))
    if args.markdown:
        print()
        print(markdown(report))
    print(f"\n{len(args.sections)} sections in {elapsed:.0f} s")
    payload = {
        "schema": 1,
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join(["python", "bench/run.py", *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        "sections": args.sections,
        "duration_s": elapsed,
        "machine": host,
        "frozen_binary": setup.frozen,
        "frozen_binary_onedir": setup.frozen_onedir,
        "rows": [
            {"section": r.section, "metric": r.metric, "value": r.value, "unit": r.unit, "note": r.note}
            for r in report.rows
        ],
        "targets": [
            {
                "name": t.name,
                "measured": t.measured,
                "limit": t.limit,
                "op": t.op,
                "unit": t.unit,
                "verdict": t.verdict,
            }
            for t in report.targets
        ],
        "skipped": report.skipped,
        "failures": failures,
        "details": report.details,
    }
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    print(f"results: {out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
