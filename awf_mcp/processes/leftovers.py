"""The backstop for a keeper that was itself killed: its command's processes, found and ended.

Contract
--------
A keeper (:mod:`.children`) ends everything its command started, unless it is killed with
SIGKILL first. The server that started it is a child subreaper
(:func:`~awf_mcp.processes.children.become_subreaper`), so the command's detached processes are reparented to
the server; every one of them carries a marker variable in its environment (Bash's
``AWF_MCP_BASH_CALL``). :func:`end_marked` kills and reaps exactly those, and nothing else
of the server's. Standard library only.
"""

from __future__ import annotations

import os
import signal

from awf_mcp.processes.children import descendants


def _kill(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _wait(pid: int, options: int) -> bool:
    try:
        os.waitpid(pid, options)
    except ChildProcessError:
        return False
    return True


def _environment_has(pid: int, entry: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return entry in environ.read().split(b"\0")
    except OSError:
        return False


def _reap_group_zombies(group: int) -> None:
    """Reap the exited children of this process that were in process group ``group``."""
    me = str(os.getpid()).encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                state, parent, pgrp = stat_file.read().rsplit(b")", 1)[1].split()[:3]
        except (OSError, ValueError):
            continue
        if state == b"Z" and parent == me and int(pgrp) == group:
            _wait(int(entry), os.WNOHANG)


def end_marked(name: str, value: str, group: int | None = None) -> int:
    """SIGKILL and reap every descendant of this process whose environment holds ``name=value``.

    The backstop for a keeper that was itself killed: its detached processes were
    reparented to this process (a subreaper, see :func:`become_subreaper`). Only
    processes carrying the marker are touched, and only they are reaped (by pid),
    so other children and their owners' waits are left alone. With ``group``
    (the dead keeper's process group), the exited processes of that group that were
    reparented here are reaped too. Returns how many were killed.
    """
    entry = f"{name}={value}".encode()
    killed = 0
    for _round in range(50):
        marked = [pid for pid in descendants(os.getpid()) if _environment_has(pid, entry)]
        if not marked:
            break
        for pid in marked:
            killed += _kill(pid, signal.SIGKILL)
        for pid in marked:
            _wait(pid, 0)  # fails quietly for one not our child (yet): its parent dies first
    if group is not None:
        _reap_group_zombies(group)
    return killed
