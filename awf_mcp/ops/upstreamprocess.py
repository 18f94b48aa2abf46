"""Starting a stdio MCP server process: its own process group, killed with awf-mcp.

Contract
--------
* :func:`spawn` starts ``command args`` with pipes on stdin, stdout and stderr, in a new
  session (its own process group, so the whole group can be stopped), and on Linux with
  ``PR_SET_PDEATHSIG`` = ``SIGKILL``: if awf-mcp dies, even by ``kill -9``, the kernel
  kills the server. (Its own children are not covered by the signal; they see their
  stdin close.) ``command`` without a path separator is searched on the ``PATH`` of
  ``env``; :class:`FileNotFoundError` says which command was not found.
* :func:`launch_early` spawns servers before awf-mcp's own slow start-up work (importing
  the SDK, loading plugins) so the two overlap; :func:`claim` hands such a process to the
  code that connects to it, only when it was started with exactly the same command line,
  environment and directory. A process never claimed dies with awf-mcp (see above).

Standard library only.
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence

_PR_SET_PDEATHSIG = 1

Launch = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str]
"""What identifies a launch: command, args, environment (sorted items), working directory."""

_early: dict[str, tuple[Launch, subprocess.Popen[bytes]]] = {}


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's ``prctl``, looked up in the parent: the child between fork and exec must not import."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        function: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    return function


def _die_with(parent: int, prctl: Callable[..., int] | None) -> Callable[[], None]:
    def arm() -> None:  # pragma: no cover - runs in the child, between fork and exec
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # awf-mcp died before the signal was armed
                os._exit(1)

    return arm


def launch_key(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str) -> Launch:
    """The identity of a launch, for :func:`claim`."""
    return (command, tuple(args), tuple(sorted(env.items())), cwd)


def spawn(command: str, args: Sequence[str], env: Mapping[str, str], cwd: str) -> subprocess.Popen[bytes]:
    """Start a server process; see the module docstring. Raises :class:`OSError`."""
    executable = command if os.sep in command else shutil.which(command, path=env.get("PATH"))
    if not executable:
        raise FileNotFoundError(f"command '{command}' was not found on PATH")
    return subprocess.Popen(
        [executable, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd or None,
        start_new_session=True,
        preexec_fn=_die_with(os.getpid(), _prctl()),
    )


def launch_early(launches: Mapping[str, Launch]) -> None:
    """Spawn each named launch now; one that cannot start is left to the normal path to report."""
    for name, key in launches.items():
        command, args, env, cwd = key
        try:
            _early[name] = (key, spawn(command, args, dict(env), cwd))
        except OSError:
            continue


def claim(name: str, key: Launch) -> subprocess.Popen[bytes] | None:
    """The process :func:`launch_early` started for ``name`` with ``key``, once; else ``None``."""
    entry = _early.pop(name, None)
    if entry is None:
        return None
    launched, process = entry
    if launched != key:
        process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        return None
    return process  # even when it has already exited: the caller reports how
