"""Child processes that cannot outlive their call, nor the server: the keeper.

Contract
--------
:func:`kept_command` turns a command line into one that runs it under a
*keeper*: this file, run by the same Python (``-I -S``, standard library only, from
a copy compiled once per server, so it starts in milliseconds). The keeper

* asks the kernel for a death signal (``PR_SET_PDEATHSIG``: SIGTERM when the
  server that started it dies, even by ``kill -9``) and gives the command one too
  (SIGKILL when the keeper dies), set in the forked child before ``exec``;
* is a child subreaper (``PR_SET_CHILD_SUBREAPER``): whatever the command
  starts, however it detaches (``setsid``, ``setsid -f``, ``nohup``, double
  fork), is reparented to the keeper when its parent exits, never to init;
* optionally ``fchdir``s into a directory descriptor it was handed (the caller
  opened and checked it; no name is looked up again) before running the command;
* when the command exits, or when the keeper gets SIGTERM, SIGINT or SIGHUP
  (the server's timeout, cancellation or shutdown, or the server's death), ends
  every remaining descendant: SIGTERM, then SIGKILL after ``grace`` seconds, and
  reaps them all before exiting;
* exits as the command did (the same code, or the same signal).

So a call's processes are all gone when the keeper has exited, and the keeper
exits within ``grace`` seconds of the command or of its signal. Everything here is
Linux-specific and the standard library only, so any part of awf-mcp that starts
processes (Bash, upstream servers) can use it. Only a process that kills its own
keeper with SIGKILL *and* detaches escapes; see docs/security.md.
"""

from __future__ import annotations

import os
import sys
import time

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: the keeper imports as little as it can
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, Protocol, TypedDict

    class Confining(Protocol):
        """What :func:`kept_command` needs of a :class:`~awf_mcp.processes.containment.plan.Confinement`."""

        def command(
            self, argv: Sequence[str], env: Mapping[str, str], named: Sequence[str] = ()
        ) -> tuple[list[str], dict[str, str]]: ...

    class SpawnOptions(TypedDict):
        """Keyword arguments for :class:`subprocess.Popen` or :func:`anyio.open_process`."""

        stdin: int
        stdout: int
        stderr: int
        env: Mapping[str, str]
        start_new_session: bool
        pass_fds: tuple[int, ...]
else:  # the C module: the same names, without the enum import that costs the keeper milliseconds
    import _signal as signal

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
DEFAULT_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when the keeper ends its descendants."""

_POLL = 0.02
_SETTLE = 0.01


_libc_prctl: Callable[..., int] | None = None


def _prctl(option: int, value: int) -> bool:
    """``prctl(option, value)``; False where it is not available or fails.

    Through ``_ctypes`` alone, looked up once: ``import ctypes`` (``struct``, the
    ``ctypes`` package's classes) costs the keeper about 3 ms of its start, on every command.
    """
    global _libc_prctl
    try:
        if _libc_prctl is None:
            import _ctypes

            class _Int(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_int
                _type_ = "i"

            class _Function(_ctypes.CFuncPtr):  # ctypes.CDLL(None, use_errno=True)._FuncPtr
                _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
                _restype_ = _Int

            class _Libc:
                _handle = _ctypes.dlopen(None)  # type: ignore[arg-type]

            _libc_prctl = _Function(("prctl", _Libc))  # type: ignore[arg-type]
        return int(_libc_prctl(option, value, 0, 0, 0)) == 0
    except (ImportError, OSError, AttributeError):
        return False


def set_death_signal(signum: int) -> bool:
    """Have the kernel send ``signum`` to this process when its parent (thread) exits."""
    return _prctl(PR_SET_PDEATHSIG, signum)


def become_subreaper() -> bool:
    """Make this process the one orphaned descendants are reparented to."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)


KEEPER_COMMAND = "__awf_mcp_keeper__"
"""The hidden first argument with which the frozen binary runs :func:`main` (see cli/main.py)."""

KEEPER_ARGV = "AWF_MCP_KEEPER_ARGV"
"""The environment variables carrying the command to a keeper: ``<this>`` holds the argument count,
``<this>_0``, ``<this>_1``... the arguments; all removed before exec. (No ``json``: the keeper
starts with as few imports as it can, as it runs once per command.)"""


def spawn_options(env: Mapping[str, str], cwd_fd: int) -> SpawnOptions:
    """The process options a keeper from :func:`kept_command` is started with.

    No stdin, stdout and stderr piped back, a session of its own (so the whole group
    can be signalled), and the working-directory descriptor passed on. For
    :class:`subprocess.Popen` and :func:`anyio.open_process` alike.
    """
    import subprocess  # here, not at the top: the keeper itself never needs it

    return {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.PIPE,
        "stderr": subprocess.PIPE,
        "env": env,
        "start_new_session": True,
        "pass_fds": (cwd_fd,),
    }


def kept_command(
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    cwd_fd: int | None = None,
    grace: float = DEFAULT_GRACE,
    confinement: Confining | None = None,
    named: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """The command line and environment running ``argv`` with ``env`` under a keeper.

    The command travels in the environment, not on the keeper's command line, so
    the keeper's ``/proc/PID/cmdline`` shows only the keeper. Pass ``cwd_fd`` in
    ``pass_fds`` too. With ``confinement`` (:func:`awf_mcp.processes.containment.plan.prepare`),
    the command runs contained: its environment filtered (``named``: variables passed
    whatever their name), under the backend's wrapper, and the keeper's child confines
    itself (:func:`awf_mcp.processes.containment.kernel.confine`) before ``exec``; if it cannot,
    the command does not run (exit code 126, the reason on stderr).
    """
    if confinement is not None:
        argv, env = confinement.command(argv, env, named)
    runner, env = _runner(env)
    keeper = [*runner, str(os.getpid()), str(-1 if cwd_fd is None else cwd_fd), repr(grace)]
    passed = {f"{KEEPER_ARGV}_{index}": argument for index, argument in enumerate(argv)}
    return keeper, {**env, KEEPER_ARGV: str(len(argv)), **passed}


def _runner(env: Mapping[str, str]) -> tuple[list[str], dict[str, str]]:
    """The command line that starts a keeper, and the environment it is started with."""
    if getattr(sys, "frozen", False):  # the one-file binary: its entry point dispatches KEEPER_COMMAND
        from awf_mcp.processes.childenv import reentry_environment

        # Started with the bootloader's variables, it runs in place from this process's bundle:
        # no second unpacking, and no second bootloader between this process and the keeper.
        return [sys.executable, KEEPER_COMMAND], reentry_environment(env)
    return [sys.executable, "-I", "-S", _compiled_keeper()], {**env, KEEPER_PACKAGE: _CONTAINMENT}


WARM = "warm:"
"""The ``CWD_FD`` argument of a warm keeper: ``warm:FD``, the socket its command will come on."""


def warm_keeper(
    env: Mapping[str, str], grace: float = DEFAULT_GRACE
) -> tuple[list[str], dict[str, str], Any, int]:
    """A keeper started ahead of its command (a *warm* keeper): its command line and environment,
    this end of the socket its command is sent on (:func:`send_command`), and the descriptor of
    the other end.

    The keeper starts, arms its death signal, imports what it needs and then waits, so that a
    command sent later skips the interpreter's start (about 7 ms). Pass the descriptor in
    ``pass_fds`` and ``os.close`` it once the keeper started. Closing this end makes an idle
    keeper exit.
    """
    import socket

    ours, theirs = socket.socketpair()
    runner, env = _runner(env)
    fd = theirs.detach()
    return [*runner, str(os.getpid()), f"{WARM}{fd}", repr(grace)], env, ours, fd


WAITING = "waiting"
"""The ``CWD_FD`` argument of the keeper of a :func:`warm_sandbox`: none, and it waits."""

INSIDE = "inside"
"""The first argument of a keeper run as the *waiter inside a sandbox* (:func:`warm_sandbox`)."""


def warm_sandbox(
    confinement: Confining, env: Mapping[str, str], grace: float = DEFAULT_GRACE
) -> tuple[list[str], dict[str, str], Any, int]:
    """A keeper whose child already waits *inside* ``confinement``'s sandbox for its command.

    As :func:`warm_keeper` (the same four values), but the keeper runs its child at once: the
    sandbox's wrapper (bwrap's namespaces and mounts) or its kernel rules (Landlock, seccomp)
    are set up ahead, and what waits inside is this file again (:data:`INSIDE`), which
    ``exec``s the command :func:`send_command` hands it, with a working directory given by
    name. (A descriptor opened outside a mount namespace would lead back out of it.) Send only
    a command whose sandbox is the one this was started with: see ``Confinement.key``.
    """
    import socket

    ours, theirs = socket.socketpair()
    fd = theirs.detach()
    runner, runner_env = _runner(env)
    inside, inside_env = confinement.command([*runner, INSIDE, str(fd)], runner_env)
    keeper, keeper_env = kept_command(inside, inside_env, grace=grace)
    keeper[-2] = WAITING  # no working directory of its own; and ``ps`` tells it from a working one
    return keeper, keeper_env, ours, fd


def send_command(control: Any, argv: Sequence[str], env: Mapping[str, str], cwd: int | str) -> None:
    """Hand a waiting keeper its command: ``argv`` with ``env`` in ``cwd``, a descriptor (sent as
    one, never looked up by name again) or, for a waiter inside a sandbox, a path.
    :class:`OSError` when the keeper is gone."""
    import socket

    fields = [str(len(argv)).encode(), os.fsencode(cwd if isinstance(cwd, str) else "")]
    fields += [os.fsencode(a) for a in argv]
    fields += [os.fsencode(f"{name}={value}") for name, value in env.items()]
    payload = b"\0".join(fields)
    header = len(payload).to_bytes(8, "big")
    if isinstance(cwd, str):
        control.sendall(header + payload)
    else:
        socket.send_fds(control, [header], [cwd])
        control.sendall(payload)


def _receive_command(control: int) -> tuple[list[str], dict[str, str], int | str]:
    """In a waiting keeper: its command, environment and working directory (EOF: exit)."""
    import socket

    sock = socket.socket(fileno=control)
    header, fds, _flags, _address = socket.recv_fds(sock, 8, 1)
    if len(header) < 8:
        os._exit(0)  # the server closed its end without a command: nothing to keep
    remaining = int.from_bytes(header, "big")
    chunks = []
    while remaining > 0:
        chunk = sock.recv(min(remaining, 1 << 16))
        if not chunk:
            os._exit(0)
        chunks.append(chunk)
        remaining -= len(chunk)
    sock.close()
    fields = b"".join(chunks).split(b"\0")
    count = int(fields[0])
    argv = [os.fsdecode(field) for field in fields[2 : 2 + count]]
    env = dict(os.fsdecode(field).partition("=")[::2] for field in fields[2 + count :] if field)
    return argv, env, os.fsdecode(fields[1]) if fields[1] else (fds[0] if fds else -1)


def _run_inside(control: int) -> None:
    """The waiter inside a sandbox: receive the command, go to its directory, become it."""
    argv, env, cwd = _receive_command(control)
    try:
        if isinstance(cwd, str):
            os.chdir(cwd)
        os.execve(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"cannot run {argv[0] if argv else 'the command'}: {exc.strerror or exc}\n".encode())
    os._exit(127)


KEEPER_PACKAGE = "AWF_MCP_KEEPER_PACKAGE"
"""The directory of :mod:`awf_mcp.processes.containment.kernel`, which a keeper run from its compiled
copy imports as a top-level module: standard library only, it needs nothing of the ``awf_mcp``
package, whose import would cost each contained command a millisecond more (removed before exec)."""

_CONTAINMENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "containment")
_keeper_file: str | None = None


def _compiled_keeper() -> str:
    """This file, compiled once per server into a private directory (removed at exit).

    Python compiles a script it runs from source every time (no ``__pycache__`` for
    ``__main__``): about 2 ms of every keeper's start. A ``.pyc`` it runs as it is. The
    directory is named ``awf-mcp-PID-...`` as the Bash output directories are, so one left by a
    killed server is swept like them. Where it cannot be written, the source.
    """
    global _keeper_file
    if _keeper_file is None:
        import atexit
        import py_compile
        import shutil
        import tempfile

        source = os.path.abspath(__file__)
        try:
            directory = tempfile.mkdtemp(prefix=f"awf-mcp-{os.getpid()}-keeper-")
            atexit.register(shutil.rmtree, directory, True)
            compiled = os.path.join(directory, "keeper.pyc")
            _keeper_file = py_compile.compile(source, cfile=compiled, doraise=True) or source
        except (OSError, py_compile.PyCompileError):
            _keeper_file = source
    return _keeper_file


def _kill(pid: int, signum: int) -> bool:
    try:
        os.kill(pid, signum)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (through ``/proc``), parents before children."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                fields = stat_file.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] not in (b"Z", b"X"):
            parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop(0)
        for child, its_parent in parents.items():
            if its_parent == parent:
                found.append(child)
                frontier.append(child)
    return found


def reap() -> bool:
    """Collect every child that has exited, without waiting; False once no child is left at all."""
    while True:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def end_descendants(grace: float = DEFAULT_GRACE) -> None:
    """SIGTERM every descendant of this process, SIGKILL them after ``grace`` s, reap them all.

    For a subreaper: it returns once this process has no child left, not even a
    zombie, so every orphan that was reparented to it has been collected. Children
    about to exit on their own (a wrapper's last process: bwrap's) are first given
    :data:`_SETTLE` seconds, looked at every 0.2 ms without scanning ``/proc``; what is
    left then is signalled, and looked for again after 1 ms, doubling up to ``_POLL``.
    """
    settle = time.monotonic() + _SETTLE
    while reap():
        if time.monotonic() >= settle:
            break
        time.sleep(0.0002)
    else:
        return
    deadline = time.monotonic() + grace
    pause = 0.001
    while reap():
        signum = signal.SIGTERM if time.monotonic() < deadline else signal.SIGKILL
        for pid in descendants(os.getpid()):
            _kill(pid, signum)
        time.sleep(pause)
        pause = min(pause * 2, _POLL)


class _Stop(Exception):
    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _raise_stop(signum: int, _frame: object) -> None:
    raise _Stop(signum)


_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


CONFINE_VARIABLE = "AWF_MCP_KEEPER_CONFINE"
"""The :func:`~awf_mcp.processes.containment.kernel.confine` spec, when the command runs contained
(set by :mod:`awf_mcp.processes.containment.plan`; removed before the command runs)."""

CANNOT_CONFINE = 126


def _preload() -> None:
    """Import now what confining a command needs (a warm keeper does, while it waits)."""
    import contextlib

    with contextlib.suppress(ImportError):
        _kernel()


def _kernel() -> Any:
    if getattr(sys, "frozen", False):
        from awf_mcp.processes.containment import kernel
    else:
        import kernel  # type: ignore[import-not-found,no-redef]  # from KEEPER_PACKAGE (see main)
    return kernel


def _confine(spec: str, argv: list[str]) -> list[str]:
    """In the forked child: confine it for good, or end it (the command must not run open).

    Returns the command line to run (a wrapper may take part of the sandbox as an argument)."""
    try:
        confined: list[str] = _kernel().confine(spec, argv)
        return confined
    except (OSError, ImportError) as exc:
        os.write(2, f"awf-mcp: the sandbox could not be set up, so nothing was run: {exc}\n".encode())
        os._exit(CANNOT_CONFINE)


def _exec_child(argv: list[str], keeper: int, confine: str) -> None:
    """In the forked child: default signals, a death signal, the sandbox, then the command."""
    try:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_SETMASK, set())
        set_death_signal(signal.SIGKILL)
        if os.getppid() != keeper:
            os._exit(137)
        if confine:
            argv = _confine(confine, argv)
        os.execv(argv[0], argv)
    except OSError as exc:
        os.write(2, f"cannot run {argv[0]}: {exc.strerror}\n".encode())
    finally:
        os._exit(127)


def keep(parent: int, cwd_fd: int, grace: float, argv: list[str], confine: str = "") -> int:
    """The keeper's life: run ``argv``, then end whatever it left; returns the exit status to mirror."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    for signum in _STOP_SIGNALS:
        signal.signal(signum, _raise_stop)
    set_death_signal(signal.SIGTERM)
    if parent and os.getppid() != parent:  # the server died before the death signal was armed
        return 128 + signal.SIGTERM
    become_subreaper()
    if cwd_fd >= 0:
        os.fchdir(cwd_fd)
        os.close(cwd_fd)
    keeper = os.getpid()
    child = os.fork()
    if child == 0:
        _exec_child(argv, keeper, confine)
    status: int | None = None
    try:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
        while status is None:
            try:
                pid, raw = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == child:
                status = raw
    except _Stop as stop:
        signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
        end_descendants(grace)
        return -stop.signum
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    end_descendants(grace)
    if status is None:
        return 127
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    code = os.waitstatus_to_exitcode(status)
    if "wrapped" in confine.split() and 128 < code <= 128 + 64:
        return 128 - code  # bwrap reports a command killed by signal N as 128 + N: say it as it was
    return code


def run_frozen_keeper(args: list[str]) -> None:
    """:func:`main` in the one-file binary (``awf-mcp __awf_mcp_keeper__ ARGS``; see ``awf_mcp/__main__.py``).

    The keeper was started with the bootloader's variables (``childenv.reentry_environment``):
    the command gets the user's environment back, as every child does.
    """
    from awf_mcp.processes.childenv import child_environment

    # The waiter inside a sandbox, and the keeper starting it, keep the bootloader's variables:
    # the waiter is this binary again, running in place (the command's environment is sent).
    if not (args[:1] == [INSIDE] or _runs_own_waiter()):
        user_environment = child_environment()
        os.environ.clear()
        os.environ.update(user_environment)
    main(args)


def _runs_own_waiter() -> bool:
    """Whether this keeper's command ends with this binary started as the waiter inside a sandbox
    (:func:`warm_sandbox`), which needs the bootloader's variables as a keeper does."""
    count = int(os.environ.get(KEEPER_ARGV, "0") or 0)
    tail = [os.environ.get(f"{KEEPER_ARGV}_{index}") for index in range(max(0, count - 4), count)]
    return tail[:3] == [sys.executable, KEEPER_COMMAND, INSIDE]


def main(args: list[str]) -> None:
    """``children.py PARENT_PID CWD_FD GRACE`` with the command in ``$AWF_MCP_KEEPER_ARGV``; or,
    warm (``CWD_FD`` is ``warm:FD``), the command to come on socket FD (:func:`warm_keeper`); or
    ``children.py inside FD``, the waiter inside a sandbox (:func:`warm_sandbox`)."""
    if len(args) == 2 and args[0] == INSIDE:
        _run_inside(int(args[1]))
    if len(args) != 3 or not (os.environ.get(KEEPER_ARGV) or args[1].startswith(WARM)):
        raise SystemExit(f"usage: {KEEPER_ARGV}=COMMAND children.py PARENT_PID CWD_FD GRACE")
    parent, cwd_fd, grace = args
    package = os.environ.pop(KEEPER_PACKAGE, "")
    if package:
        sys.path.insert(0, package)
    if cwd_fd.startswith(WARM):
        set_death_signal(signal.SIGTERM)  # the server may die while this keeper waits
        if os.getppid() != int(parent):
            os._exit(128 + signal.SIGTERM)
        _preload()
        argv, env, received = _receive_command(int(cwd_fd.removeprefix(WARM)))
        cwd = received if isinstance(received, int) else -1
        os.environ.clear()
        os.environ.update(env)
    else:
        argv = [os.environ.pop(f"{KEEPER_ARGV}_{index}") for index in range(int(os.environ.pop(KEEPER_ARGV)))]
        cwd = -1 if cwd_fd == WAITING else int(cwd_fd)
    code = keep(int(parent), cwd, float(grace), argv, os.environ.pop(CONFINE_VARIABLE, ""))
    if code < 0:
        if -code not in (signal.SIGKILL, signal.SIGSTOP):  # these cannot be handled, nor reset
            signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
        time.sleep(1)
        os._exit(128 - code)
    os._exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
