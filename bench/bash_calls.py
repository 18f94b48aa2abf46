"""The ``concurrency`` and ``bash`` sections of ``bench/run.py``: ``Bash`` calls on a warm server.

Contract: ``concurrency`` times 16 ``Bash`` ``sleep 1`` calls in flight at once (the wall
time of all of them); ``bash`` times one ``Bash`` ``true`` call at a time, on the pip
install and on the frozen binaries when present. A failed call fails the section.
"""

from __future__ import annotations

import time

from client import ServerError, text_of
from figures import Report, log, median
from servers import Setup


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
