"""The shared awf-mcp server: one warm process per user, version and install, that forks a
session process for every shim (:mod:`awf_mcp.cli.shim`).

Contract
--------
:func:`main` (``awf-mcp __awf_mcp_shared__ SOCKET``, started by a shim) loads what a session
needs first (:func:`~awf_mcp.cli.warmup.preload`; the rest once the first session is forked,
:func:`~awf_mcp.cli.warmup.preload_later`), then listens on SOCKET (0600, in
the user's own 0700 directory) under a lock, so that one server answers however many shims
start at once, and a stale socket left by a killed server is replaced. Each connection whose
peer is another uid (``SO_PEERCRED``) is closed unanswered. A connection says what it wants:

* ``serve``: a session process is forked. It takes the shim's standard input, output and error,
  working directory, environment and command line, and runs ``awf-mcp serve`` exactly as
  in-process (:func:`awf_mcp.cli.main.serve`): its own config and trust, roots, client, budget,
  jobs and upstreams, none of them seen by another session. It ends when its client closes
  stdin; when its shim's connection closes (the shim died); or when this server dies or stops
  (the session's *lifeline* pipe closes). It tells its shim its exit code, or why it ended,
  first, so that the shim exits at once.
* ``upstream`` (from a session): the socket of the *hub* that runs a stdio upstream's launch for
  every session with the same launch and note (:mod:`awf_mcp.wire.upstreamhub`), forked when
  none runs. A hub ends with this server (its lifeline), on ``stop``, when its server exits,
  and after ``idle_seconds`` with no session. The upstreams' private directories are under one
  directory of this server's (so that sessions' launches compare equal), removed when it exits.
* ``status``: ``pid``, ``socket``, ``sessions``, ``upstreams`` (running upstream processes),
  ``shared_upstreams`` (hubs), ``version``, ``started`` (ISO 8601), ``idle_seconds`` and ``log``.
* ``stop``: every session is told, and ends itself after telling its shim why (SIGKILL after
  :data:`STOP_GRACE` for one that does not), the answer sent, then this server exits.

With no session left for ``[shared] idle_seconds`` (default :data:`IDLE_SECONDS`; the value
the last session's config gave), the server exits and removes its socket. Forking is safe
here: this process starts no thread and no event loop; each session starts its own.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import functools
import hashlib
import json
import os
import select
import shutil
import signal
import socket
import stat
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

from awf_mcp import __version__
from awf_mcp.cli import shim
from awf_mcp.cli.warmup import preload, preload_later
from awf_mcp.processes.upstreamprocess import UPSTREAM_VARIABLE

IDLE_SECONDS = 300.0
STOP_GRACE = 5.0
HELLO_SECONDS = 5.0


@dataclass
class Hub:
    """One hub forked for a shared upstream (:mod:`awf_mcp.wire.upstreamhub`)."""

    pid: int
    path: str
    lifeline: int
    """The write end of the hub's lifeline pipe: closed (this server gone), the hub ends."""


@dataclass
class Session:
    """One forked session process, as the server tracks it."""

    pid: int
    lifeline: int
    """The write end of the session's lifeline pipe: closed, or written ``s`` (stopped), it ends."""
    reports: int
    """The read end of the pipe the session reports its ``[shared]`` settings on; ``-1`` once the
    session has closed its end (it reports once, at its start)."""


class SharedServer:
    """The listening socket, the sessions, the idle clock; see the module docstring."""

    def __init__(self, path: str, listener: socket.socket) -> None:
        self.path = path
        self.listener = listener
        self.sessions: dict[int, Session] = {}
        self.hubs: dict[str, Hub] = {}
        self.servers_directory = tempfile.mkdtemp(prefix=f"awf-mcp-{os.getpid()}-servers-")
        """Where the shared upstreams' private directories are (removed when this server exits)."""
        self.started = datetime.now(UTC)
        self.idle_seconds = IDLE_SECONDS
        self.idle_since: float | None = time.monotonic()
        self.inode = os.stat(path).st_ino
        self.preloaded_later = False
        """Whether :func:`~awf_mcp.cli.warmup.preload_later` has run (once the first session is forked)."""

    def serve_forever(self) -> NoReturn:
        wakeup_read, wakeup_write = os.pipe()
        os.set_blocking(wakeup_write, False)
        signal.set_wakeup_fd(wakeup_write)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, lambda *_: self.stop_and_exit())
        signal.signal(signal.SIGINT, lambda *_: self.stop_and_exit())
        while True:
            self.reap()
            timeout = None
            if not self.sessions and self.idle_since is not None:
                remaining = self.idle_since + self.idle_seconds - time.monotonic()
                if remaining <= 0:
                    self.exit(0)
                timeout = remaining
            reports = [session.reports for session in self.sessions.values() if session.reports >= 0]
            watched: list[Any] = [self.listener, wakeup_read, *reports]
            try:
                readable, _, _ = select.select(watched, [], [], timeout)
            except InterruptedError:
                continue
            if wakeup_read in readable:
                with contextlib.suppress(BlockingIOError):
                    os.read(wakeup_read, 4096)
            for session in list(self.sessions.values()):
                if session.reports >= 0 and session.reports in readable:
                    self.read_report(session)
            if self.listener in readable:
                self.accept()

    def accept(self) -> None:
        try:
            connection, _address = self.listener.accept()
        except OSError:
            return
        try:
            credentials = connection.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _pid, uid, _gid = struct.unpack("3i", credentials)
            if uid != os.getuid():
                connection.close()  # another user gets nothing, not even an answer
                return
            connection.settimeout(HELLO_SECONDS)
            hello, fds = _receive_hello(connection)
        except (OSError, ValueError):
            connection.close()
            return
        op = hello.op
        if op == "serve" and len(fds) == 3:
            self.fork_session(connection, hello, fds)
            if not self.preloaded_later:
                self.preloaded_later = True
                preload_later()
        else:
            for fd in fds:
                os.close(fd)
            if op == "upstream":
                _answer(connection, self.hub_for(hello, connection))
            elif op == "status":
                _answer(connection, self.status())
            elif op == "stop":
                stopped = len(self.sessions)
                self.stop_sessions()
                _answer(connection, {"stopped": stopped, "pid": os.getpid()})
                self.exit(0)
            connection.close()

    def fork_session(self, connection: socket.socket, hello: Hello, fds: list[int]) -> None:
        lifeline_read, lifeline_write = os.pipe()
        reports_read, reports_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(lifeline_write)
            os.close(reports_read)
            self.forget_in_child()
            _run_session(self, connection, hello, fds, lifeline_read, reports_write)
        os.close(lifeline_read)
        os.close(reports_write)
        for fd in fds:
            os.close(fd)
        with contextlib.suppress(OSError):  # where the shim sends the signals it gets
            connection.sendall(f"session {pid}\n".encode())
        connection.close()
        self.sessions[pid] = Session(pid, lifeline_write, reports_read)
        self.idle_since = None

    def forget_in_child(self) -> None:
        """In a forked child: close what belongs to this server (its socket, others' lifelines),
        and read its open files at offsets of its own (:func:`own_file_offsets`)."""
        own_file_offsets()
        self.listener.close()
        for session in self.sessions.values():
            os.close(session.lifeline)
            if session.reports >= 0:
                os.close(session.reports)
        for hub in self.hubs.values():
            os.close(hub.lifeline)

    def hub_for(self, hello: Hello, connection: socket.socket) -> dict[str, Any]:
        """The socket of the hub running ``hello``'s launch (its first argument is the sessions'
        note, :func:`~awf_mcp.wire.upstreamhub.share_note`), forked when none runs."""
        if not hello.argv:
            return {"error": "no command"}
        identity = json.dumps([hello.argv, hello.cwd, sorted(hello.env.items())]).encode()
        key = hashlib.sha256(identity).hexdigest()[:24]
        self.reap()
        hub = self.hubs.pop(key, None)
        if hub is not None and os.path.exists(hub.path):
            self.hubs[key] = hub
            return {"socket": hub.path}
        if hub is not None:  # ending (its server exited): a new one takes the launch
            os.close(hub.lifeline)
        path = os.path.join(os.path.dirname(self.path), f"hub-{os.getpid()}-{key}.sock")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        except OSError as exc:
            listener.close()
            return {"error": f"cannot listen on {path}: {exc.strerror or exc}"}
        finally:
            os.umask(old_mask)
        listener.listen(64)
        lifeline_read, lifeline_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(lifeline_write)
            connection.close()
            self.forget_in_child()
            _become()
            from awf_mcp.wire.upstreamhub import run_hub

            run_hub(listener, (hello.argv[1:], hello.env, hello.cwd), self.idle_seconds, lifeline_read)
        os.close(lifeline_read)
        listener.close()
        self.hubs[key] = Hub(pid, path, lifeline_write)
        return {"socket": path}

    def read_report(self, session: Session) -> None:
        """Take what ``session`` reported; at the end of its reports, stop watching them (a pipe
        at its end is always readable: watched still, it would keep this loop spinning)."""
        try:
            data = os.read(session.reports, 65536)
        except OSError:
            data = b""
        if not data:
            os.close(session.reports)
            session.reports = -1
            return
        for line in data.splitlines():
            with contextlib.suppress(ValueError):
                report = json.loads(line)
                seconds = report.get("idle_seconds")
                if isinstance(seconds, int | float) and seconds >= 0:
                    self.idle_seconds = float(seconds)

    def reap(self) -> None:
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            session = self.sessions.pop(pid, None)
            if session is not None:
                os.close(session.lifeline)
                if session.reports >= 0:
                    os.close(session.reports)
            for key, hub in list(self.hubs.items()):
                if hub.pid == pid:
                    os.close(hub.lifeline)
                    del self.hubs[key]
        if not self.sessions and self.idle_since is None:
            self.idle_since = time.monotonic()

    def status(self) -> dict[str, Any]:
        return {
            "pid": os.getpid(),
            "socket": self.path,
            "sessions": len(self.sessions),
            "upstreams": len(upstream_processes([*self.sessions, *(hub.pid for hub in self.hubs.values())])),
            "shared_upstreams": len(self.hubs),
            "version": __version__,
            "started": self.started.isoformat(timespec="seconds"),
            "idle_seconds": self.idle_seconds,
            "log": self.path.removesuffix(".sock") + ".log",
            "executable": sys.executable,
        }

    def stop_sessions(self) -> None:
        for hub in self.hubs.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(hub.pid, signal.SIGTERM)  # it stops its server as a session would
        for session in self.sessions.values():
            with contextlib.suppress(OSError):
                # "stopped": the session tells its shim so, then ends itself as SIGTERM ends it
                # (:func:`_watch`). Not SIGTERM from here: the session could end on it before it
                # said why, and its shim would exit 0 as if the agent had closed the session.
                os.write(session.lifeline, b"s")
        deadline = time.monotonic() + STOP_GRACE
        while self.sessions and time.monotonic() < deadline:
            self.reap()
            time.sleep(0.02)
        for pid in list(self.sessions):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        while self.sessions:
            self.reap()
            time.sleep(0.01)
        while self.hubs and time.monotonic() < deadline + STOP_GRACE:
            self.reap()
            time.sleep(0.01)

    def stop_and_exit(self) -> None:
        self.stop_sessions()
        self.exit(0)

    def exit(self, code: int) -> NoReturn:
        shutil.rmtree(self.servers_directory, ignore_errors=True)
        with contextlib.suppress(OSError):
            if os.stat(self.path).st_ino == self.inode:  # unless a newer server took the name
                os.unlink(self.path)
        os._exit(code)


def upstream_processes(sessions: list[int]) -> list[int]:
    """The upstream servers the ``sessions`` run: their direct children whose environment names
    one (:data:`UPSTREAM_VARIABLE`), one per running upstream (the keeper that holds it)."""
    found = []
    marker = f"{UPSTREAM_VARIABLE}=".encode()
    wanted = {str(pid).encode() for pid in sessions}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat_file:
                parent = stat_file.read().rsplit(b")", 1)[1].split()[1]
            if parent not in wanted:
                continue
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if any(item.startswith(marker) for item in environ.read().split(b"\0")):
                    found.append(int(entry))
        except (OSError, IndexError):
            continue
    return found


@dataclass(frozen=True)
class Hello:
    """What a connection asks (``serve``, ``status``, ``stop``), and a shim's session."""

    op: str
    argv: list[str]
    cwd: str
    env: dict[str, str]


def _receive_hello(connection: socket.socket) -> tuple[Hello, list[int]]:
    header, fds, _flags, _address = socket.recv_fds(connection, 8, 3)
    if len(header) < 8:
        raise ValueError("no hello")
    size = int.from_bytes(header, "big")
    if size > shim.MAX_HELLO_BYTES:
        for fd in fds:
            os.close(fd)
        raise ValueError("hello too large")
    chunks, remaining = [], size
    while remaining:
        chunk = connection.recv(min(remaining, 65536))
        if not chunk:
            raise ValueError("hello cut short")
        chunks.append(chunk)
        remaining -= len(chunk)
    op, argv, cwd, env = shim.parse_hello(b"".join(chunks))
    return Hello(op, argv, cwd, env), list(fds)


def _answer(connection: socket.socket, answer: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        connection.settimeout(HELLO_SECONDS)
        connection.sendall(json.dumps(answer).encode() + b"\n")


def own_file_offsets() -> None:
    """In a forked child: give every regular file open read-only an open file description of its
    own, at the same descriptor number and offset.

    A forked child shares its parent's file offsets. Zip archives that stay open in the server
    (``importlib.metadata`` keeps them, and the single executable's standard library and bundled
    metadata are zips) are read with a seek and then a read: two sessions doing so at once read
    at each other's offsets, and got corrupt data ("Error -3 while decompressing data"). Files
    open for writing keep their shared description (a shared log appends either way).
    """
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY:
                continue
            fresh = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)  # the file, even if renamed
        except OSError:
            continue  # the listing's own descriptor, already closed; or a file gone for good
        try:
            reopened = os.fstat(fresh)
            if (reopened.st_dev, reopened.st_ino) == (info.st_dev, info.st_ino):
                os.lseek(fresh, os.lseek(fd, 0, os.SEEK_CUR), os.SEEK_SET)
                os.dup2(fresh, fd, inheritable=os.get_inheritable(fd))
        except OSError:
            pass
        finally:
            os.close(fresh)


def _become() -> None:
    """In a forked child: the default signal handlers, and no wakeup descriptor of the server's."""
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(signum, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)


def _ask_hub(path: str, launch: tuple[list[str], dict[str, str], str], note: str) -> str:
    """In a session: the socket of the hub that runs ``launch`` for sessions with ``note``
    (:data:`awf_mcp.wire.upstreamhub.Broker`)."""
    argv, env, cwd = launch
    sock = shim.connect(path, start=False)
    if sock is None:
        raise ConnectionRefusedError(f"the shared server at {path} is gone")
    try:
        sock.settimeout(HELLO_SECONDS)
        shim.send_hello(sock, shim.hello_fields("upstream", [note, *argv], cwd, env), [])
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    finally:
        sock.close()
    try:
        answer = json.loads(received)
    except ValueError:
        raise ConnectionError("the shared server gave no hub") from None
    if not isinstance(answer, dict) or not isinstance(answer.get("socket"), str):
        raise ConnectionError(str(answer.get("error") if isinstance(answer, dict) else "no hub"))
    return str(answer["socket"])


def _run_session(
    server: SharedServer, connection: socket.socket, hello: Hello, fds: list[int], lifeline: int, reports: int
) -> NoReturn:
    """In the forked session process: become the shim's ``serve``, then report how it ended."""
    code = 1
    try:
        _become()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(hello.cwd)
        environment = dict(hello.env)
        if getattr(sys, "frozen", False):
            # The shim's bootloader variables name its own unpacked copy; this process runs from
            # the server's: the session gets the user's environment with the server's variables.
            from awf_mcp.processes.childenv import child_environment, reentry_environment

            environment = reentry_environment(child_environment(environment), dict(os.environ))
        os.environ.clear()
        os.environ.update(environment)
        tempfile.tempdir = None  # the session's own $TMPDIR, not the server's (cached by mkdtemp)
        os.environ[shim.REPORT_VARIABLE] = str(reports)
        connection.settimeout(None)
        shim.hold_session_control(connection)
        _watch(connection, lifeline)
        from awf_mcp.processes.containment.layout import share_server_directories
        from awf_mcp.wire.upstreamhub import use_broker

        share_server_directories(server.servers_directory)
        use_broker(functools.partial(_ask_hub, server.path))
        from awf_mcp.cli.main import dispatch

        try:
            dispatch(["serve", *hello.argv])
            code = 0
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except BaseException as exc:  # a session must never fall back into the server's loop
        with contextlib.suppress(Exception):
            os.write(2, f"awf-mcp: error: the session could not start: {exc}\n".encode())
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what the session registered: its temporary directories go
        shim.end_session(code)
        os._exit(code)


def _watch(connection: socket.socket, lifeline: int) -> None:
    """End this session when its shim goes (its connection closes) or the server does (the
    lifeline closes, or says ``s``: stopped), telling the shim why first."""
    import threading

    def watch() -> None:
        watched: list[Any] = [connection, lifeline]
        readable, _, _ = select.select(watched, [], [])
        if lifeline in readable:
            said = b""
            with contextlib.suppress(OSError):
                said = os.read(lifeline, 1)
            why = (
                "the shared awf-mcp server was stopped (awf-mcp daemon stop)"
                if said == b"s"
                else "the shared awf-mcp server ended (killed?)"
            )
            shim.end_session(1, f"awf-mcp: {why}; this session is over, and the next one starts a new server")
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="awf-mcp shim watch", daemon=True).start()


def _listen(path: str) -> socket.socket | None:
    """Bind ``path`` under the lock beside it; ``None`` when another server already answers there."""
    lock = os.open(path.removesuffix(".sock") + ".lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one server at a time checks and binds
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(path)
            return None  # a live server answers: leave it be
        except (FileNotFoundError, ConnectionRefusedError):
            pass
        finally:
            probe.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # a stale socket of a killed server
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_mask)
        os.chmod(path, 0o600)
        listener.listen(64)
        return listener
    finally:
        os.close(lock)


def main(path: str) -> NoReturn:
    """Run the shared server on socket ``path`` (see the module docstring)."""
    shim.socket_directory()  # the directory is still the user's own, private
    preload()
    import gc

    # What is loaded now stays out of every collection: sessions share its pages. No collection
    # first: imports leave about a hundred unreachable objects, and a full one takes 25 ms of
    # the first session's start.
    gc.freeze()
    listener = _listen(path)
    if listener is None:
        os._exit(0)
    print(
        f"awf-mcp shared server {__version__}: pid {os.getpid()}, socket {path}", file=sys.stderr, flush=True
    )
    SharedServer(path, listener).serve_forever()
