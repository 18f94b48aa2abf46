"""Upstreams shared by the shared server's sessions (awf_mcp.wire.upstreamhub), end to end.

Every session is a real ``awf-mcp serve`` started the way an agent starts it (through the shim),
spoken to by the SDK's ``ClientSession`` or in raw JSON lines; the upstreams are real processes.
What is checked is what reaches each session's client: its own answers, progress and questions,
never another's; and how many upstream processes run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from tests.e2e.test_shared import Shared, initialize, marked, raw_shim, wait_until
from tests.helpers.harness import mcp_session, text_of

pytestmark = pytest.mark.e2e

FAKE_UPSTREAM = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"
ASKING_UPSTREAM = Path(__file__).resolve().parents[1] / "upstreams" / "asking_upstream.py"


@pytest.fixture
def shared() -> Iterator[Shared]:
    runtime = Path(tempfile.mkdtemp(prefix="awf-run-", dir="/tmp"))
    server = Shared(runtime)
    yield server
    server.daemon("stop")
    shutil.rmtree(runtime, ignore_errors=True)


def config_with(directory: Path, marker: str, script: Path, *args: str) -> Path:
    config = directory / "awf-mcp.toml"
    arguments = json.dumps([str(script), *args])
    environment = f'env = {{ TEST_MARK = "{marker}" }}\n'
    config.write_text(f'[servers.up]\ncommand = "{sys.executable}"\nargs = {arguments}\n{environment}')
    return config


def running(marker: str, script: Path) -> list[int]:
    found = []
    for pid in marked(marker):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:2] == [str(script).encode()]:
            found.append(pid)
    return found


def test_questions_and_progress_reach_only_the_session_whose_call_it_is(
    shared: Shared, tmp_path: Path
) -> None:
    """Two sessions share one upstream. The server's elicitation during a session's call goes
    to that session's client alone, and each call's progress to its own caller alone."""
    marker = f"asking-{os.getpid()}"
    config = config_with(tmp_path, marker, ASKING_UPSTREAM)
    project = tmp_path / "project"
    project.mkdir()
    asked: dict[str, list[str]] = {"a": [], "b": []}
    results: dict[str, str] = {}
    count: list[int] = []

    def elicitation_of(who: str) -> Any:
        async def answer(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
            asked[who].append(params.message)
            return types.ElicitResult(action="accept", content={"name": f"name-of-{who}"})

        return answer

    async def run() -> None:
        args = ("--root", str(project), "--config", str(config))
        async with (
            mcp_session(*args, cwd=project, env=shared.env, elicitation_callback=elicitation_of("a")) as a,
            mcp_session(*args, cwd=project, env=shared.env, elicitation_callback=elicitation_of("b")) as b,
        ):
            results["a"] = text_of(await a.call_tool("up_elicit", {}))
            count.append(len(running(marker, ASKING_UPSTREAM)))
            results["b"] = text_of(await b.call_tool("up_elicit", {}))

    anyio.run(run)
    assert count == [1], "the two sessions share one upstream process"
    assert "name-of-a" in results["a"] and "name-of-b" in results["b"], results
    assert len(asked["a"]) == 1 and len(asked["b"]) == 1, asked


def test_each_caller_gets_its_own_progress(shared: Shared, tmp_path: Path) -> None:
    marker = f"progress-{os.getpid()}"
    project = tmp_path / "project"
    markers = project / "markers"  # where the contained server may write: in the roots
    markers.mkdir(parents=True)
    config = config_with(tmp_path, marker, FAKE_UPSTREAM, "good", str(markers))
    seen: dict[str, list[float]] = {"a": [], "b": []}

    def progress_of(who: str) -> Any:
        async def note(progress: float, total: float | None, message: str | None) -> None:
            seen[who].append(progress)

        return note

    async def run() -> None:
        args = ("--root", str(project), "--config", str(config))
        async with (
            mcp_session(*args, cwd=project, env=shared.env) as a,
            mcp_session(*args, cwd=project, env=shared.env) as b,
        ):

            async def call(who: str, session: Any, steps: int) -> None:
                arguments = {"count": steps, "size": 1}
                await session.call_tool("up_progress", arguments, progress_callback=progress_of(who))

            async with anyio.create_task_group() as group:
                group.start_soon(call, "a", a, 3)
                group.start_soon(call, "b", b, 5)
            assert len(running(marker, FAKE_UPSTREAM)) == 1

    anyio.run(run)
    assert len(seen["a"]) == 3 and len(seen["b"]) == 5, seen


def test_a_session_killed_mid_call_has_its_call_cancelled_and_the_others_go_on(
    shared: Shared, tmp_path: Path
) -> None:
    marker = f"cancel-{os.getpid()}"
    project = tmp_path / "project"
    markers = project / "markers"  # where the contained server may write: in the roots
    markers.mkdir(parents=True)
    config = config_with(tmp_path, marker, FAKE_UPSTREAM, "good", str(markers))
    shims = [raw_shim(shared, project, "--config", str(config)) for _ in range(2)]
    for shim in shims:
        initialize(shim)
    doomed, survivor = shims

    def call(process: subprocess.Popen[bytes], seconds: float, request_id: int) -> None:
        assert process.stdin is not None
        request = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "up_wait", "arguments": {"seconds": seconds}},
        }
        process.stdin.write(json.dumps(request).encode() + b"\n")
        process.stdin.flush()

    call(doomed, 60, 7)
    wait_until(lambda: list(markers.glob("waiting-*")), "the call reaches the shared upstream")
    assert len(running(marker, FAKE_UPSTREAM)) == 1
    doomed.send_signal(signal.SIGKILL)
    doomed.wait()
    wait_until(lambda: list(markers.glob("cancelled-*")), "the upstream is told the call is cancelled")
    call(survivor, 0, 8)
    assert survivor.stdout is not None
    answer = json.loads(survivor.stdout.readline())
    assert answer["id"] == 8 and "waited" in json.dumps(answer["result"]), answer
    assert len(running(marker, FAKE_UPSTREAM)) == 1
    survivor.kill()


def test_sessions_with_other_roots_get_their_own_upstream(shared: Shared, tmp_path: Path) -> None:
    """What the server is handed differs (its sandbox's roots): no sharing."""
    marker = f"roots-{os.getpid()}"
    config = config_with(tmp_path, marker, FAKE_UPSTREAM, "good")
    projects = [tmp_path / "one", tmp_path / "two"]
    shims = []
    for project in projects:
        project.mkdir()
        shims.append(raw_shim(shared, project, "--config", str(config)))
        initialize(shims[-1])
    wait_until(lambda: len(running(marker, FAKE_UPSTREAM)) == 2, "one upstream per set of roots")
    status = shared.status()
    assert status["sessions"] == 2 and status["upstreams"] == 2, status
    for shim in shims:
        shim.kill()


def two_upstreams(directory: Path, marker: str) -> Path:
    """The user's own config (named, outside the project) with two stdio upstreams."""
    config = directory / "awf-mcp.toml"
    servers = "".join(
        f'[servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{FAKE_UPSTREAM}", "good"]\n'
        f'env = {{ TEST_MARK = "{marker}" }}\n'
        for name in ("one", "two")
    )
    config.write_text(servers)
    return config


def test_eight_sessions_share_two_upstream_processes(shared: Shared, tmp_path: Path) -> None:
    """8 sessions with the same two upstreams, in one directory: 2 upstream processes, every
    session's calls answered (each its own answer, by id), and the processes released: they
    stop once no session holds them for ``idle_seconds``."""
    marker = f"share-{os.getpid()}"
    config = two_upstreams(tmp_path, marker)
    config.write_text("[shared]\nidle_seconds = 2\n" + config.read_text())
    project = tmp_path / "project"
    project.mkdir()
    answers: dict[int, list[str]] = {}
    counted: dict[str, Any] = {}

    async def one(index: int, ready: anyio.Event, all_ready: anyio.Event) -> None:
        async with mcp_session(
            "--root", str(project), "--config", str(config), cwd=project, env=shared.env
        ) as s:
            tools = {tool.name for tool in (await s.list_tools()).tools}
            assert {"one_wait", "two_wait"} <= tools, tools
            said = [
                text_of(await s.call_tool(name, {"seconds": 0.05 * (index % 3)}))
                for name in ("one_wait", "two_wait")
            ]
            answers[index] = said
            ready.set()
            await all_ready.wait()

    async def run() -> None:
        events = [anyio.Event() for _ in range(8)]
        all_ready = anyio.Event()

        async def gate() -> None:
            for event in events:
                await event.wait()
            counted["status"] = await anyio.to_thread.run_sync(shared.status)
            counted["servers"] = running(marker, FAKE_UPSTREAM)
            all_ready.set()

        async with anyio.create_task_group() as group:
            group.start_soon(gate)
            for index in range(8):
                group.start_soon(one, index, events[index], all_ready)

    anyio.run(run)
    assert sorted(answers) == list(range(8))
    for said in answers.values():
        assert said == ["waited", "waited"], said
    assert counted["status"]["sessions"] == 8, counted
    assert len(counted["servers"]) == 2, counted
    assert counted["status"]["upstreams"] == 2, counted
    wait_until(lambda: not running(marker, FAKE_UPSTREAM), "the released upstreams stop after idle_seconds")
