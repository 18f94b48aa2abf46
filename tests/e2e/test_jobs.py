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
