"""The ``startup``, ``plugins`` and ``exit`` sections of ``bench/run.py``: a server's start and end.

Contract: ``startup`` times spawn -> ``initialize`` -> ``tools/list`` answered for every way
awf-mcp starts (see :mod:`servers`) against the bare SDK server, ``plugins`` the same with 0
and 50 trivial plugins, ``exit`` the time from stdin EOF to the process's exit; each takes
the median of ``setup.runs`` runs, interleaved.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from client import ServerError
from figures import Report, log, median, ratio
from servers import Setup, Variant, interleaved_starts, read_args
from workloads import make_plugins


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
