"""Bash called directly: output, exit codes, caps, and that timeouts, cancellation and close
leave nothing behind.

Leftover processes are found through ``/proc``: every test command carries a
unique marker in the command lines of the processes it starts.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import anyio
import pytest

from awf_mcp.builtins import BuiltinTools
from awf_mcp.ports import CallContext, ToolError, ToolResult, bind_call_context, unbind_call_context
from awf_mcp.processes.containment import policy
from awf_mcp.processes.containment.policy import SandboxPolicy
from tests.helpers.harness import marked_pids
from tests.helpers.providers import call_with_budget


@pytest.fixture
def marker() -> str:
    return f"awf-test-{uuid.uuid4().hex}"


def spawner(marker: str) -> str:
    """A command starting two marked grandchildren and a marked foreground sleeper."""
    child = f"sh -c 'sleep 300; true {marker}'"
    return f"{child} & {child} & sleep 300; true {marker}"


def my_zombies() -> list[int]:
    zombies = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == os.getpid():
            zombies.append(int(entry))
    return zombies


def assert_nothing_left(marker: str) -> None:
    deadline = time.monotonic() + 5
    while marked_pids(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked_pids(marker) == []
    assert my_zombies() == []


async def wait_for_marked(marker: str, count: int) -> None:
    with anyio.fail_after(10):
        while len(marked_pids(marker)) < count:
            await anyio.sleep(0.05)


async def run(tools: BuiltinTools, **arguments: object) -> ToolResult:
    result = await tools.call_tool("Bash", arguments)
    assert isinstance(result, ToolResult)
    return result


@pytest.mark.anyio
async def test_output_exit_code_and_cwd(tools: BuiltinTools, root: Path) -> None:
    (root / "sub").mkdir()
    result = await run(tools, command="echo out; echo err >&2; pwd", cwd="sub")
    assert not result.is_error
    assert result.content[0].text == f"exit code 0\n--- stdout ---\nout\n{root / 'sub'}\n--- stderr ---\nerr"
    default = await run(tools, command="pwd; read line; echo read=$?")
    assert str(root) in default.content[0].text and "read=1" in default.content[0].text


@pytest.mark.anyio
async def test_non_zero_exit_is_an_error(tools: BuiltinTools) -> None:
    result = await run(tools, command="echo failing >&2; exit 7")
    assert result.is_error
    assert result.content[0].text == "exit code 7\n--- stderr ---\nfailing"
    silent = await run(tools, command="true")
    assert silent.content[0].text == "exit code 0\n(no output)"
    killed = await run(tools, command="kill -9 $$")
    assert killed.is_error and "SIGKILL" in killed.content[0].text


@pytest.mark.anyio
async def test_timeout_argument_is_checked(tools: BuiltinTools) -> None:
    for bad in (0, -1, 601):
        with pytest.raises(ToolError, match="between 1 and 600"):
            await tools.call_tool("Bash", {"command": "true", "timeout_seconds": bad})
    with pytest.raises(ToolError, match="empty"):
        await tools.call_tool("Bash", {"command": "   "})


@pytest.mark.anyio
async def test_big_output_keeps_head_and_tail_and_the_whole_stream_is_readable(tools: BuiltinTools) -> None:
    text = await call_with_budget(tools, "Bash", 10_000, command="seq 1 300000; echo the-error >&2")
    assert len(text.encode()) <= 10_000
    assert text.startswith("exit code 0\n--- stdout ---\n1\n2\n3\n")
    assert "\n300000\n--- stderr ---\nthe-error" in text
    assert "lines (" in text and "left out ...]" in text
    note = text.rsplit("\n", 1)[-1]
    assert note.startswith("[awf-mcp: stdout cut; the whole stdout is in /")
    path = note.split(" is in ")[1].split(":")[0]
    cut_at = int(note.split("offset=")[1].split()[0])
    whole = await call_with_budget(tools, "Read", 10_000, path=path, offset=cut_at, limit=3)
    first_missing = cut_at + 1
    assert whole.startswith(f"{first_missing}\n{first_missing + 1}\n{first_missing + 2}\n")


@pytest.mark.anyio
async def test_output_within_the_budget_is_whole_and_names_no_file(tools: BuiltinTools) -> None:
    text = await call_with_budget(tools, "Bash", 10_000, command="seq 1 100")
    assert text == "exit code 0\n--- stdout ---\n" + "\n".join(str(n) for n in range(1, 101))


@pytest.mark.anyio
async def test_the_output_directory_is_readable_not_writable(tools: BuiltinTools) -> None:
    text = await call_with_budget(tools, "Bash", 1_000, command="seq 1 5000")
    path = text.rsplit(" is in ", 1)[1].split(":")[0]
    with pytest.raises(ToolError, match="own output directory"):
        await tools.call_tool("Write", {"path": path, "content": "x"})
    await tools.close()
    assert not os.path.exists(os.path.dirname(path))


@pytest.mark.anyio
async def test_background_job_starts_reads_incrementally_and_is_killed(
    tools: BuiltinTools, marker: str
) -> None:
    started = await call_with_budget(
        tools,
        "Bash",
        10_000,
        command=f"echo first; sleep 0.3; echo second; exec -a {marker} sleep 300",
        run_in_background=True,
    )
    assert started.startswith("started background job bash_1")
    await wait_for_marked(marker, 1)
    seen = ""
    for _ in range(50):
        page = await call_with_budget(tools, "BashOutput", 10_000, job_id="bash_1")
        assert page.startswith("job bash_1: running")
        seen += page
        if "second" in seen:
            break
        await anyio.sleep(0.05)
    assert seen.count("first") == 1 and seen.count("second") == 1
    again = await call_with_budget(tools, "BashOutput", 10_000, job_id="bash_1")
    assert "(no new output)" in again and "first" not in again
    killed = await call_with_budget(tools, "KillShell", 10_000, job_id="bash_1")
    assert "killed" in killed
    assert_nothing_left(marker)
    after = await tools.call_tool("BashOutput", {"job_id": "bash_1"})
    assert isinstance(after, ToolResult) and after.is_error and "killed (KillShell)" in after.content[0].text
    with pytest.raises(ToolError, match="no background job 'bash_9'; the jobs are: bash_1"):
        await tools.call_tool("BashOutput", {"job_id": "bash_9"})


@pytest.mark.anyio
async def test_background_jobs_are_capped_and_closed_with_the_server(
    tools: BuiltinTools, marker: str
) -> None:
    from awf_mcp.builtins.jobs import MAX_JOBS

    for _ in range(MAX_JOBS):
        await tools.call_tool("Bash", {"command": f"exec -a {marker} sleep 300", "run_in_background": True})
    with pytest.raises(ToolError, match=f"{MAX_JOBS} background jobs are running already"):
        await tools.call_tool("Bash", {"command": "true", "run_in_background": True})
    await wait_for_marked(marker, MAX_JOBS)
    await tools.close()
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_an_exited_job_reports_its_code_as_an_error(tools: BuiltinTools) -> None:
    await tools.call_tool("Bash", {"command": "echo out; exit 3", "run_in_background": True})
    for _ in range(100):
        result = await tools.call_tool("BashOutput", {"job_id": "bash_1"})
        assert isinstance(result, ToolResult)
        if "exited" in result.content[0].text:
            break
        await anyio.sleep(0.05)
    assert result.is_error and "exited with code 3" in result.content[0].text


@pytest.mark.anyio
async def test_timeout_kills_the_whole_group(tools: BuiltinTools, marker: str) -> None:
    started = time.monotonic()
    result = await run(tools, command=f"echo before; {spawner(marker)}", timeout_seconds=1)
    assert time.monotonic() - started < 5
    assert result.is_error
    text = result.content[0].text
    assert text.startswith("timed out after 1 s; the command's process group was killed")
    assert "before" in text
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_background_processes_end_with_the_call(tools: BuiltinTools, marker: str) -> None:
    started = time.monotonic()
    result = await run(tools, command=f"(sleep 300; true {marker}) & echo started", timeout_seconds=30)
    assert result.content[0].text == "exit code 0\n--- stdout ---\nstarted"
    assert time.monotonic() - started < 10
    assert_nothing_left(marker)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "detach",
    [
        "setsid sh -c 'sleep 301; true {m}' &",
        "setsid -f sh -c 'sleep 302; true {m}'",
        "nohup setsid sh -c 'sleep 303; true {m}' >/dev/null 2>&1 &",
        "python3 -c 'import os,time; os.fork() or (os.setsid(), time.sleep(304))' {m} &",
    ],
)
async def test_detached_processes_end_with_the_call(tools: BuiltinTools, marker: str, detach: str) -> None:
    result = await run(tools, command=detach.format(m=marker) + "\nsleep 0.5; echo done")
    assert result.content[0].text.startswith("exit code 0"), result.content[0].text
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_what_a_killed_keeper_left_is_ended_too(
    tools: BuiltinTools, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only an uncontained command can reach its keeper (see the next test).
    monkeypatch.setattr(policy, "_active", policy._Active(SandboxPolicy(mode="off")))
    command = f"setsid sh -c 'sleep 305; true {marker}' & sleep 0.5; kill -9 $PPID; sleep 5"
    result = await run(tools, command=command)
    assert result.is_error and "SIGKILL" in result.content[0].text
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_a_contained_command_cannot_reach_its_keeper(tools: BuiltinTools) -> None:
    keeper = "$(awk '{print $4}' /proc/$$/stat)"
    result = await run(tools, command=f"kill -9 {keeper} $PPID; echo still here", timeout_seconds=30)
    assert "still here" in result.content[0].text, result.content[0].text


@pytest.mark.anyio
async def test_cwd_is_entered_by_descriptor_not_by_name(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory swapped for a link to outside after the check never becomes the command's cwd."""
    from awf_mcp.builtins import Sandbox

    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "d").mkdir()
    sandbox = Sandbox([str(root)])
    checked = sandbox.resolve_dir

    def check_then_swap(arg: str | None, what: str = "cwd") -> str:
        real = checked(arg, what)
        (root / "d").rename(root / "d.old")
        (root / "d").symlink_to(outside)
        return real

    monkeypatch.setattr(sandbox, "resolve_dir", check_then_swap)
    tools = BuiltinTools(sandbox)
    try:
        result = await tools.call_tool("Bash", {"command": "pwd -P", "cwd": "d"})
    except ToolError as refused:  # the swap is seen: refused, and nothing ran
        assert "'d'" in str(refused), refused
    else:
        assert str(outside) not in result.content[0].text
    await tools.close()


@pytest.mark.anyio
async def test_cancelling_the_call_kills_the_group(tools: BuiltinTools, marker: str) -> None:
    finished: list[ToolResult] = []

    async def call() -> None:
        finished.append(await run(tools, command=spawner(marker)))

    async with anyio.create_task_group() as group:
        group.start_soon(call)
        await wait_for_marked(marker, 3)
        group.cancel_scope.cancel()
    assert finished == []
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_cancelled_flag_kills_the_group(tools: BuiltinTools, marker: str) -> None:
    context = CallContext(tool_name="Bash", cancelled=threading.Event())
    token = bind_call_context(context)
    try:
        async with anyio.create_task_group() as group:
            results: list[ToolResult] = []

            async def call() -> None:
                results.append(await run(tools, command=spawner(marker)))

            group.start_soon(call)
            await wait_for_marked(marker, 3)
            context.cancelled.set()
    finally:
        unbind_call_context(token)
    assert results[0].is_error and results[0].content[0].text.startswith("cancelled")
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_close_kills_running_groups(tools: BuiltinTools, marker: str) -> None:
    results: list[ToolResult] = []
    async with anyio.create_task_group() as group:

        async def call() -> None:
            results.append(await run(tools, command=spawner(marker)))

        group.start_soon(call)
        await wait_for_marked(marker, 3)
        await tools.close()
    assert results[0].is_error
    assert_nothing_left(marker)


@pytest.mark.anyio
async def test_progress_is_reported_every_second(tools: BuiltinTools) -> None:
    reports: list[tuple[float, float | None, str | None]] = []

    def record(progress: float, total: float | None = None, message: str | None = None) -> None:
        reports.append((progress, total, message))

    context = CallContext(tool_name="Bash", report_progress=record)
    token = bind_call_context(context)
    try:
        result = await run(tools, command="sleep 2.5", timeout_seconds=30)
    finally:
        unbind_call_context(token)
    assert not result.is_error
    assert [report[0] for report in reports] == [1, 2]
    assert reports[0][1] == 30 and reports[0][2] == "running for 1s"
