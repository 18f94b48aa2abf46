"""What an upstream stdio server starts ends with awf-mcp, however it detached.

The upstream (tests/upstreams/fake_upstream.py with ``FAKE_DETACHED_CHILD``) starts a child
that calls ``setsid()``, ignores SIGTERM and sleeps: a daemon in a session of its own, outside
the upstream's process group, that no stdin EOF reaches. The upstream itself outlives its
stdin EOF and ignores SIGTERM too (``FAKE_IGNORE_EOF``) in the second case of each. Each way
awf-mcp ends (stdin EOF, SIGTERM, ``kill -9``) must leave neither the upstream nor that child
running.
"""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e.test_upstream import NO_PLUGINS, STUBBORN, fake, write_config
from tests.helpers.harness import RawServer, marked_pids, wait_until

pytestmark = pytest.mark.e2e


def close_stdin(server: RawServer) -> None:
    server.close_stdin()


def sigterm(server: RawServer) -> None:
    server.process.send_signal(signal.SIGTERM)


def sigkill(server: RawServer) -> None:
    server.process.send_signal(signal.SIGKILL)


@pytest.mark.parametrize("stubborn", [False, True], ids=["", "stubborn upstream"])
@pytest.mark.parametrize("end", [close_stdin, sigterm, sigkill], ids=["stdin EOF", "SIGTERM", "kill -9"])
def test_a_detached_child_of_an_upstream_ends_with_awf_mcp(
    tmp_path: Path, end: Callable[[RawServer], None], stubborn: bool
) -> None:
    markers = tmp_path / f"markers-{uuid.uuid4().hex[:8]}"
    markers.mkdir()
    tag = f"detached-{uuid.uuid4().hex}"
    config = write_config(
        tmp_path,
        fake("one", "good", markers, env={"FAKE_DETACHED_CHILD": tag, **(STUBBORN if stubborn else {})}),
    )
    try:
        with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
            run_and_end(server, markers, tag, end)
    finally:
        for pid in marked_pids(tag):  # a failure leaves no sleeper behind
            os.kill(pid, signal.SIGKILL)


def run_and_end(server: RawServer, markers: Path, tag: str, end: Callable[[RawServer], None]) -> None:
    """Start the upstream and its child through awf-mcp, end awf-mcp by ``end``, check nothing is left."""
    server.initialize()
    assert "one_wait" in {tool["name"] for tool in server.request("tools/list")["result"]["tools"]}
    assert wait_until(lambda: len(marked_pids(tag)) == 1, timeout=10), "the upstream started no child"
    assert len(marked_pids(str(markers))) == 1
    end(server)
    server.wait(timeout=10)
    assert wait_until(lambda: not marked_pids(tag), timeout=5), f"left running: {marked_pids(tag)}"
    assert wait_until(lambda: not marked_pids(str(markers)), timeout=5)
