"""Soak: thousands of mixed calls, up to 16 in flight, through the SDK client; nothing leaks.

One ``awf-mcp serve`` (built-ins confined to a temporary root, plus the testkit
plugin) gets a mix of Read, Grep, Glob, Edit, Bash and ``testkit_echo`` calls
from 16 concurrent workers (an anyio task group over one client session). Every
call is designed to succeed, so the test proves:

* zero protocol errors (no exception from the session) and zero error results;
* resident memory grows by less than 20 MiB from the baseline taken after a warm-up;
* the server's open file descriptors return to the baseline;
* no child process of the server is left.

The CI run makes ``AWF_MCP_SOAK_CALLS`` calls (default 2,000); the full soak is

    AWF_MCP_SOAK_CALLS=20000 .venv-test/bin/python -m pytest tests/test_soak.py -q

and the figures (calls, duration, RSS, fds) are reported on the terminal.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.harness import (
    children_of,
    find_process,
    mcp_session,
    open_fds,
    proc_status_kib,
    report,
    text_of,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.usefixtures("testkit")]

CALLS = int(os.environ.get("AWF_MCP_SOAK_CALLS", "2000"))
WARM_UP_CALLS = 300
IN_FLIGHT = 16
RSS_GROWTH_LIMIT_MIB = 20


def populate(root: Path) -> None:
    """A small project: 30 Python files, a README, and one file per worker for Edit to toggle."""
    (root / "src").mkdir()
    for n in range(30):
        (root / "src" / f"module_{n}.py").write_text(
            "".join(f"def function_{n}_{k}():\n    return {k}  # marker\n" for k in range(40))
        )
    (root / "README.md").write_text("# soak\n" + "line of text\n" * 200)
    for worker in range(IN_FLIGHT):
        (root / f"toggle_{worker}.txt").write_text("state: on\n")


def call_for(index: int, worker: int, toggles: list[bool]) -> tuple[str, dict[str, Any], str]:
    """The ``index``-th call of the mix: (tool, arguments, text the result must contain)."""
    kind = index % 8
    if kind in (0, 1):
        return "Read", {"path": f"src/module_{index % 30}.py", "limit": 20}, "def function_"
    if kind == 2:
        return "Grep", {"pattern": "return 3[0-9]", "path": "src", "head_limit": 50}, "module_"
    if kind == 3:
        return "Glob", {"pattern": "src/**/*.py"}, "src/module_"
    if kind == 4:
        old, new = ("on", "off") if toggles[worker] else ("off", "on")
        toggles[worker] = not toggles[worker]
        return "Edit", {"path": f"toggle_{worker}.txt", "old": old, "new": new}, "replaced 1 occurrence"
    if kind == 5:
        return "Bash", {"command": f"echo soak-{index}"}, f"soak-{index}"
    return "testkit_echo", {"text": f"echo-{index}"}, f"echo-{index}"


async def run_mix(session: Any, calls: int, toggles: list[bool]) -> list[str]:
    """Make ``calls`` calls with IN_FLIGHT workers; return a description of every failure.

    ``toggles[w]`` is True while worker ``w``'s toggle file says "on".
    """
    failures: list[str] = []
    counter = iter(range(calls))

    async def worker(number: int) -> None:
        for index in counter:
            tool, arguments, expected = call_for(index, number, toggles)
            try:
                result = await session.call_tool(tool, arguments)
            except Exception as exc:
                failures.append(f"{tool}: protocol error {type(exc).__name__}: {exc}")
                continue
            if result.is_error or expected not in text_of(result):
                failures.append(f"{tool} {arguments}: {text_of(result)[:200]}")

    async with anyio.create_task_group() as group:
        for number in range(IN_FLIGHT):
            group.start_soon(worker, number)
    return failures


def settle(condition: Any, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return bool(condition())


def _waiting(args: list[bytes]) -> bool:
    return b"waiting" in args or any(arg.startswith(b"warm:") for arg in args)


def working_children(server: int) -> list[int]:
    """The server's descendants, but for the keeper waiting for the next Bash call (one at most:
    ``warm:FD`` uncontained; ``waiting`` when its child already waits inside the sandbox, whose
    processes are the keeper's descendants and wait too)."""
    found = children_of(server)
    waiting = [pid for pid in found if _waiting(Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0"))]
    assert len(waiting) <= 1, waiting
    idle = {*waiting, *(pid for keeper in waiting for pid in children_of(keeper))}
    return [pid for pid in found if pid not in idle]


@pytest.mark.anyio
async def test_mixed_calls_leak_no_memory_fds_or_processes(
    root: Path, request: pytest.FixtureRequest
) -> None:
    populate(root)
    async with mcp_session("--root", str(root), "--log-level", "WARNING", cwd=root) as session:
        server = find_process(os.getpid(), str(root).encode())
        toggles = [True] * IN_FLIGHT
        assert await run_mix(session, WARM_UP_CALLS, toggles) == []
        assert settle(lambda: working_children(server) == [])
        baseline_rss = proc_status_kib(server)
        baseline_fds = open_fds(server)
        started = time.monotonic()
        failures = await run_mix(session, CALLS, toggles)
        duration = time.monotonic() - started
        assert failures == [], failures[:10]
        no_children = settle(lambda: working_children(server) == [])
        fds_back = settle(lambda: open_fds(server) <= baseline_fds)
        final_fds = open_fds(server)
        growth_mib = (proc_status_kib(server) - baseline_rss) / 1024
        peak_mib = proc_status_kib(server, "VmHWM") / 1024
    report(
        request.config,
        f"soak: {CALLS:,} calls ({IN_FLIGHT} in flight) in {duration:.1f} s ({CALLS / duration:,.0f}/s); "
        f"0 errors; RSS {baseline_rss / 1024:.1f} MiB, growth {growth_mib:+.1f} MiB "
        f"(peak {peak_mib:.1f} MiB); "
        f"fds {baseline_fds} -> {final_fds}; children left: {0 if no_children else 'some'}",
    )
    assert no_children, "the server has child processes left"
    assert fds_back, f"open fds grew from {baseline_fds} to {final_fds}"
    assert growth_mib < RSS_GROWTH_LIMIT_MIB, f"RSS grew by {growth_mib:.1f} MiB"
