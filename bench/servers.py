"""The servers ``bench/run.py`` measures, and how each is started.

Contract: :class:`Setup` holds what one run shares (the work directory, the 2,000-line file
``Read`` serves, the interpreter and the console script of the awf-mcp install, the frozen
binaries found) and makes a :class:`Variant` for each server: awf-mcp (console script or
``python -m awf_mcp``, always with ``--output-budget`` :data:`OUTPUT_BUDGET`), the bare SDK
server (``bench/bare_server.py``) and the frozen binaries. Each variant starts with the
caller's environment minus ``AWF_MCP_*``, ``PYTHONPATH`` and ``XDG_DATA_HOME`` (a temporary
one instead), an empty plugin directory unless a section gives its own, and
``AWF_MCP_SHARED=0``: the server measured is the process started (``bench/shared.py``
measures the shim and the shared server).
:func:`interleaved_starts` times cold starts round-robin, so that machine noise hits every
variant alike.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from client import Connection
from figures import MIB, median

BENCH = Path(__file__).resolve().parent
OUTPUT_BUDGET = MIB
"""``--output-budget`` of the awf-mcp runs: whole answers (the largest budget awf-mcp accepts)."""


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
        env["AWF_MCP_SHARED"] = "0"  # the server process itself is measured; bench/shared.py the shim
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


def read_args(variant: Variant, setup: Setup) -> dict[str, Any]:
    if variant.key == "node":
        return {"path": str(setup.read_path.resolve())}
    return {"path": setup.read_path.name}
