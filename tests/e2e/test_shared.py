"""The shared server end to end: shims, sessions, isolation, endings, idle exit, versions.

Each test gets a private ``XDG_RUNTIME_DIR``, so its shims find (and start) a shared server of
its own, stopped at the end. The agents' side is the SDK's ``ClientSession`` over stdio, as an
agent starts ``awf-mcp serve``; the server side is whatever the shim hands the session to.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.harness import mcp_session, server_command, server_env, text_of

pytestmark = pytest.mark.e2e

WAIT_SECONDS = 20.0


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def wait_until(condition: Any, what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


def environ_of(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as environ:
        items = environ.read().split(b"\0")
    return dict(item.decode(errors="replace").partition("=")[::2] for item in items if item)


def marked(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if environ_of(int(entry)).get("TEST_MARK") == marker and alive(int(entry)):
                    found.append(int(entry))
    return found


class Shared:
    """The shared server of one test: its environment, ``awf-mcp daemon`` and the raw socket."""

    def __init__(self, runtime: Path, binary: str | None = None, **extra: str) -> None:
        self.env = server_env({"XDG_RUNTIME_DIR": str(runtime), "AWF_MCP_SHARED": "1", **extra})
        self.binary = binary

    def command(self, *args: str) -> list[str]:
        if not self.binary:
            return server_command(*args)
        shim = os.environ.get("AWF_MCP_SHIM")  # the binary's start-up shim, as its clients run it
        return [shim, self.binary, *args] if shim and args[:1] == ("serve",) else [self.binary, *args]

    def daemon(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command("daemon", *args), env=self.env, capture_output=True, text=True, timeout=60
        )

    def status(self) -> dict[str, Any]:
        done = self.daemon("status", "--json")
        assert done.returncode == 0, done.stderr
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer


@pytest.fixture
def shared() -> Iterator[Shared]:
    runtime = Path(tempfile.mkdtemp(prefix="awf-run-", dir="/tmp"))  # a socket path is short
    server = Shared(runtime)
    yield server
    server.daemon("stop")
    shutil.rmtree(runtime, ignore_errors=True)


def raw_shim(shared: Shared, root: Path, *args: str) -> subprocess.Popen[bytes]:
    """``awf-mcp serve`` as a client starts it, with pipes the test writes JSON-RPC on."""
    return subprocess.Popen(
        shared.command("serve", "--root", str(root), *args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=shared.env,
        cwd=root,
    )


def initialize(process: subprocess.Popen[bytes]) -> None:
    assert process.stdin is not None and process.stdout is not None
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    process.stdin.write(json.dumps(hello).encode() + b"\n")
    process.stdin.flush()
    assert b'"result"' in process.stdout.readline()


def test_sessions_share_one_server_and_keep_their_own_roots_clients_and_jobs(
    shared: Shared, tmp_path: Path
) -> None:
    """Two sessions through one shared server: each reads only its own root, gets its own
    client's budget, and cannot see the other's background job."""
    roots = [tmp_path / "a", tmp_path / "b"]
    for index, root in enumerate(roots):
        root.mkdir()
        (root / "own.txt").write_text(f"session {index}\n")
    seen: dict[int, dict[str, Any]] = {}
    status: dict[str, Any] = {}

    async def one(index: int, client: str, ready: anyio.Event, both: anyio.Event) -> None:
        root, other = roots[index], roots[1 - index]
        async with mcp_session("--root", str(root), cwd=root, env=shared.env, client_name=client) as session:
            mine = await session.call_tool("Read", {"path": str(root / "own.txt")})
            theirs = await session.call_tool("Read", {"path": str(other / "own.txt")})
            command = f"echo job-of-session-{index}; sleep 30"
            job = await session.call_tool("Bash", {"command": command, "run_in_background": True})
            seen[index] = {
                "mine": text_of(mine),
                "theirs": (bool(theirs.is_error), text_of(theirs)),
                "job": text_of(job),
            }
            ready.set()
            await both.wait()
            await anyio.sleep(0.5)
            peek = await session.call_tool("BashOutput", {"job_id": "bash_1"})
            seen[index]["peek"] = text_of(peek)

    async def both() -> None:
        events = [anyio.Event(), anyio.Event()]
        all_ready = anyio.Event()

        async def gate() -> None:
            for event in events:
                await event.wait()
            status.update(await anyio.to_thread.run_sync(shared.status))
            all_ready.set()

        async with anyio.create_task_group() as group:
            group.start_soon(gate)
            group.start_soon(one, 0, "claude-code", events[0], all_ready)
            group.start_soon(one, 1, "gemini-cli-mcp-client", events[1], all_ready)

    anyio.run(both)
    for index in (0, 1):
        assert f"session {index}" in seen[index]["mine"]
        refused, said = seen[index]["theirs"]
        assert refused and f"session {1 - index}" not in said, said
    assert status["sessions"] == 2, status  # both, in one shared server
    # each session has its own jobs: bash_1 is its own job in each, never the other's
    for index in (0, 1):
        assert "bash_1" in seen[index]["job"], seen[index]["job"]
        assert f"job-of-session-{index}" in seen[index]["peek"], seen[index]["peek"]
        assert f"job-of-session-{1 - index}" not in seen[index]["peek"]


def test_the_shim_imports_the_standard_library_only(shared: Shared, tmp_path: Path) -> None:
    process = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "awf_mcp", "serve", "--root", str(tmp_path)],
        capture_output=True,
        env=shared.env,
        timeout=60,
        input=b"",
    )
    imported = {
        line.split("|")[-1].strip()
        for line in process.stderr.decode().splitlines()
        if line.startswith("import time:") and "imported package" not in line
    }
    assert "awf_mcp.cli.shim" in imported, process.stderr.decode()[-2000:]
    ours = {name for name in imported if name.split(".")[0] == "awf_mcp"}
    assert ours <= {"awf_mcp", "awf_mcp.__main__", "awf_mcp.cli", "awf_mcp.cli.main", "awf_mcp.cli.shim"}, (
        ours
    )
    site = {"sitecustomize", "usercustomize", "_distutils_hack"}
    foreign = {
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names
        and name.split(".")[0] not in site
        and not name.startswith("__editable__")
        and name.split(".")[0] != "awf_mcp"
    }
    assert not foreign, foreign


def test_a_shim_killed_with_sigkill_ends_its_session_and_its_jobs(shared: Shared, tmp_path: Path) -> None:
    mark = f"shim-kill-{os.getpid()}"
    process = raw_shim(shared, tmp_path)
    initialize(process)
    assert process.stdin is not None and process.stdout is not None
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {
            "name": "Bash",
            "arguments": {"command": f"TEST_MARK={mark} sleep 300", "run_in_background": True},
        },
    }
    process.stdin.write(json.dumps(call).encode() + b"\n")
    process.stdin.flush()
    assert b"bash_1" in process.stdout.readline()
    wait_until(lambda: marked(mark), "the job runs")
    sessions = shared.status()["sessions"]
    assert sessions == 1
    process.kill()
    process.wait()
    wait_until(lambda: not marked(mark), "the job is gone")
    wait_until(lambda: shared.status()["sessions"] == 0, "the session is gone")


def test_a_shared_server_killed_with_sigkill_ends_every_shim_at_once_with_a_message(
    shared: Shared, tmp_path: Path
) -> None:
    shims = [raw_shim(shared, tmp_path) for _ in range(3)]
    for process in shims:
        initialize(process)
    pid = shared.status()["pid"]
    os.kill(pid, signal.SIGKILL)
    started = time.monotonic()
    for process in shims:
        assert process.wait(timeout=WAIT_SECONDS) != 0
    took = time.monotonic() - started
    for process in shims:
        assert process.stderr is not None
        said = process.stderr.read().decode()
        assert "shared awf-mcp server ended" in said, said
    assert took < 10, took
    fresh = raw_shim(shared, tmp_path)  # the next session starts a new server
    initialize(fresh)
    assert shared.status()["pid"] != pid
    fresh.kill()


def test_daemon_stop_ends_the_sessions_cleanly(shared: Shared, tmp_path: Path) -> None:
    process = raw_shim(shared, tmp_path)
    initialize(process)
    done = shared.daemon("stop")
    assert done.returncode == 0 and "stopped" in done.stdout, done
    assert process.wait(timeout=WAIT_SECONDS) != 0
    assert process.stderr is not None
    assert "awf-mcp daemon stop" in process.stderr.read().decode()
    assert shared.status()["running"] is False


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat", "rb") as stat:
        fields = stat.read().rsplit(b")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_the_server_sleeps_while_its_sessions_live(shared: Shared, tmp_path: Path) -> None:
    """A session reports its settings once and closes that pipe; the server then has nothing to
    do until the next connection. It used to keep watching the closed pipe (always readable)
    and spun a core for as long as any session lived."""
    sessions = [raw_shim(shared, tmp_path) for _ in range(2)]
    try:
        for process in sessions:
            initialize(process)
        server = shared.status()["pid"]
        time.sleep(0.5)  # what the sessions' starts asked of it is done
        before = cpu_seconds(server)
        time.sleep(2.0)
        used = cpu_seconds(server) - before
        assert used < 0.5, f"the shared server used {used:.2f} s of CPU in 2 s with nothing to do"
    finally:
        for process in sessions:
            process.stdin.close()  # type: ignore[union-attr]
            process.wait(timeout=WAIT_SECONDS)


def test_with_no_session_left_the_server_exits_after_idle_seconds(shared: Shared, tmp_path: Path) -> None:
    config = tmp_path / "awf-mcp.toml"  # the user's own: named, outside the project
    config.write_text("[shared]\nidle_seconds = 1\n")
    project = tmp_path / "project"
    project.mkdir()
    process = raw_shim(shared, project, "--config", str(config))
    initialize(process)
    status = shared.status()
    assert status["idle_seconds"] == 1
    process.stdin.close()  # type: ignore[union-attr]
    assert process.wait(timeout=WAIT_SECONDS) == 0
    wait_until(lambda: not alive(status["pid"]), "the idle server exits")
    assert not Path(status["socket"]).exists()


def test_another_version_or_install_uses_a_server_of_its_own(shared: Shared, tmp_path: Path) -> None:
    """The server's identity holds the code it runs: the same code on another import path (or
    the single executable copied elsewhere) is another install, as an upgrade is another
    version, and gets its own server."""
    process = raw_shim(shared, tmp_path)
    initialize(process)
    first = shared.status()
    runtime = Path(shared.env["XDG_RUNTIME_DIR"])
    binary = os.environ.get("AWF_MCP_BINARY")
    if binary:
        copy = tmp_path / "elsewhere" / "awf-mcp"
        copy.parent.mkdir()
        shutil.copy2(binary, copy)
        other = Shared(runtime, binary=str(copy))
    else:
        other = Shared(
            runtime, PYTHONPATH=os.pathsep.join(filter(None, [shared.env.get("PYTHONPATH"), str(tmp_path)]))
        )
    second_process = raw_shim(other, tmp_path)
    initialize(second_process)
    second = other.status()
    assert first["pid"] != second["pid"] and first["socket"] != second["socket"]
    assert shared.status()["sessions"] == 1 == second["sessions"]
    for each in (process, second_process):
        each.kill()
    other.daemon("stop")


def test_awf_mcp_shared_0_serves_in_process(shared: Shared, tmp_path: Path) -> None:
    process = subprocess.Popen(
        server_command("serve", "--root", str(tmp_path)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**shared.env, "AWF_MCP_SHARED": "0"},
    )
    initialize(process)
    assert shared.status()["running"] is False  # no shared server was started
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=WAIT_SECONDS) == 0


def test_another_user_gets_nothing_from_the_socket(shared: Shared, tmp_path: Path) -> None:
    """The socket is 0600 in a 0700 directory; and where those are opened up (a mistake), the
    server still checks each peer's uid. The probe runs as ``nobody``; the control, the same
    probe as this user, gets its answer."""
    if os.geteuid() != 0:
        pytest.skip("probing as another user needs root (setpriv to nobody)")
    process = raw_shim(shared, tmp_path)
    initialize(process)
    socket_path = shared.status()["socket"]
    probe = (
        "import socket, sys, json\n"
        "s = socket.socket(socket.AF_UNIX)\n"
        "try:\n"
        f"    s.connect({socket_path!r})\n"
        "except OSError as e:\n"
        "    print('refused', e.errno); sys.exit(0)\n"
        "p = b'status\\x00\\x000'  # a hello: op, cwd, argument count (awf_mcp.cli.shim.hello_fields)\n"
        "socket.send_fds(s, [len(p).to_bytes(8, 'big')], []); s.sendall(p)\n"
        "s.settimeout(10)\n"
        "try:\n"
        "    print('answer' if s.recv(65536) else 'closed')\n"
        "except ConnectionError:\n"
        "    print('closed')\n"
    )
    as_nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
        sys.executable,
        "-I",
        "-c",
        probe,
    ]
    denied = subprocess.run(as_nobody, capture_output=True, text=True, timeout=30)
    assert denied.stdout.startswith("refused"), denied
    directory = os.path.dirname(socket_path)
    runtime = os.path.dirname(directory)
    for path in (runtime, directory, socket_path):  # the mistake: the modes keep nobody out
        os.chmod(path, 0o777)
    try:
        unchecked = subprocess.run(as_nobody, capture_output=True, text=True, timeout=30)
        assert unchecked.stdout.strip() == "closed", unchecked
        mine = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=30)
        assert mine.stdout.strip() == "answer", mine
    finally:
        for path in (runtime, directory):
            os.chmod(path, 0o700)
        os.chmod(socket_path, 0o600)
    process.kill()


def test_the_server_outlives_the_tmpdir_of_the_session_that_started_it(
    shared: Shared, tmp_path: Path
) -> None:
    """The first session's ``$TMPDIR`` is removed while the server runs on (a client's temporary
    directory, a test's): the next session still starts, and its files go to its own
    ``$TMPDIR``, not to the first session's."""
    first_tmp, second_tmp = tmp_path / "first-tmp", tmp_path / "second-tmp"
    for directory in (first_tmp, second_tmp):
        directory.mkdir()
    project = tmp_path / "project"
    project.mkdir()

    async def bash_tmpdir(tmpdir: Path) -> str:
        env = {**shared.env, "TMPDIR": str(tmpdir)}
        async with mcp_session("--root", str(project), cwd=project, env=env) as session:
            return text_of(await session.call_tool("Bash", {"command": 'echo "tmp=$TMPDIR"'}))

    said = anyio.run(bash_tmpdir, first_tmp)
    assert f"tmp={first_tmp}" in said, said
    pid = shared.status()["pid"]
    shutil.rmtree(first_tmp)
    said = anyio.run(bash_tmpdir, second_tmp)
    assert f"tmp={second_tmp}" in said, said
    assert shared.status()["pid"] == pid  # the same server served both
