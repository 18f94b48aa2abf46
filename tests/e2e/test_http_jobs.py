"""Background jobs over HTTP belong to the session and the caller that started them.

Two SDK clients hold two Streamable HTTP sessions with one server: neither can read,
kill or even see the other's jobs, and each kills its own. On the stateless revision, which
has no session, two callers (two named tokens) are kept apart the same way, and one caller
finds its job again through another connection.
"""

from __future__ import annotations

import secrets
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.e2e.test_http import (
    http_server,  # noqa: F401  (the fixture)
    http_session,
    start_http,
    stop,
)
from tests.helpers.harness import marked_pids, text_of, wait_until

pytestmark = pytest.mark.e2e


@pytest.mark.anyio
async def test_one_session_cannot_read_or_kill_another_sessions_job(
    http_server: tuple[str, subprocess.Popen[bytes]],  # noqa: F811
) -> None:
    url, _ = http_server
    marker = f"awf-http-job-{uuid.uuid4().hex}"
    async with http_session(url) as alice, http_session(url) as bob:
        started = await alice.call_tool(
            "Bash", {"command": f"exec -a {marker} sleep 300", "run_in_background": True}
        )
        assert "started background job bash_1" in text_of(started)
        assert wait_until(lambda: len(marked_pids(marker)) == 1, 10)
        for tool in ("BashOutput", "KillShell"):
            refused = await bob.call_tool(tool, {"job_id": "bash_1"})
            assert refused.is_error and "no background job 'bash_1'; the jobs are: none" in text_of(refused)
        assert len(marked_pids(marker)) == 1
        own = await bob.call_tool("Bash", {"command": "echo from bob", "run_in_background": True})
        assert "started background job bash_2" in text_of(own)
        hidden = await alice.call_tool("BashOutput", {"job_id": "bash_2"})
        assert hidden.is_error and "the jobs are: bash_1 (running" in text_of(hidden)
        assert "bash_2" not in text_of(hidden).split("the jobs are:")[1]
        running = await alice.call_tool("BashOutput", {"job_id": "bash_1"})
        assert not running.is_error and text_of(running).startswith("job bash_1: running")
        killed = await alice.call_tool("KillShell", {"job_id": "bash_1"})
        assert "killed" in text_of(killed)
        assert wait_until(lambda: not marked_pids(marker), 10)


@pytest.mark.anyio
async def test_without_a_session_a_callers_jobs_are_that_callers_alone(tmp_path: Path) -> None:
    """The stateless revision has no session: a job belongs to the caller (here a named token),
    whatever connection it calls through, and to no other caller."""
    alice_token, bob_token = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"alice {alice_token}\nbob {bob_token}\n")
    tokens.chmod(0o600)
    url, process = start_http("--token-file", str(tokens), "--root", str(tmp_path))
    marker = f"awf-stateless-job-{uuid.uuid4().hex}"
    try:
        async with (
            http_session(url, alice_token, stateless=True) as alice,
            http_session(url, bob_token, stateless=True) as bob,
        ):
            started = await alice.call_tool(
                "Bash", {"command": f"exec -a {marker} sleep 300", "run_in_background": True}
            )
            assert "started background job bash_1" in text_of(started), text_of(started)
            assert wait_until(lambda: len(marked_pids(marker)) == 1, 10)
            for tool in ("BashOutput", "KillShell"):
                refused = await bob.call_tool(tool, {"job_id": "bash_1"})
                assert refused.is_error, text_of(refused)
                assert "no background job 'bash_1'; the jobs are: none" in text_of(refused)
            assert len(marked_pids(marker)) == 1
        # Another connection of the same caller finds the job.
        async with http_session(url, alice_token, stateless=True) as alice_again:
            running = await alice_again.call_tool("BashOutput", {"job_id": "bash_1"})
            assert not running.is_error, text_of(running)
            assert text_of(running).startswith("job bash_1: running"), text_of(running)
            killed = await alice_again.call_tool("KillShell", {"job_id": "bash_1"})
            assert "killed" in text_of(killed)
        assert wait_until(lambda: not marked_pids(marker), 10)
    finally:
        stop(process)
