"""Background jobs over HTTP belong to the session that started them.

Two SDK clients hold two Streamable HTTP sessions with one server: neither can read,
kill or even see the other's jobs, and each kills its own.
"""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.test_http import (
    TOKEN,
    http_server,  # noqa: F401  (the fixture)
)
from tests.helpers.harness import marked_pids, text_of, wait_until

pytestmark = pytest.mark.e2e


@asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


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
