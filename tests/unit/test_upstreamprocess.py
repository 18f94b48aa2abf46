"""Spawning upstream server processes: own process group, early launch handed over only on an exact match."""

from __future__ import annotations

import os
import sys

import pytest

from awf_mcp.ops import upstreamprocess
from awf_mcp.ops.upstreamprocess import claim, launch_early, launch_key, spawn

SLEEPER = ["-c", "import sys; sys.stdin.read()"]


def test_a_spawned_server_leads_its_own_process_group() -> None:
    process = spawn(sys.executable, SLEEPER, dict(os.environ), "")
    try:
        assert os.getpgid(process.pid) == process.pid != os.getpgid(0)
    finally:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            assert pipe is not None
            pipe.close()


def test_a_command_not_on_path_is_named() -> None:
    with pytest.raises(FileNotFoundError, match="command 'no-such-mcp-server' was not found on PATH"):
        spawn("no-such-mcp-server", [], {"PATH": "/nonexistent"}, "")


def test_an_early_launch_is_claimed_once_and_only_with_the_same_key() -> None:
    env = dict(os.environ)
    key = launch_key(sys.executable, SLEEPER, env, "")
    launch_early({"same": key, "changed": key})
    process = claim("same", key)
    assert process is not None and process.poll() is None
    assert claim("same", key) is None  # handed over once
    other = launch_key(sys.executable, [*SLEEPER, "x"], env, "")
    assert claim("changed", other) is None  # started differently: killed, not handed over
    assert not upstreamprocess._early
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=10) == 0
