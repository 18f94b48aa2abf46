"""The keeper (awf_mcp/processes/children.py) alone: exit status mirrored, cwd by descriptor, nothing left."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

from awf_mcp.processes import children
from tests.helpers.harness import marked_pids, wait_until


def run_kept(argv: list[str], cwd_fd: int | None = None) -> subprocess.CompletedProcess[bytes]:
    command, env = children.kept_command(argv, dict(os.environ), cwd_fd=cwd_fd, grace=0.2)
    return subprocess.run(
        command, env=env, capture_output=True, timeout=30, pass_fds=() if cwd_fd is None else (cwd_fd,)
    )


def test_the_exit_status_is_mirrored() -> None:
    assert run_kept(["/bin/sh", "-c", "exit 7"]).returncode == 7
    assert run_kept(["/bin/sh", "-c", "kill -TERM $$"]).returncode == -15
    assert run_kept(["/bin/sh", "-c", "kill -KILL $$"]).returncode == -9


def test_the_command_runs_in_the_directory_handed_over(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        done = run_kept(["/bin/sh", "-c", "pwd -P"], cwd_fd=fd)
    finally:
        os.close(fd)
    assert done.stdout.decode().strip() == str(tmp_path.resolve())


def test_the_keeper_command_line_does_not_carry_the_command() -> None:
    marker = f"awf-keeper-{uuid.uuid4().hex}"
    command, env = children.kept_command(["/bin/sh", "-c", f"sleep 5; : {marker}"], dict(os.environ))
    assert not any(marker in part for part in command)
    process = subprocess.Popen(command, env=env)
    try:
        assert wait_until(lambda: len(marked_pids(marker)) == 1)
    finally:
        process.terminate()
        process.wait(10)
    assert wait_until(lambda: marked_pids(marker) == [])


def test_detached_descendants_end_with_the_command() -> None:
    marker = f"awf-keeper-{uuid.uuid4().hex}"
    done = run_kept(["/bin/sh", "-c", f"setsid -f sh -c 'sleep 300; : {marker}'; sleep 0.3"])
    assert done.returncode == 0
    assert wait_until(lambda: marked_pids(marker) == [], timeout=5)
