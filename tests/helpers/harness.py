"""End-to-end harness: a real ``awf-mcp serve`` subprocess driven by the SDK's own client.

``mcp_session(*serve_args, cwd=..., env=...)`` starts the server exactly as an
agent does (a subprocess speaking JSON-RPC on stdin/stdout), performs the
``initialize`` handshake with :class:`mcp.client.session.ClientSession`, and
yields the session. ``AWF_MCP_BINARY`` (the frozen single executable) replaces
``python -m awf_mcp`` when set, so the same tests run against both.

``server_command(*args)`` is the argv that starts awf-mcp, for tests that need
the raw process (signals, EOF, byte-level frames); :class:`RawServer` is that
process spoken to in raw JSON lines. The ``/proc`` helpers (``alive``,
``children_of``, ``marked_pids``, ``open_fds``, ``proc_status_kib``) and
``snapshot`` let tests prove that nothing was left running, leaked or touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import Implementation


def server_command(*args: str) -> list[str]:
    """The argv that runs ``awf-mcp ARGS...`` (the frozen binary when AWF_MCP_BINARY is set;
    ``serve`` through the binary's start-up shim when AWF_MCP_SHIM names it too)."""
    binary = os.environ.get("AWF_MCP_BINARY")
    shim = os.environ.get("AWF_MCP_SHIM")
    if binary and shim and args[:1] == ("serve",):
        return [shim, binary, *args]
    if binary:
        return [binary, *args]
    return [sys.executable, "-m", "awf_mcp", *args]


def approved(path: str | Path) -> str:
    """Approve PATH's current content, as ``awf-mcp trust PATH`` does; return it as a string.

    A config file inside the directory a server runs in is the project's: unapproved, it
    is ignored. Tests that write one for the server to use approve it, as a user would.
    """
    from awf_mcp.core import trust

    trust.approve(Path(path), Path(path).read_bytes())
    return str(path)


def write_approved(path: Path, text: str, encoding: str = "utf-8") -> Path:
    """Write TEXT to the config file PATH and approve it (:func:`approved`)."""
    path.write_text(text, encoding=encoding)
    approved(path)
    return path


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a server subprocess: this one, plus ``extra``.

    ``serve`` runs in-process (``AWF_MCP_SHARED=0``): these tests look at the server process
    itself (its children, descriptors, memory, signals). tests/e2e/test_shared.py and the
    real-agent tests (tests/agents/) go through the shim and the shared server instead, and so
    does every test with ``AWF_MCP_TEST_SHARED=1`` (to run a suite through shared upstreams).
    """
    env = dict(os.environ)
    env.pop("AWF_MCP_PLUGINS", None)
    env.pop("AWF_MCP_NO_PLUGINS", None)
    env["AWF_MCP_SHARED"] = "1" if os.environ.get("AWF_MCP_TEST_SHARED") == "1" else "0"
    env.update(extra or {})
    return env


@asynccontextmanager
async def mcp_session(
    *serve_args: str,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    errlog: Any = None,
    client_name: str | None = None,
    stateless: bool = False,
    **callbacks: Any,
) -> AsyncIterator[ClientSession]:
    """An initialized MCP client session with ``awf-mcp serve SERVE_ARGS...``.

    ``client_name`` is the ``clientInfo.name`` the client sends (default: the SDK's own).
    ``stateless`` opens with ``server/discover`` (the 2026-07-28 revision, as Claude Code
    does) instead of ``initialize``: every request then carries the client's info in ``_meta``.
    ``callbacks`` go to :class:`ClientSession` (``list_roots_callback``,
    ``elicitation_callback``, ...): each declares its capability to the server.
    """
    command = server_command("serve", *serve_args)
    params = StdioServerParameters(
        command=command[0], args=command[1:], cwd=str(cwd) if cwd else None, env=server_env(env)
    )
    async with (
        stdio_client(params, errlog=errlog or sys.stderr) as (read, write),
        ClientSession(
            read,
            write,
            client_info=Implementation(name=client_name, version="1.0") if client_name else None,
            **callbacks,
        ) as session,
    ):
        if stateless:
            await session.discover()
        else:
            await session.initialize()
        yield session


async def call_answering(session: ClientSession, name: str, arguments: dict[str, Any]) -> Any:
    """``tools/call`` that answers the server's questions on either protocol family.

    On the handshake revisions the session's callbacks answer the server's requests
    as they come; on the stateless revision an ``InputRequiredResult`` is answered
    through the same callbacks by the SDK's own retry driver, as ``mcp.Client`` does.
    """

    async def retry(responses: Any, state: str | None) -> Any:
        return await session.call_tool(
            name, arguments, input_responses=responses, request_state=state, allow_input_required=True
        )

    return await answering(session, retry)


async def answering(session: ClientSession, send: Callable[[Any, str | None], Any]) -> Any:
    """The result of ``send(input_responses, request_state)`` (a ``tools/call``, ``prompts/get`` or
    ``resources/read`` allowing ``input_required``), each ``InputRequiredResult`` answered through
    the session's callbacks by the SDK's own retry driver, as :func:`call_answering` does."""
    from mcp.client._input_required import run_input_required_driver
    from mcp.client.session import ClientRequestContext
    from mcp_types import InputRequest, InputRequiredResult

    async def dispatch(key: str, request: InputRequest) -> Any:
        context = ClientRequestContext(session=session, request_id=key, meta=None)
        return await session.dispatch_input_request(context, request)

    first = await send(None, None)
    if not isinstance(first, InputRequiredResult):
        return first
    return await run_input_required_driver(first, dispatch=dispatch, retry=send)


def text_of(result: Any) -> str:
    """The text of a ``CallToolResult`` (its text items, concatenated)."""
    return "".join(getattr(item, "text", "") for item in result.content)


class RawServer:
    """``awf-mcp serve`` as a bare process, spoken to in JSON lines.

    Replies are read from the pipe's descriptor with ``select``, so every read
    has a deadline: a server that stops answering fails the test instead of
    hanging it. Stderr goes to a temporary file: a pipe nobody reads would fill
    up with the server's call log and block it. ``popen`` passes extra :class:`subprocess.Popen` arguments
    (``preexec_fn`` for resource limits, for example).
    """

    def __init__(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        **popen: Any,
    ) -> None:
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  (lives as long as the server object)
        self.process = subprocess.Popen(
            server_command("serve", *args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=server_env(env),
            cwd=cwd,
            **popen,
        )
        self.next_id = 100
        self.frames_sent = 0
        self._pending = bytearray()
        self._interpreter: int | None = None

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()

    @property
    def pid(self) -> int:
        """The server's process id."""
        return self.process.pid

    def send(self, message: Mapping[str, Any] | bytes) -> None:
        """Write one frame (a JSON object, or raw bytes without the newline)."""
        self.send_lines([message if isinstance(message, bytes) else json.dumps(message).encode()])

    def send_lines(self, lines: Sequence[bytes]) -> None:
        """Write ``lines`` as consecutive frames in one write."""
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join(line + b"\n" for line in lines))
        self.process.stdin.flush()
        self.frames_sent += len(lines)

    def receive(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next reply line, parsed; fails after ``timeout`` seconds or at EOF."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no reply within {timeout} s"
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 1 << 20)
                assert chunk, f"server closed stdout; stderr: {self.stderr()}"
                self._pending += chunk
        line, _, rest = bytes(self._pending).partition(b"\n")
        self._pending = bytearray(rest)
        parsed = json.loads(line)
        assert isinstance(parsed, dict), line
        return parsed

    def read_rest(self) -> bytes:
        """Everything the server writes from here to its EOF (call after it exited)."""
        assert self.process.stdout is not None
        return bytes(self._pending) + self.process.stdout.read()

    def request(
        self, method: str, params: Mapping[str, Any] | None = None, *, timeout: float = 10.0
    ) -> dict[str, Any]:
        """Send a request and return its reply, skipping other lines in between."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        while True:
            reply = self.receive(timeout)
            if reply.get("id") == self.next_id:
                return reply

    def initialize(self, version: str = "2025-06-18") -> dict[str, Any]:
        """The ``initialize`` handshake, followed by ``notifications/initialized``."""
        reply = self.request(
            "initialize",
            {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply

    def rss_kib(self, field: str = "VmRSS") -> int:
        """A memory figure of the server's interpreter from /proc (``VmRSS``, ``VmHWM``), in KiB."""
        return proc_status_kib(self.interpreter_pid(), field)

    def interpreter_pid(self) -> int:
        """The process that runs the server's Python: the one started, or, under the single
        executable, the end of the chain its bootloaders start (staticx's, then PyInstaller's).

        Found once, on first use, while the server has started no child of its own.
        """
        if self._interpreter is None:
            pid = self.pid
            while os.environ.get("AWF_MCP_BINARY"):
                direct = [child for child in children_of(pid) if parent_of(child) == pid]
                if len(direct) != 1:
                    break
                pid = direct[0]
            self._interpreter = pid
        return self._interpreter

    def close_stdin(self) -> None:
        """Close the server's stdin: it sees EOF."""
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout: float = 5) -> int:
        """The server's exit status, waiting up to ``timeout`` seconds."""
        return self.process.wait(timeout=timeout)

    def stderr(self) -> str:
        """What the server has written to stderr so far (a file, so a chatty server never blocks)."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def kill(self) -> None:
        """SIGKILL the server if it still runs, reap it, and close the pipes."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None and not stream.closed:
                with contextlib.suppress(OSError):
                    stream.close()


# ---------------------------------------------------------------- processes, through /proc


def _stat_fields(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def parent_of(pid: int) -> int | None:
    """The parent of process ``pid``; ``None`` once it is gone."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie."""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] not in ("Z", "X")


def children_of(pid: int) -> list[int]:
    """Every live process whose parent is ``pid``, directly or through descendants."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None and fields[0] not in ("Z", "X"):
                parents[int(entry)] = int(fields[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent and child not in found:
                found.append(child)
                frontier.append(child)
    return found


def find_process(ancestor: int, needle: bytes) -> int:
    """The first live descendant of ``ancestor`` running ``awf_mcp`` with ``needle`` in its command line."""
    for pid in children_of(ancestor):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and (b"awf_mcp" in cmdline or b"awf-mcp" in cmdline):
            return pid
    raise AssertionError(f"no awf-mcp process with {needle!r} below {ancestor}")


def marked_pids(marker: str) -> list[int]:
    """Live processes whose command line contains ``marker``.

    The sandbox's ``bwrap`` carries the command it runs on its own command line: it is the
    wrapper of a marked process, not one more, and is left out.
    """
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            wrapper = Path(f"/proc/{entry}/comm").read_bytes().strip() == b"bwrap"
        except OSError:
            continue
        if marker.encode() in cmdline and not wrapper and alive(int(entry)):
            found.append(int(entry))
    return found


def open_fds(pid: int) -> int:
    """How many file descriptors process ``pid`` holds open."""
    return len(os.listdir(f"/proc/{pid}/fd"))


def proc_status_kib(pid: int, field: str = "VmRSS") -> int:
    """A ``/proc/PID/status`` memory figure (``VmRSS``, ``VmHWM``) in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def end_process(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL after ``grace`` seconds; returns once ``process`` has ended."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() >= deadline:
            return condition()
        time.sleep(interval)
    return True


def snapshot(*directories: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry below ``directories`` (links not followed), with content or link target."""
    state: dict[str, tuple[str, bytes | str]] = {}
    for directory in directories:
        for dirpath, dirnames, filenames in os.walk(directory):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    state[path] = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    state[path] = ("dir", "")
                else:
                    state[path] = ("file", Path(path).read_bytes())
    return state


def report(config: Any, line: str) -> None:
    """Show a measured figure on the terminal, whether or not output is captured (``-s``).

    ``config`` is ``request.config``. Output capture is suspended for the write,
    as ``capsys.disabled()`` does (capsys itself would break the server's stderr pipe).
    """
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture is not None else nullcontext():
        if reporter is not None:
            reporter.ensure_newline()
            reporter.write_line(line)
        else:
            print(line, file=sys.__stdout__)
