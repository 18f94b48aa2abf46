"""The ``grep`` section of ``bench/run.py``: Grep and Glob over a large tree, against the bare tools.

Contract: over one generated tree (``workloads.grep_tree``, made once in the cache
directory), awf-mcp's ``Grep`` (content, files_with_matches) and ``Glob **/*.txt`` run on
the ripgrep engine and on the pure-Python one, interleaved with ``grep -rn``/``grep -rl``,
``find -name`` and bare ``rg`` (the ``rg`` awf-mcp runs, else one on ``PATH``; skipped
without one), after one untimed run of each; the rows are medians, with the lines each
printed.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from client import ServerError, text_of
from figures import MIB, Report, log, median, ratio
from servers import Setup
from workloads import grep_tree


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
