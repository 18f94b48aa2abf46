"""Background jobs paged by BashOutput, and the output files they keep on disk.

Every line a job prints must reach the caller exactly once and in order, whatever the
budget and however much waits; the output files must not outgrow their bound, and a job
that is forgotten must take its files with it.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.builtins import BuiltinTools, jobs
from awf_mcp.builtins.jobs import MAX_KEPT
from awf_mcp.builtins.outputs import OutputDir
from awf_mcp.ports import CallContext, ToolResult, bind_call_context, unbind_call_context


async def bash_output(tools: BuiltinTools, budget: int, job_id: str = "bash_1") -> ToolResult:
    token = bind_call_context(CallContext(tool_name="BashOutput", output_budget=budget))
    try:
        result = await tools.call_tool("BashOutput", {"job_id": job_id})
    finally:
        unbind_call_context(token)
    assert isinstance(result, ToolResult)
    return result


def section(text: str, name: str) -> str:
    """The lines of one ``--- name (new) ---`` section of a BashOutput page ("" when absent)."""
    marker = f"--- {name} (new) ---\n"
    if marker not in text:
        return ""
    body = text.split(marker, 1)[1]
    for end in ("\n--- ", "\n[awf-mcp: "):
        body = body.split(end, 1)[0]
    return body if f"the last {name} line" in text else body + "\n"


async def read_everything(tools: BuiltinTools, budget: int) -> tuple[str, str, int]:
    """Page a job's stdout and stderr with BashOutput until it has ended and nothing waits."""
    stdout = stderr = ""
    pages = 0
    with anyio.fail_after(60):
        while True:
            result = await bash_output(tools, budget)
            text = result.content[0].text
            assert len(text.encode()) <= budget, (len(text.encode()), budget)
            pages += 1
            stdout += section(text, "stdout")
            stderr += section(text, "stderr")
            if "running for" not in text.splitlines()[0] and "wait: call BashOutput again" not in text:
                return stdout, stderr, pages
            if "wait: call BashOutput again" not in text:
                await anyio.sleep(0.02)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("lines", "budget"), [(3000, 10_000), (10_000, 40_000), (3000, 1_000), (20_000, 32_000)]
)
async def test_bash_output_returns_every_line_once_in_order(
    tools: BuiltinTools, lines: int, budget: int
) -> None:
    await tools.call_tool("Bash", {"command": f"seq 1 {lines}", "run_in_background": True})
    await anyio.sleep(0.3)  # let it all be written before the first read: most of it waits
    stdout, stderr, pages = await read_everything(tools, budget)
    assert stdout.split() == [str(n) for n in range(1, lines + 1)]
    assert stderr == ""
    assert pages > 1
    await tools.close()


@pytest.mark.anyio
@pytest.mark.parametrize("budget", [1_000, 10_000])
async def test_bash_output_pages_both_streams_whole(tools: BuiltinTools, budget: int) -> None:
    command = "seq 1 4000; seq 100001 102000 >&2; sleep 0.2; seq 4001 5000; seq 102001 103000 >&2"
    await tools.call_tool("Bash", {"command": command, "run_in_background": True})
    stdout, stderr, _ = await read_everything(tools, budget)
    assert stdout.split() == [str(n) for n in range(1, 5001)]
    assert stderr.split() == [str(n) for n in range(100001, 103001)]
    await tools.close()


@pytest.mark.anyio
async def test_bash_output_of_long_lines_and_bytes_that_are_not_utf8(tools: BuiltinTools) -> None:
    # A 5,000-character line of "é" (two bytes each) and a line of 3,000 bytes 0xff (three
    # bytes each once shown as U+FFFD): neither fits one page of a 1,000-byte budget.
    command = (
        "python3 -c 'import sys; w = sys.stdout.buffer; "
        'w.write("é".encode() * 5000 + b"\\n" + b"\\xff" * 3000 + b"\\nend\\n")\''
    )
    await tools.call_tool("Bash", {"command": command, "run_in_background": True})
    stdout, _, pages = await read_everything(tools, 1_000)
    assert stdout == "é" * 5000 + "\n" + "\ufffd" * 3000 + "\nend\n"
    assert pages >= 20
    await tools.close()


@pytest.mark.anyio
async def test_forgotten_jobs_take_their_output_files_with_them(tools: BuiltinTools) -> None:
    for _ in range(MAX_KEPT + 20):
        await tools.call_tool("Bash", {"command": "echo out; echo err >&2", "run_in_background": True})
        with anyio.fail_after(10):
            while (
                "running"
                in (await bash_output(tools, 10_000, f"bash_{_ + 1}")).content[0].text.split("\n")[0]
            ):
                await anyio.sleep(0.01)
    directory = tools._outputs.path
    assert directory is not None
    names = sorted(os.listdir(directory))
    assert len(names) == 2 * MAX_KEPT, names
    assert (
        "bash_1.stdout-1" not in names and f"bash_{MAX_KEPT + 20}.stdout-{2 * (MAX_KEPT + 20) - 1}" in names
    )
    await tools.close()


def test_output_files_stay_within_their_bound(tmp_path: Path) -> None:
    outputs = OutputDir(limit=10_000)
    finished = []
    for _ in range(5):
        log = outputs.new_log("bash.stdout", 1000)
        log.feed(b"x" * 3000)
        log.close()
        finished.append(log)
        assert outputs.used <= 10_000
    assert [log.removed for log in finished] == [True, True, False, False, False]
    assert not os.path.exists(finished[0].path) and os.path.getsize(finished[4].path) == 3000
    running = outputs.new_log("bash.stdout", 1000)
    running.feed(b"y" * 20_000)  # finished files make room, then what does not fit is counted, not kept
    assert all(log.removed for log in finished)
    assert running.written == 10_000 and running.dropped == 10_000
    running.feed(b"z" * 10)  # the file stays the stream's start: nothing after a gap
    assert running.dropped == 10_010 and os.path.getsize(running.path) == 10_000
    second = outputs.new_log("bash.stderr", 1000)
    second.feed(b"w" * 10)  # a stream still being written is never removed for another
    assert second.written == 0 and not running.removed
    assert outputs.used <= 10_000
    outputs.close()


@pytest.mark.anyio
async def test_bash_output_says_when_the_files_were_removed(tools: BuiltinTools) -> None:
    tools._outputs.limit = 6_000
    await tools.call_tool("Bash", {"command": "seq 1 1000", "run_in_background": True})
    await anyio.sleep(0.3)
    first = await bash_output(tools, 1_000)
    assert "--- stdout (new) ---\n1\n" in first.content[0].text
    await tools.call_tool("Bash", {"command": "seq 1 2000"})  # pushes the finished job's file out
    rest = (await bash_output(tools, 10_000)).content[0].text
    assert "its stdout file was removed to make room for newer output" in rest
    assert "wait: call BashOutput again" not in rest
    await tools.close()


@pytest.mark.anyio
async def test_jobs_belong_to_their_session(tools: BuiltinTools) -> None:
    async def as_session(session: str, name: str, **arguments: object) -> ToolResult:
        token = bind_call_context(CallContext(tool_name=name, output_budget=10_000, session=session))
        try:
            result = await tools.call_tool(name, arguments)
        finally:
            unbind_call_context(token)
        assert isinstance(result, ToolResult)
        return result

    from awf_mcp.builtins.jobs import MAX_JOBS
    from awf_mcp.ports import ToolError

    for _ in range(MAX_JOBS):
        await as_session("a", "Bash", command="sleep 300", run_in_background=True)
    with pytest.raises(ToolError, match="no background job 'bash_1'; the jobs are: none"):
        await as_session("b", "KillShell", job_id="bash_1")
    started = await as_session("b", "Bash", command="echo b", run_in_background=True)  # a's jobs do not count
    assert f"bash_{MAX_JOBS + 1}" in started.content[0].text
    with pytest.raises(ToolError, match=f"{MAX_JOBS} background jobs are running already"):
        await as_session("a", "Bash", command="true", run_in_background=True)
    assert "killed" in (await as_session("a", "KillShell", job_id="bash_1")).content[0].text
    await tools.close()


@pytest.mark.anyio
@pytest.mark.parametrize("settle", [jobs.SETTLE_SECONDS, 0.0])
async def test_a_job_that_has_exited_shows_its_last_output_or_says_to_call_again(
    tools: BuiltinTools, monkeypatch: pytest.MonkeyPatch, settle: float
) -> None:
    """The shell has exited, but its output is still in the pipe when BashOutput comes (here the
    reader is held back 0.2 s): the page waits for it. The control, without that wait, shows the
    exit without the output, and says to call again rather than letting the caller stop there."""
    pump = jobs._pump

    def late_pump(pipe: Any, log: Any) -> None:
        time.sleep(0.2)
        pump(pipe, log)

    monkeypatch.setattr(jobs, "_pump", late_pump)
    monkeypatch.setattr(jobs, "SETTLE_SECONDS", settle)
    await tools.call_tool("Bash", {"command": "echo the-last-words", "run_in_background": True})
    await anyio.sleep(0.1)  # the shell has exited; its reader has not read yet
    text = (await bash_output(tools, 10_000)).content[0].text
    assert text.startswith("job bash_1: exited with code 0"), text
    if settle:
        assert "the-last-words" in text and "call BashOutput again" not in text, text
    else:
        assert "the-last-words" not in text and "call BashOutput again" in text, text
        await anyio.sleep(0.3)
        assert "the-last-words" in (await bash_output(tools, 10_000)).content[0].text
    await tools.close()
