"""awf-mcp benchmarks: one command, a table on stdout, the figures as JSON.

Run from the repository root with the project's virtualenv (``tests/run.sh`` creates it)::

    .venv-test/bin/python bench/run.py   # full run, about 4-5 minutes on 2 cores (+ the Grep tree, once)
    .venv-test/bin/python bench/run.py --quick    # smaller workloads and 3 runs, about 2 minutes

``--only startup,exit`` runs a subset; ``--json OUT`` moves the results (default
``bench/results/latest.json``, git-ignored); ``--markdown`` also prints the tables as
Markdown (what ``docs/design/performance-history.md`` keeps); ``--runs N`` sets the start-up runs per variant.

Sections (each measured by a module beside this one, named at its end; this one parses the
options, runs the sections and writes the results; ``bench/servers.py`` starts the servers and
``bench/figures.py`` collects and prints the figures):

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
                  another one-file binary to compare with (start-up and ``bash``)
                  (``bench/lifecycle.py``);
* ``throughput``  sequential ``Read`` of a 2,000-line file: awf-mcp vs the Node reference
                  server (``@modelcontextprotocol/server-filesystem``, npm-installed into a temp
                  dir; skipped with a message without npm) vs the bare SDK floor (same text
                  from memory); same client, same file, three processes of each server
                  (``reads.THROUGHPUT_PROCESSES``), rounds in a new order each time. The floor
                  taken apart: the same awf-mcp serves a plugin's two tools returning the text
                  from memory, on the event loop and (a fresh copy) in a worker thread
                  (``bench/reads.py``);
* ``concurrency`` 16 concurrent ``Bash`` ``sleep 1`` calls: total wall time (``bench/bash_calls.py``);
* ``bash``        one ``Bash`` ``true`` call at a time on a warm server, median of 30: the pip
                  install vs the frozen one-file binary (when present) and the baseline binary,
                  and the difference (``bench/bash_calls.py``);
* ``memory``      RSS after start-up and after 5,000 ``Read`` calls, awf-mcp vs the bare SDK
                  (``bench/reads.py``);
* ``plugins``     start-up with 0 vs 50 trivial plugins in ``AWF_MCP_PLUGIN_PATH``
                  (``bench/lifecycle.py``);
* ``exit``        stdin EOF -> process exit (``bench/lifecycle.py``);
* ``grep``        awf-mcp ``Grep`` (content, files_with_matches) and ``Glob **/*.txt``
                  through the server over a generated tree (50,000 files, about 200 MiB,
                  generated once under ``~/.cache/awf-mcp-bench``), on the ripgrep engine and
                  on the pure-Python one (``AWF_MCP_SEARCH_ENGINE=python``), vs ``grep -rn`` /
                  ``grep -rl`` / ``find -name`` and bare ``rg -n`` / ``rg -l`` / ``rg --files``
                  (the wheel's ``rg``, else one on PATH), all in one run (``bench/search.py``).
* ``upstream``    three real upstream MCP servers direct and behind awf-mcp: start-up, echo
                  calls/s (sequential, 16 in flight), added latency, RSS (``bench/upstreams.py``).
* ``relay``       server-everything's ``echo`` directly and through awf-mcp, one client, calls in
                  sequence, in alternating back-to-back rounds: calls/s of each, their ratio against
                  the one recorded (a regression of more than 10 % misses), and the p50 / p99 awf-mcp
                  adds (``bench/upstreams.py``).
* ``replicas``    ``serve --transport http``: a plugin tool's calls/s with 32 concurrent
                  stateless clients, one replica directly vs HAProxy to two (``docs/haproxy.cfg``),
                  the CPU each process used, and the latency HAProxy adds (``bench/replicas.py``).
* ``tokens``      ``serve --transport http``: a call's p50 and p99 with no token, a static token
                  and a JWT of an authorization server, the latency each check adds, and the
                  check alone in process (``bench/tokens.py``).

awf-mcp runs with ``--output-budget`` 1 MiB (``servers.OUTPUT_BUDGET``): the bench client is no client
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
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

from bash_calls import bench_bash, bench_concurrency  # noqa: E402
from client import ServerError  # noqa: E402
from figures import Report, log, markdown, table  # noqa: E402
from lifecycle import bench_exit, bench_plugins, bench_startup  # noqa: E402
from reads import bench_memory, bench_throughput  # noqa: E402
from replicas import bench_replicas  # noqa: E402
from search import bench_grep  # noqa: E402
from servers import Setup  # noqa: E402
from tokens import bench_tokens  # noqa: E402
from upstreams import bench_relay, bench_upstream  # noqa: E402
from workloads import default_cache_dir, read_file_text  # noqa: E402

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
    "relay",
    "replicas",
    "tokens",
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
    "relay": bench_relay,
    "replicas": bench_replicas,
    "tokens": bench_tokens,
}


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
