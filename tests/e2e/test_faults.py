"""Faults: a dying client, a signalled server, a write that fails midway, racing writes, rogue plugins.

What each test proves, end to end against a real ``awf-mcp serve``:

* killing the *client* (SIGTERM or SIGKILL) while a Bash call runs: the server
  sees EOF, exits, and every process it started is gone (checked in /proc);
* SIGTERM to the server while a Bash call runs: it exits 0 and leaves no
  process behind;
* a Write into a read-only directory, and a Write or Edit that hits a tiny
  file-size limit (RLIMIT_FSIZE, as ``ulimit -f``; SIGXFSZ ignored) halfway:
  an error result, the original file byte-for-byte intact, no temporary file;
* 16 concurrent Writes of distinct contents to one file, with Reads racing
  them: every Read sees one complete version, and the file ends as exactly one;
* a plugin tool that leaks a non-daemon thread, or blocks without looking at
  its cancellation flag: the server keeps answering and still exits at EOF
  within two seconds.

Already covered elsewhere and not repeated here: tools that raise, return
nothing, call ``sys.exit()`` or hang cooperatively
(e2e/test_serve.py::test_every_error_path_is_an_error_result_and_the_server_keeps_serving,
::test_a_hanging_tool_is_cut_off_by_the_call_timeout), SIGTERM with a hung
worker thread (::test_sigterm_does_not_wait_for_a_hung_worker_thread), and
client cancellation of Bash (e2e/test_builtins.py).
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.distributions import make_distribution
from tests.helpers.harness import (
    RawServer,
    alive,
    children_of,
    find_process,
    marked_pids,
    mcp_session,
    text_of,
    wait_until,
)

pytestmark = pytest.mark.e2e

NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}
REPO = Path(__file__).resolve().parents[2]

CLIENT = """
import sys
import anyio
from tests.helpers.harness import mcp_session

async def main(root, marker):
    async with mcp_session("--root", root, cwd=root, env={"AWF_MCP_NO_PLUGINS": "1"}) as session:
        print("calling", flush=True)
        command = f"sh -c 'sleep 30; true {marker}' & sleep 30; true {marker}"
        await session.call_tool("Bash", {"command": command, "timeout_seconds": 60})

anyio.run(main, sys.argv[1], sys.argv[2])
"""


def bash_command(marker: str) -> str:
    """A Bash command with a marked background child and a marked foreground shell, 30 s long."""
    return f"sh -c 'sleep 30; true {marker}' & sleep 30; true {marker}"


# ---------------------------------------------------------------- the client dies mid-call


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_killing_the_client_mid_call_stops_the_server_and_its_bash_children(
    root: Path, tmp_path: Path, signum: int
) -> None:
    marker = f"awf-fault-{uuid.uuid4().hex}"
    with (tmp_path / "client.err").open("wb") as errors:
        client = subprocess.Popen(
            [sys.executable, "-c", CLIENT, str(root), marker],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=errors,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    try:
        assert client.stdout is not None
        assert client.stdout.readline() == b"calling\n", (tmp_path / "client.err").read_text()
        assert wait_until(lambda: len(marked_pids(marker)) >= 2), "Bash should be running"
        server = find_process(client.pid, b"serve")
        started = [server, *children_of(server)]
        assert len(started) >= 3
        client.send_signal(signum)
        client.wait(timeout=10)
        assert wait_until(lambda: not alive(server), timeout=10), "the server should exit at EOF"
        assert wait_until(lambda: not any(alive(pid) for pid in started), timeout=10)
        assert marked_pids(marker) == []
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()


# ---------------------------------------------------------------- the server is signalled mid-call


def test_sigterm_to_the_server_during_bash_exits_zero_and_leaves_no_children(root: Path) -> None:
    marker = f"awf-fault-{uuid.uuid4().hex}"
    with RawServer("--root", str(root), cwd=root, env=NO_PLUGINS) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"name": "Bash", "arguments": {"command": bash_command(marker)}},
            }
        )
        assert wait_until(lambda: len(marked_pids(marker)) >= 2), "Bash should be running"
        started = children_of(server.pid)
        assert len(started) >= 2
        server.process.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0, server.stderr()
        assert wait_until(lambda: not any(alive(pid) for pid in started), timeout=10)
        assert marked_pids(marker) == []


# ---------------------------------------------------------------- a write that fails midway


def make_unwritable(directory: Path) -> None:
    """Make ``directory`` refuse new entries: mode 0555, plus the immutable flag where root ignores modes."""
    directory.chmod(0o555)
    probe = directory / ".probe"
    try:
        probe.touch()
    except PermissionError:
        return
    probe.unlink()
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(directory)]).returncode:
        pytest.skip("running as root without chattr: cannot make a directory read-only")


def make_writable(directory: Path) -> None:
    if shutil.which("chattr"):
        subprocess.run(["chattr", "-i", str(directory)], stderr=subprocess.DEVNULL)
    directory.chmod(0o755)


@pytest.mark.anyio
async def test_a_write_into_a_read_only_directory_fails_and_keeps_the_original(root: Path) -> None:
    locked = root / "locked"
    locked.mkdir()
    original = locked / "notes.txt"
    original.write_bytes(b"original content\n")
    make_unwritable(locked)
    try:
        async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
            result = await session.call_tool("Write", {"path": "locked/notes.txt", "content": "new" * 1000})
            assert result.is_error and text_of(result).startswith("cannot write 'locked/notes.txt'")
            edited = await session.call_tool(
                "Edit", {"path": "locked/notes.txt", "old": "original", "new": "changed"}
            )
            assert edited.is_error and text_of(edited).startswith("cannot write 'locked/notes.txt'")
        assert original.read_bytes() == b"original content\n"
        assert sorted(os.listdir(locked)) == ["notes.txt"]
    finally:
        make_writable(locked)


FILE_SIZE_LIMIT = 64 * 1024


def limit_file_size() -> None:
    """In the server, before exec: files may not grow past FILE_SIZE_LIMIT; SIGXFSZ is ignored."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def test_a_write_cut_short_by_the_file_size_limit_keeps_the_original(root: Path) -> None:
    original = b"line one\nline two\n" * 100
    (root / "data.txt").write_bytes(original)
    with RawServer("--root", str(root), cwd=root, env=NO_PLUGINS, preexec_fn=limit_file_size) as server:
        server.initialize()

        def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result: dict[str, Any] = server.request("tools/call", {"name": name, "arguments": arguments})[
                "result"
            ]
            return result

        big = call("Write", {"path": "data.txt", "content": "x" * (4 * FILE_SIZE_LIMIT)})
        assert big["isError"] and "File too large" in big["content"][0]["text"], big
        grown = call("Edit", {"path": "data.txt", "old": "one", "new": "y" * 1024, "replace_all": True})
        assert grown["isError"] and "File too large" in grown["content"][0]["text"], grown
        new_file = call("Write", {"path": "fresh.txt", "content": "z" * (2 * FILE_SIZE_LIMIT)})
        assert new_file["isError"], new_file
        assert (root / "data.txt").read_bytes() == original
        assert sorted(os.listdir(root)) == ["data.txt"]
        small = call("Write", {"path": "data.txt", "content": "fits\n"})
        assert not small["isError"], small
        assert (root / "data.txt").read_bytes() == b"fits\n"
        assert sorted(os.listdir(root)) == ["data.txt"]


# ---------------------------------------------------------------- racing writes


@pytest.mark.anyio
async def test_concurrent_writes_leave_exactly_one_complete_version(root: Path) -> None:
    size = 512 * 1024
    versions = {chr(ord("A") + n) * size for n in range(16)}
    (root / "target.txt").write_text("initial")
    seen: list[str] = []
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:

        async def write(content: str) -> None:
            result = await session.call_tool("Write", {"path": "target.txt", "content": content})
            assert not result.is_error, text_of(result)

        async def read() -> None:
            result = await session.call_tool("Read", {"path": "target.txt", "limit": 10})
            seen.append(text_of(result))

        async with anyio.create_task_group() as group:
            for content in sorted(versions):
                group.start_soon(write, content)
                group.start_soon(read)
    final = (root / "target.txt").read_text()
    assert final in versions
    # Read shows the start of the one long line (and a note): never a mix of two versions
    shown = [text.split(" [awf-mcp:")[0] for text in seen]
    assert all(text == "initial" or len(set(text)) == 1 for text in shown), [text[:20] for text in seen]
    assert sorted(os.listdir(root)) == ["target.txt"]


# ---------------------------------------------------------------- rogue plugins

ROGUE_PLUGIN = """
import threading
import time

from awf_mcp import ToolDefinition, ToolResult, hookimpl

EMPTY = {"type": "object", "properties": {}}


class Rogue:
    def list_tools(self):
        return [
            ToolDefinition("rogue_leak", "Start a thread that never ends.", EMPTY, "plugin:rogue"),
            ToolDefinition("rogue_block", "Block, ignoring cancellation.", EMPTY, "plugin:rogue"),
        ]

    def call_tool(self, name, arguments):
        if name == "rogue_leak":
            threading.Thread(target=time.sleep, args=(3600,), name="rogue leaked").start()
            return ToolResult.text("leaked")
        time.sleep(3600)

    def close(self):
        time.sleep(3600)


@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(Rogue())
"""


def test_leaked_threads_and_uncooperative_tools_do_not_hold_the_server(tmp_path: Path) -> None:
    plugins = make_distribution(
        tmp_path / "plugins", dist="awf-plugin-rogue", plugin="rogue", module="awf_rogue", source=ROGUE_PLUGIN
    )
    env = {"AWF_MCP_PLUGIN_PATH": str(plugins), "AWF_MCP_PLUGINS": "rogue"}
    with RawServer("--no-builtins", "--call-timeout", "0.5", env=env) as server:
        server.initialize()
        for _ in range(3):
            leaked = server.request("tools/call", {"name": "rogue_leak", "arguments": {}})
            assert leaked["result"]["content"][0]["text"] == "leaked"
        blocked = server.request("tools/call", {"name": "rogue_block", "arguments": {}})
        assert (
            blocked["result"]["isError"]
            and "timed out after 0.5 s" in blocked["result"]["content"][0]["text"]
        )
        threads = len(os.listdir(f"/proc/{server.pid}/task"))
        assert server.request("ping")["result"] == {}
        assert threads >= 5, "the leaked and blocked threads should be alive"
        started = time.monotonic()
        server.close_stdin()
        assert server.wait(timeout=10) == 0, server.stderr()
        assert time.monotonic() - started < 2.0


def test_the_rlimit_helper_really_limits_file_size(tmp_path: Path) -> None:
    """The fault above is real: a child under limit_file_size() cannot write past the limit."""
    script = f"open({str(tmp_path / 'f')!r}, 'wb').write(b'x' * {2 * FILE_SIZE_LIMIT})"
    done = subprocess.run(
        [sys.executable, "-c", script], preexec_fn=limit_file_size, capture_output=True, text=True
    )
    assert done.returncode != 0 and "File too large" in done.stderr
    assert (tmp_path / "f").stat().st_size <= FILE_SIZE_LIMIT
