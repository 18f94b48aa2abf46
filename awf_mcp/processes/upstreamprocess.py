"""Starting a stdio MCP server process under a keeper: nothing it starts outlives awf-mcp.

Contract
--------
* :func:`spawn` starts ``command args`` with pipes on stdin, stdout and stderr, in a new
  session (its own process group, so the whole group can be stopped). On Linux it runs
  under the keeper of :mod:`awf_mcp.processes.children`, as ``Bash`` commands do: the keeper is
  the process returned (its exit status mirrors the server's), the server is its child in
  the same group, and

  - when the server exits (at stdin EOF, say), the keeper ends every process the server
    left, however it detached (``setsid``, double fork): they are its descendants, or
    reparented to it as their subreaper;
  - SIGTERM to the group (awf-mcp's shutdown) ends the server and all of them too, SIGKILL
    after :data:`KEEPER_GRACE_SECONDS`;
  - when awf-mcp dies, even by ``kill -9``, the kernel sends the keeper SIGTERM
    (``PR_SET_PDEATHSIG``), which does the same.

  Only a process that SIGKILLs the keeper itself and has detached escapes (as for Bash;
  see docs/security.md). The server runs contained by the kernel, as Bash does
  (:mod:`awf_mcp.processes.containment`). Elsewhere than Linux the server is started directly.
  ``command`` without a path separator is searched on the ``PATH`` of ``env``;
  :class:`FileNotFoundError` says which command was not found.
* :func:`launch_early` spawns servers before awf-mcp's own slow start-up work (importing
  the SDK, loading plugins) so the two overlap; :func:`claim` hands such a process to the
  code that connects to it, only when it was started with exactly the same command line,
  environment and directory. A process never claimed dies with awf-mcp (see above).

Standard library only. Call :func:`spawn` from the event loop's thread (or the main
thread): the keeper's death signal follows the thread that started it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from awf_mcp.processes import children
from awf_mcp.processes.containment.plan import prepare

KEEPER_GRACE_SECONDS = 0.1
"""Between the keeper's SIGTERM and SIGKILL to what the server left (within awf-mcp's one-second exit)."""

Launch = tuple[str, tuple[str, ...], tuple[tuple[str, str], ...], str, str, tuple[tuple[str, Any], ...]]
"""What identifies a launch: command, args, environment (sorted items), working directory, the
server's name and its own sandbox table (sorted items)."""

_early: dict[str, tuple[Launch, subprocess.Popen[bytes]]] = {}


def launch_key(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    server: str = "",
    sandbox: Mapping[str, Any] | None = None,
) -> Launch:
    """The identity of a launch, for :func:`claim` (and the arguments of :func:`spawn`)."""
    return (
        command,
        tuple(args),
        tuple(sorted(env.items())),
        cwd,
        server,
        tuple(sorted((sandbox or {}).items())),
    )


UPSTREAM_VARIABLE = "AWF_MCP_UPSTREAM"
"""Set in every stdio upstream's environment (and its keeper's) to the server's name: how the
shared server counts the upstream processes its sessions run (``awf-mcp daemon status``)."""


def spawn(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    server: str = "",
    sandbox: Mapping[str, Any] | None = None,
    named: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """Start server ``server``'s process; see the module docstring. Raises :class:`OSError`
    (:class:`~awf_mcp.processes.containment.plan.SandboxUnavailable` where it cannot be contained).

    It runs contained (:mod:`awf_mcp.processes.containment`) by the active policy with the server's
    own ``sandbox`` table over it; ``named`` are the variables its ``env`` table sets, which
    pass whatever their name.
    """
    argv, environment = contained_launch(command, args, env, server=server, sandbox=sandbox, named=named)
    return start_kept(argv, environment, cwd)


def contained_launch(
    command: str,
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    server: str = "",
    sandbox: Mapping[str, Any] | None = None,
    named: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment that run server ``server`` contained (on Linux), before
    its keeper: what :func:`start_kept` starts. The same server, policy and roots give the same
    launch, whatever process computes it (the shared server's sessions compare launches)."""
    executable = command if os.sep in command else shutil.which(command, path=env.get("PATH"))
    if not executable:
        raise FileNotFoundError(f"command '{command}' was not found on PATH")
    argv, environment = [executable, *args], {**env, UPSTREAM_VARIABLE: server or os.path.basename(command)}
    if sys.platform.startswith("linux"):
        confinement = prepare("server", server=server or os.path.basename(command), table=sandbox)
        if confinement is not None:
            argv, environment = confinement.command(argv, environment, named)
    return argv, environment


def start_kept(argv: Sequence[str], env: Mapping[str, str], cwd: str) -> subprocess.Popen[bytes]:
    """Start a :func:`contained_launch` under a keeper of this process (on Linux), with pipes on
    its standard streams, in a new session."""
    argv, environment = list(argv), dict(env)
    if sys.platform.startswith("linux"):
        argv, environment = children.kept_command(argv, environment, grace=KEEPER_GRACE_SECONDS)
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environment,
        cwd=cwd or None,
        start_new_session=True,
    )


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process's group (its keeper ends whatever the server started), SIGKILL it if it lingers."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=KEEPER_GRACE_SECONDS + 1)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def launch_early(launches: Mapping[str, tuple[Launch, Sequence[str]]]) -> None:
    """Spawn each named launch (with the names its ``env`` table sets) now; one that cannot
    start is left to the normal path to report."""
    for name, (key, named) in launches.items():
        command, args, env, cwd, server, sandbox = key
        try:
            _early[name] = (
                key,
                spawn(command, args, dict(env), cwd, server=server, sandbox=dict(sandbox), named=named),
            )
        except OSError:
            continue


def claim(name: str, key: Launch) -> subprocess.Popen[bytes] | None:
    """The process :func:`launch_early` started for ``name`` with ``key``, once; else ``None``."""
    entry = _early.pop(name, None)
    if entry is None:
        return None
    launched, process = entry
    if launched != key:
        stop(process)
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        return None
    return process  # even when it has already exited: the caller reports how
