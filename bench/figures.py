"""The figures of a ``bench/run.py`` run: rows and targets collected, and printed as tables.

Contract: a section adds what it measured to a :class:`Report`, as rows (a metric, its
value and unit, a note) and targets (a ratio or a time against a limit, which prints PASS,
MISS or SKIP when it was not measured), and skips with a reason; :func:`table` prints them
for people, :func:`markdown` as the Markdown tables ``docs/design/performance-history.md`` keeps. The
helpers every section measures with (:func:`median`, :func:`ratio`, :func:`log` for
progress on stderr) live here too.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MIB = 1024 * 1024


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
