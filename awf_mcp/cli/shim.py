"""``awf-mcp serve`` on stdio as a thin client of one shared, warm awf-mcp per user.

Contract
--------
Every agent session starts ``awf-mcp serve``. By default (:func:`wanted`) that process is a
*shim*: it imports the standard library only, connects to the user's shared server over a Unix
socket (:func:`socket_path`), starting it when none answers, and hands it the session: its
command line, working directory and environment, and its standard input, output and error
themselves (``SCM_RIGHTS``). The shared server (:mod:`awf_mcp.cli.shared`) has everything
imported already; it forks a session process that serves the agent on those very pipes, as
``serve`` in-process would, so no byte of the session passes through the shim. The shim waits
until the session ends and exits with its exit code.

* The session ends with the shim: a shim that dies, even by ``kill -9``, closes its end of the
  control socket, and its session process stops (its jobs and upstreams with it).
* The shim ends with the session: when the shared server dies or is stopped, the session
  process ends and the shim exits at once, saying why on stderr; it never hangs.
* The socket sits in ``$XDG_RUNTIME_DIR/awf-mcp`` (else ``/tmp/awf-mcp-UID``), a 0700
  directory of the user's own; the socket is 0600 and the server checks each peer's uid.
* Its name holds :func:`identity` (the version and the code it runs): a shim of another
  version or install starts and uses a server of its own, never a stale one.
* ``AWF_MCP_SHARED=0``, ``serve --no-shared``, ``--transport http``, a terminal on stdin and a
  platform without ``SO_PEERCRED`` serve in-process, as before. The single executable's own
  ``serve`` is a shim too, but it unpacks its bundle first; its clients run its native start-up
  shim instead (:mod:`awf_mcp.processes.startshim`).
  Where the shared server cannot be reached or started, ``serve`` says so once on stderr and
  serves in-process.

Standard library only, imported before anything else of awf-mcp.
"""

from __future__ import annotations

import os
import sys
from _socket import AF_UNIX, SCM_RIGHTS, SHUT_RDWR, SOCK_STREAM, SOL_SOCKET
from _socket import socket as Socket  # not the socket module: its enum import costs a shim ms

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

SHARED_VARIABLE = "AWF_MCP_SHARED"
"""``0`` (or ``no``, ``off``, ``false``): serve in-process, as ``serve --no-shared`` does."""

ENTRY = "__awf_mcp_shared__"
"""The hidden first argument that runs the shared server (``awf-mcp __awf_mcp_shared__ SOCKET``)."""

START_SECONDS = 60.0
"""How long a shim waits for a shared server it started to answer."""

REPORT_VARIABLE = "AWF_MCP_SHARED_REPORT_FD"
"""In a session process of the shared server: the pipe on which it reports its ``[shared]``
settings (:func:`report`)."""

MAX_HELLO_BYTES = 4 * 1024 * 1024
"""The largest session hello (command line, directory, environment) a server accepts."""


def wanted(args: list[str], environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Whether ``serve ARGS`` should run as a shim (see the module docstring)."""
    environ = os.environ if environ is None else environ
    chosen = environ.get(SHARED_VARIABLE, "").strip().lower()
    if chosen in ("0", "no", "off", "false"):
        return False
    if "--no-shared" in args or "--transport=http" in args:
        return False
    if any(
        flag == "--transport" and args[index + 1 : index + 2] == ["http"] for index, flag in enumerate(args)
    ):
        return False
    if not sys.platform.startswith("linux"):  # peer credentials (SO_PEERCRED) and passing descriptors
        return False
    try:
        return not os.isatty(0)
    except OSError:
        return False


def identity() -> str:
    """What a shared server must share with a shim: the code and interpreter it runs.

    For the frozen binary, its own file (path, modification time, size), and nothing else: the
    binary's start-up shim computes the same (``native/awf-mcp-shim.c``), whatever version it was
    built with, so that a client entry naming an earlier version's shim, after an in-place
    upgrade, reaches the server the binary's ``daemon status`` and ``stop`` find. Otherwise this
    version, this interpreter and this package's directory and sources."""
    import zlib  # not hashlib, whose OpenSSL costs a shim milliseconds: this is no secret

    from awf_mcp import __version__

    if getattr(sys, "frozen", False):  # the bundle's directory changes with every unpacking
        from awf_mcp.processes.childenv import launched_executable

        executable = os.path.realpath(launched_executable())
        info = os.stat(executable)
        prefix, parts = "binary", [executable, str(info.st_mtime_ns), str(info.st_size)]
    else:
        package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        parts = [__version__, os.path.realpath(sys.executable), package, os.environ.get("PYTHONPATH", "")]
        prefix, parts = __version__, parts + _sources(package)  # a checkout edited in place is another code
    data = "\0".join(parts).encode("utf-8", "surrogateescape")
    return f"{prefix}-{zlib.crc32(data):08x}{zlib.adler32(data[::-1]):08x}"


def _sources(directory: str) -> list[str]:
    """The name, size and modification time of every Python source under ``directory``."""
    found = []
    stack = [directory]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != "__pycache__":
                        stack.append(entry.path)
                elif entry.name.endswith(".py"):
                    info = entry.stat(follow_symlinks=False)
                    found.append(f"{entry.path}:{info.st_size}:{info.st_mtime_ns}")
    return sorted(found)


class Unsafe(OSError):
    """The socket's directory is not the user's own (owner, mode or a symbolic link)."""


MAX_SOCKET_PATH = 100
"""The longest socket path used (the kernel's limit is 107 bytes)."""


def socket_directory(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """``$XDG_RUNTIME_DIR/awf-mcp``, else (unset, or too long a path for a socket)
    ``/tmp/awf-mcp-UID``: made 0700, checked to be the user's."""
    environ = os.environ if environ is None else environ
    runtime = environ.get("XDG_RUNTIME_DIR", "")
    uid = os.getuid()
    if runtime and os.path.isabs(runtime) and len(runtime) < MAX_SOCKET_PATH - 48 and os.path.isdir(runtime):
        directory = os.path.join(runtime, "awf-mcp")
    else:
        directory = os.path.join("/tmp", f"awf-mcp-{uid}")
    os.makedirs(directory, 0o700, exist_ok=True)
    info = os.lstat(directory)
    import stat

    if not stat.S_ISDIR(info.st_mode) or info.st_uid != uid or info.st_mode & 0o077:
        raise Unsafe(f"{directory} is not a private directory of this user (owner, mode 0700, no link)")
    return directory


def socket_path(environ: dict[str, str] | os._Environ[str] | None = None) -> str:
    """The socket of the shared server for this version and install (see :func:`identity`)."""
    return os.path.join(socket_directory(environ), f"serve-{identity()}.sock")


def _start(path: str) -> int:
    """Start the shared server for ``path`` in a session of its own; its pid."""
    environment = dict(os.environ)
    if getattr(sys, "frozen", False):
        # The file the user started, unpacked anew: this shim's own unpacked copy is removed
        # when it exits, and the server outlives it.
        from awf_mcp.processes.childenv import child_environment, launched_executable

        argv, environment = [launched_executable(), ENTRY, path], child_environment()
    else:
        argv = [sys.executable, "-m", "awf_mcp", ENTRY, path]
    # Its temporary files (the single executable's unpacked bundle among them) go in a directory
    # of its own beside its socket: the TMPDIR of whichever session started it may be removed
    # while it still serves others.
    own_tmp = os.path.join(os.path.dirname(path), "tmp")
    os.makedirs(own_tmp, 0o700, exist_ok=True)
    environment["TMPDIR"] = own_tmp
    log = os.path.join(os.path.dirname(path), os.path.basename(path).removesuffix(".sock") + ".log")
    null = os.open(os.devnull, os.O_RDWR)
    out = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        return os.posix_spawn(
            argv[0],
            argv,
            environment,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, null, 1),
                (os.POSIX_SPAWN_DUP2, out, 2),
            ],
            setsid=True,
        )
    finally:
        os.close(null)
        os.close(out)


def connect(path: str, *, start: bool = True) -> Socket | None:
    """A connection to the shared server at ``path``, starting one when none answers (``start``);
    ``None`` when there is none and none could be started."""
    import time

    started: int | None = None
    deadline = time.monotonic() + START_SECONDS
    pause = 0.002
    while True:
        sock = Socket(AF_UNIX, SOCK_STREAM)
        try:
            sock.connect(path)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
        if not start:
            return None
        if started is None:
            started = _start(path)
        else:
            try:
                done, _status = os.waitpid(started, os.WNOHANG)
            except ChildProcessError:
                done = started
            if done == started:  # it exited: another server won the socket, or it failed
                started = -1
        if time.monotonic() > deadline:
            return None
        time.sleep(pause)
        pause = min(pause * 2, 0.005)  # a server that just bound its socket is seen within 5 ms


def hello_fields(
    op: str, argv: Sequence[str] = (), cwd: str = "", env: Mapping[str, str] | None = None
) -> bytes:
    """A hello's payload: ``op``, ``cwd``, the argument count, the arguments, then ``NAME=VALUE``
    for each variable, separated by NUL bytes (none of them can hold one)."""
    fields = [op, cwd, str(len(argv)), *argv, *(f"{name}={value}" for name, value in (env or {}).items())]
    return b"\0".join(field.encode("utf-8", "surrogateescape") for field in fields)


def parse_hello(payload: bytes) -> tuple[str, list[str], str, dict[str, str]]:
    """``(op, argv, cwd, env)`` of a hello made by :func:`hello_fields`; :class:`ValueError` if malformed."""
    fields = [field.decode("utf-8", "surrogateescape") for field in payload.split(b"\0")]
    if len(fields) < 3 or not fields[2].isdigit() or len(fields) < 3 + int(fields[2]):
        raise ValueError("malformed hello")
    count = int(fields[2])
    env = dict(item.partition("=")[::2] for item in fields[3 + count :] if item)
    return fields[0], fields[3 : 3 + count], fields[1], env


def send_hello(sock: Socket, payload: bytes, fds: Sequence[int]) -> None:
    """One hello (its length in 8 bytes, then :func:`hello_fields`), ``fds`` passed with its first
    bytes."""
    import array

    header = len(payload).to_bytes(8, "big")
    sock.sendmsg([header], [(SOL_SOCKET, SCM_RIGHTS, array.array("i", fds))] if fds else [])
    sock.sendall(payload)


def run(args: list[str]) -> bool:
    """Serve ``serve ARGS`` through the shared server; exits the process when the session ends.

    Returns ``False`` (having said why on stderr) when the shared server cannot be used: the
    caller then serves in-process.
    """
    try:
        sock = connect(socket_path())
    except OSError as exc:
        print(f"awf-mcp: note: serving in-process; the shared server is not usable: {exc}", file=sys.stderr)
        return False
    if sock is None:
        print(
            "awf-mcp: note: serving in-process; the shared server did not start (see its log next to "
            f"its socket, {socket_path()})",
            file=sys.stderr,
        )
        return False
    hello = hello_fields("serve", args, os.getcwd(), os.environ)
    try:
        send_hello(sock, hello, [0, 1, 2])
    except OSError as exc:
        print(
            f"awf-mcp: note: serving in-process; the shared server did not take the session: {exc}",
            file=sys.stderr,
        )
        return False
    for fd in (0, 1):  # the session process holds the agent's pipes now; so must nobody else
        devnull = os.open(os.devnull, os.O_RDWR)
        os.dup2(devnull, fd)
        os.close(devnull)
    _wait(sock)
    return True  # not reached


def _wait(sock: Socket) -> None:
    """Wait for the session's end and exit with its code, or say why it ended without one.

    The server says, a line each: ``session PID`` (the session's process: SIGTERM, SIGINT and
    SIGHUP sent to the shim, how a client stops its server, are passed on to it, which ends as
    ``serve`` does), then ``message TEXT`` (why it ended, for stderr) and ``exit CODE``."""
    import signal

    session: list[int] = []

    def pass_on(signum: int, _frame: object) -> None:
        if not session:
            sock.close()  # no session yet: closing is what stops it
            os._exit(128 + signum)
        try:
            os.kill(session[0], signum)
        except OSError:
            return  # the session is gone already: its ending is on its way

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, pass_on)
    code: int | None = None
    pending = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            word, _, rest = line.decode("utf-8", "replace").partition(" ")
            if word == "session" and rest.isdigit():
                session[:] = [int(rest)]
            elif word == "exit" and rest.lstrip("-").isdigit():
                code = int(rest)
            elif word == "message":
                print(rest, file=sys.stderr, flush=True)
    if code is None:
        print(
            "awf-mcp: the shared awf-mcp server ended this session without an exit status (it was "
            "killed?); the next session starts a new one",
            file=sys.stderr,
            flush=True,
        )
        code = 1
    os._exit(code)


def request(op: str) -> dict[str, object] | None:
    """Ask the running shared server (never starting one) ``op`` (``status``, ``stop``); its answer,
    or ``None`` when none runs for this version and install."""
    import json

    sock = connect(socket_path(), start=False)
    if sock is None:
        return None
    try:
        send_hello(sock, hello_fields(op), [])
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    finally:
        sock.close()
    answer = json.loads(received or b"null")
    return answer if isinstance(answer, dict) else None


def report(settings: object) -> None:
    """In a session process: tell the shared server the ``[shared]`` settings of this session."""
    fd = os.environ.pop(REPORT_VARIABLE, "")
    if not fd.isdigit():
        return
    seconds = getattr(settings, "shared_idle_seconds", None)
    import json

    try:
        if seconds is not None:
            os.write(int(fd), json.dumps({"idle_seconds": seconds}).encode() + b"\n")
        os.close(int(fd))
    except OSError:
        pass


_session_control: Socket | None = None
"""In a session process of the shared server: its connection to its shim."""


def hold_session_control(connection: Socket) -> None:
    """Remember this session's connection to its shim (for :func:`end_session`)."""
    global _session_control
    _session_control = connection


def in_session() -> bool:
    """Whether this process is a session of the shared server (its upstreams are shared)."""
    return _session_control is not None


def end_session(code: int, message: str = "") -> None:
    """In a session process: tell its shim, once, the exit code (and why), before it exits."""
    global _session_control
    connection, _session_control = _session_control, None
    if connection is None:
        return
    said = f"message {' '.join(message.split())}\n" if message else ""
    try:
        connection.sendall(f"{said}exit {code}\n".encode())
        connection.shutdown(SHUT_RDWR)
    except OSError:
        pass
