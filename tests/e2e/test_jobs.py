"""Background Bash jobs end to end: they never outlive the server, however it ends.

Each test starts ``awf-mcp serve``, starts a background job whose shell leaves a child
and a grandchild marked with a unique string, ends the server one way (stdin EOF,
SIGTERM, SIGINT, ``kill -9``), and proves through ``/proc`` that nothing marked is left.
"""

from __future__ import annotations

import signal
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers.harness import RawServer, marked_pids

pytestmark = [pytest.mark.e2e]


def wait_until(predicate: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("ending", ["eof", "sigterm", "sigint", "sigkill"])
def test_no_background_job_outlives_the_server(tmp_path: Path, ending: str) -> None:
    marker = f"awf-job-{uuid.uuid4().hex}"
    command = f"(exec -a {marker}-grandchild sleep 300) & exec -a {marker}-child sleep 300"
    server = RawServer("--root", str(tmp_path))
    try:
        server.initialize()
        reply = server.request(
            "tools/call", {"name": "Bash", "arguments": {"command": command, "run_in_background": True}}
        )
        assert "started background job bash_1" in reply["result"]["content"][0]["text"]
        assert wait_until(lambda: len(marked_pids(marker)) >= 2, 10), marked_pids(marker)  # two sleeps
        if ending == "eof":
            assert server.process.stdin is not None
            server.process.stdin.close()
        else:
            server.process.send_signal(
                {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT, "sigkill": signal.SIGKILL}[ending]
            )
        server.process.wait(timeout=10)
        assert wait_until(lambda: not marked_pids(marker), 5), f"left running: {marked_pids(marker)}"
    finally:
        server.kill()


@pytest.mark.anyio
@pytest.mark.parametrize(("client", "lines"), [(None, 3000), ("claude-code", 10_000)])
async def test_bash_output_brings_every_line_once_at_the_clients_budget(
    tmp_path: Path, client: str | None, lines: int
) -> None:
    import anyio

    from tests.helpers.harness import mcp_session, text_of

    budget = 40_000 if client else 10_000
    async with mcp_session("--root", str(tmp_path), client_name=client) as session:
        await session.call_tool("Bash", {"command": f"seq 1 {lines}", "run_in_background": True})
        await anyio.sleep(0.5)
        seen: list[str] = []
        for _ in range(100):
            page = await session.call_tool("BashOutput", {"job_id": "bash_1"})
            text = text_of(page)
            assert len(text.encode()) <= budget and not page.is_error, text[-300:]
            if "--- stdout (new) ---\n" in text:
                seen += text.split("--- stdout (new) ---\n", 1)[1].split("\n[awf-mcp:", 1)[0].split()
            if "exited" in text.splitlines()[0] and "call BashOutput again" not in text:
                break
        assert seen == [str(n) for n in range(1, lines + 1)]
