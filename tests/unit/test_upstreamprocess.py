"""Spawning upstream server processes: own process group, early launch handed over only on an exact match."""

from __future__ import annotations

import os
import sys

import pytest

from awf_mcp.processes import upstreamprocess
from awf_mcp.processes.upstreamprocess import claim, launch_early, launch_key, spawn, stop
from tests.helpers.harness import marked_pids, wait_until

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
    launch_early({"same": (key, ()), "changed": (key, ())})
    process = claim("same", key)
    assert process is not None and process.poll() is None
    assert claim("same", key) is None  # handed over once
    other = launch_key(sys.executable, [*SLEEPER, "x"], env, "")
    assert claim("changed", other) is None  # started differently: killed, not handed over
    assert not upstreamprocess._early
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=10) == 0


DETACHING = [
    "-c",
    "import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
    "'import os, sys, time; os.setsid(); time.sleep(60)', sys.argv[1]]); sys.stdin.read()",
]


@pytest.mark.parametrize("end", ["stdin EOF", "stop"])
def test_what_a_server_detached_ends_with_it(end: str) -> None:
    tag = f"detached-{os.getpid()}-{end.replace(' ', '-')}"
    process = spawn(sys.executable, [*DETACHING, tag], dict(os.environ), "")
    try:
        assert wait_until(lambda: len(marked_pids(tag)) == 1, timeout=10)
        assert process.stdin is not None
        if end == "stdin EOF":
            process.stdin.close()
            process.wait(timeout=10)
        else:
            stop(process)
        assert wait_until(lambda: not marked_pids(tag), timeout=5)
    finally:
        for pid in marked_pids(tag):
            os.kill(pid, 9)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
