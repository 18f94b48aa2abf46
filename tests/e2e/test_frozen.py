"""The PyInstaller single executable, end to end: ``AWF_MCP_BINARY`` names it (CI builds it).

Covers ``--version``, ``tools list``, ``serve`` with the SDK client calling every
built-in, a plugin installed into a plugin directory by the binary itself (one with a
compiled extension too), a mismatched compiled plugin, stdout purity, EOF and signals
(SIGKILL of the bootloader), and the binary in an empty root file system (``unshare`` and
``chroot``, as root or in a user namespace): no loader, no libc, only what it carries. Every test runs in
a fresh ``XDG_DATA_HOME`` and ``AWF_MCP_PLUGIN_PATH`` so only what the test puts
there is found; the binary sees no site-packages of its own.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

import awf_mcp
from tests.helpers.dns import dns_server
from tests.helpers.harness import alive, children_of, marked_pids, parent_of, text_of, wait_until
from tests.helpers.remote import remote_upstream, tls_files

BINARY = os.environ.get("AWF_MCP_BINARY", "")
REPO = Path(__file__).resolve().parents[2]
ECHO = REPO / "plugins" / "awf-plugin-echo"
NATIVE = REPO / "tests" / "fixtures" / "compiled-plugin"
BUILTINS = ("Bash", "Edit", "Glob", "Grep", "Read", "Write")

pytestmark = [
    pytest.mark.frozen,
    pytest.mark.skipif(
        not BINARY,
        reason="AWF_MCP_BINARY is not set: build with scripts/build-binary.sh and point it at dist/awf-mcp",
    ),
]


@pytest.fixture
def home(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment with empty, private plugin directories."""
    plugins = tmp_path / "plugin-path"
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"AWF_MCP_PLUGINS", "AWF_MCP_NO_PLUGINS", "PYTHONPATH"}
    }
    env.update(
        {
            "XDG_DATA_HOME": str(tmp_path / "xdg"),
            "AWF_MCP_PLUGIN_PATH": str(plugins),
            # The interpreter that runs pip for `plugins install` (the binary finds python3 otherwise).
            "AWF_MCP_PYTHON": os.environ.get("AWF_MCP_PYTHON", sys.executable),
            # The binary's own processes are looked at (bundles, bootloaders): serve in-process;
            # test_shared.py runs the binary's shim and shared server.
            "AWF_MCP_SHARED": "0",
        }
    )
    yield env


def run(*args: str, env: dict[str, str], cwd: Path | None = None, timeout: float = 60) -> Any:
    return subprocess.run(
        [BINARY, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def install_echo(env: dict[str, str], target: Path) -> None:
    """Install the echo example into ``target`` with the binary's own ``plugins install``."""
    done = run("plugins", "install", str(ECHO), env={**env, "AWF_MCP_PLUGIN_PATH": str(target)}, timeout=300)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------- one-shot commands


def test_version_matches_the_package(home: dict[str, str]) -> None:
    done = run("--version", env=home)
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert lines[0] == f"awf-mcp {awf_mcp.__version__}"
    assert any(line.startswith("build: one-file single executable (PyInstaller)") for line in lines), lines


def test_tools_list_shows_every_builtin(home: dict[str, str]) -> None:
    done = run("tools", "list", "--json", env=home)
    assert done.returncode == 0, done.stderr
    names = [tool["name"] for tool in json.loads(done.stdout)["tools"]]
    assert names == sorted(names) and set(BUILTINS) <= set(names)
    assert {tool["source"] for tool in json.loads(done.stdout)["tools"]} == {"builtin"}


def test_client_configuration_names_the_binary_itself_not_an_unpacked_copy(
    home: dict[str, str], tmp_path: Path
) -> None:
    """The entry runs the binary's start-up shim, installed in awf-mcp's state directory, with the
    binary itself (not a copy unpacked for this run) as its first argument."""
    done = run("config", "claude", env=home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    shim = Path(os.environ["XDG_STATE_HOME"]) / "awf-mcp" / "bin" / f"awf-mcp-shim-{awf_mcp.__version__}"
    assert f'"command": {json.dumps(str(shim))}' in done.stdout, done.stdout
    assert f'"args": [\n        {json.dumps(str(Path(BINARY).absolute()))},\n        "serve"' in done.stdout
    assert "staticx-" not in done.stdout and "_MEI" not in done.stdout


@pytest.fixture
def shared_home(home: dict[str, str]) -> Iterator[tuple[dict[str, str], Path]]:
    """``home`` with the shared server on (these tests serve in-process by default) and a runtime
    directory of its own, whose server is stopped afterwards."""
    runtime = Path(tempfile.mkdtemp(prefix="awf-run-", dir="/tmp"))  # a socket path is short
    env = {key: value for key, value in home.items() if key != "AWF_MCP_SHARED"}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    yield env, runtime
    run("daemon", "stop", env=env)
    shutil.rmtree(runtime, ignore_errors=True)


def test_the_start_up_shim_hands_sessions_to_the_binarys_shared_server(
    shared_home: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """``daemon shim`` installs the shim once (a second call leaves the same file) and prints the
    command a client runs. A session started with it is served by the binary's shared server,
    the one the binary's ``daemon status`` finds, while the shim process stays the small static
    program it is: it never runs the binary, whose bundle it would have to unpack."""
    env, runtime = shared_home
    first, second = run("daemon", "shim", env=env), run("daemon", "shim", env=env)
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    command = shlex.split(first.stdout)
    assert shlex.split(second.stdout) == command
    shim = Path(command[0])
    assert command[1:] == [str(Path(BINARY).absolute()), "serve"]
    assert shim.parent == Path(os.environ["XDG_STATE_HOME"]) / "awf-mcp" / "bin"
    assert shim.stat().st_size < 2 * 1024 * 1024 and os.access(shim, os.X_OK)
    replies: list[Any] = []
    process = start_raw(env, tmp_path, [*command, "--root", str(tmp_path)], replies)
    assert {tool["name"] for tool in replies[1]["result"]["tools"]} >= set(BUILTINS)
    assert os.readlink(f"/proc/{process.pid}/exe") == str(shim.resolve())
    status = run("daemon", "status", "--json", env=env)
    answer = json.loads(status.stdout)
    assert answer["running"] and answer["sessions"] == 1, answer
    assert answer["socket"].startswith(str(runtime)), answer
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0, process.stderr.read() if process.stderr else ""


def test_a_shim_of_an_earlier_version_reaches_the_binarys_own_server(
    shared_home: tuple[dict[str, str], Path], tmp_path: Path
) -> None:
    """After an upgrade in place, client entries still name the earlier version's shim. Its
    sessions must reach the server the binary's ``daemon status`` (and ``stop``) find: the shim
    names the server by the binary's file, not by the version it was built with. The earlier
    shim is built here from the same source with another version given to the compiler, as
    the build script once baked it in."""
    compiler = shutil.which(os.environ.get("CC", "cc"))
    if compiler is None:
        pytest.skip("no C compiler to build an earlier shim (the binary's build needs one too)")
    earlier = tmp_path / "awf-mcp-shim-0.0.9"
    source = REPO / "native" / "awf-mcp-shim.c"
    subprocess.run(
        [
            compiler,
            "-std=c11",
            "-O2",
            "-static",
            "-s",
            '-DAWF_MCP_VERSION="0.0.9"',
            "-o",
            str(earlier),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    env, _ = shared_home
    command = [str(earlier), str(Path(BINARY).absolute()), "serve", "--root", str(tmp_path)]
    process = start_raw(env, tmp_path, command)
    assert os.readlink(f"/proc/{process.pid}/exe") == str(earlier)  # the shim, not the binary
    answer = json.loads(run("daemon", "status", "--json", env=env).stdout)
    assert answer["running"] and answer["sessions"] == 1, answer
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=30) == 0, process.stderr.read() if process.stderr else ""


def test_the_binary_bundles_metadata_for_what_it_bundles(home: dict[str, str]) -> None:
    done = run("plugins", "list", "--json", env=home)
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["plugins"]
    assert [row["name"] for row in rows] == ["builtin"] and rows[0]["status"] == "ok"


# ---------------------------------------------------------------- serve through the SDK client


@pytest.mark.anyio
async def test_serve_calls_every_builtin(home: dict[str, str], tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    params = StdioServerParameters(
        command=BINARY, args=["serve", "--root", str(root)], cwd=str(root), env=home
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            names = [tool.name for tool in (await session.list_tools()).tools]
            assert set(BUILTINS) <= set(names)
            calls: list[tuple[str, dict[str, Any]]] = [
                ("Write", {"path": "notes.txt", "content": "alpha\nbeta\n"}),
                ("Read", {"path": "notes.txt"}),
                ("Edit", {"path": "notes.txt", "old": "beta", "new": "gamma"}),
                ("Bash", {"command": "echo from-bash && cat notes.txt"}),
                ("Glob", {"pattern": "*.txt"}),
                ("Grep", {"pattern": "gamma"}),
            ]
            results = {}
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                assert not result.is_error, f"{name}: {text_of(result)}"
                results[name] = text_of(result)
    assert "alpha" in results["Read"] and "beta" in results["Read"]
    assert (root / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "from-bash" in results["Bash"] and "gamma" in results["Bash"]
    assert "notes.txt" in results["Glob"] and "notes.txt" in results["Grep"]


@pytest.mark.anyio
async def test_bash_children_get_the_users_environment_not_the_bundles(
    home: dict[str, str], tmp_path: Path
) -> None:
    """The bootloader points LD_LIBRARY_PATH at the bundle; a Bash command must not see that."""
    env = {**home, "LD_LIBRARY_PATH": "/opt/users/own/lib"}
    params = StdioServerParameters(command=BINARY, args=["serve", "--root", str(tmp_path)], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool(
            "Bash", {"command": "env | grep -E '^(LD_LIBRARY_PATH|_PYI|_MEI)' | sort"}
        )
    assert not result.is_error, text_of(result)
    seen = [line for line in text_of(result).splitlines() if "=" in line]
    assert seen == ["LD_LIBRARY_PATH=/opt/users/own/lib"], text_of(result)


def serving_with_own_tmpdir(home: dict[str, str], tmp_path: Path) -> tuple[Path, StdioServerParameters]:
    """An empty ``$TMPDIR`` of the test's own, and the parameters that serve ``tmp_path`` with it."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**home, "TMPDIR": str(scratch)}
    return scratch, StdioServerParameters(command=BINARY, args=["serve", "--root", str(tmp_path)], env=env)


@pytest.mark.anyio
async def test_a_start_unpacks_few_files_and_the_metadata_as_one_zip(
    home: dict[str, str], tmp_path: Path
) -> None:
    """Each start creates (and removes) every unpacked file: what is only read travels zipped.

    The distributions' metadata (entry points, versions, licences) and the data-only
    ``jsonschema_specifications`` sit in ``packed.zip``; no ``.dist-info`` directory is
    unpacked, yet the binary still knows what it bundles and validates arguments with the
    drafts' metaschemas.
    """
    scratch, params = serving_with_own_tmpdir(home, tmp_path)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        refused = await session.call_tool("Grep", {"pattern": "x", "head_limit": -3})
        unpacked = list(scratch.rglob("*"))
        (archive,) = [path for path in unpacked if path.name == "packed.zip"]
        with zipfile.ZipFile(archive) as packed:
            members = packed.namelist()
    assert refused.is_error and "less than the minimum of 1" in text_of(refused), text_of(refused)
    assert len(unpacked) < 150, len(unpacked)  # about 330 files and directories before the zip
    assert not [path for path in unpacked if path.name.endswith((".dist-info", ".egg-info"))]
    assert any(name.startswith("mcp-") and name.endswith(".dist-info/METADATA") for name in members)
    assert any(name.startswith("mcp-") and "/licenses/" in name for name in members)
    assert any(name.endswith("draft202012/metaschema.json") for name in members)


@pytest.mark.anyio
async def test_the_unpack_directory_is_private_unpredictable_and_never_reused(
    home: dict[str, str], tmp_path: Path
) -> None:
    """What the single executable unpacks at a start lies in a directory of its own: mode 0700,
    this user's, a random name each start, gone afterwards; another start never reuses it."""
    scratch, params = serving_with_own_tmpdir(home, tmp_path)
    seen: list[list[Path]] = []
    for _ in range(2):
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            bundles = [p for p in scratch.iterdir() if p.name.startswith(("_MEI", "staticx-"))]
            seen.append(bundles)
            for bundle in bundles:
                info = bundle.lstat()
                assert stat.S_ISDIR(info.st_mode) and not stat.S_ISLNK(info.st_mode), bundle
                assert stat.S_IMODE(info.st_mode) == 0o700, oct(info.st_mode)
                assert info.st_uid == os.getuid()
                assert len(bundle.name.split("-", 1)[-1].removeprefix("_MEI")) >= 6  # a random suffix
    assert seen[0] and seen[1] and not {p.name for p in seen[0]} & {p.name for p in seen[1]}
    assert not [p for p in scratch.iterdir() if p.name.startswith(("_MEI", "staticx-"))]


@pytest.mark.anyio
async def test_a_bash_call_does_not_unpack_the_bundle_again(home: dict[str, str], tmp_path: Path) -> None:
    """The keeper is the binary started again: it runs from the server's own unpacked bundle."""
    scratch, params = serving_with_own_tmpdir(home, tmp_path)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        # The server's $TMPDIR by name: a contained command's own $TMPDIR is a private one.
        result = await session.call_tool("Bash", {"command": f"ls -d {scratch}/*"})
    assert not result.is_error, text_of(result)
    unpacked = [line for line in text_of(result).splitlines() if "/_MEI" in line or "/staticx-" in line]
    assert len(unpacked) == 1, text_of(result)  # the server's; a keeper of its own would add one


def test_sigkill_of_the_server_ends_the_bash_command_it_runs(home: dict[str, str], tmp_path: Path) -> None:
    """No bootloader stands between the server and a Bash keeper, so the keeper's death signal fires.

    The bootloader outlives the server and removes the bundle it unpacked from ``$TMPDIR``.
    """
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    marker = f"awf-frozen-sleeper-{uuid.uuid4().hex}"
    process = subprocess.Popen(
        [BINARY, "serve", "--root", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**home, "TMPDIR": str(scratch)},
        cwd=tmp_path,
    )
    command = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {
            "name": "Bash",
            "arguments": {"command": f"echo started > sleeper.pid; exec -a {marker} sleep 300"},
        },
    }
    sleeper = 0
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(initialize_frames() + json.dumps(command).encode() + b"\n")
        process.stdin.flush()
        for _ in range(2):
            assert "result" in json.loads(process.stdout.readline())
        pid_file = tmp_path / "sleeper.pid"
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "the Bash command did not start"
            time.sleep(0.05)
        assert wait_until(lambda: len(marked_pids(marker)) == 1)  # its pid as seen from here, not $$
        (sleeper,) = marked_pids(marker)
        (server,) = [pid for pid in children_of(process.pid) if parent_of(pid) == process.pid]
        os.kill(server, signal.SIGKILL)  # the Python server under the bootloader, as the OOM killer would
        deadline = time.monotonic() + 10
        while alive(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(sleeper), "the Bash command outlived the server killed with SIGKILL"
        process.wait(timeout=30)  # the bootloader removes the bundle, then ends as its child did
        # (the server's own awf-mcp-PID-* output directory, which a later server sweeps, may stay)
        assert [p.name for p in scratch.iterdir() if p.name.startswith(("_MEI", "staticx-"))] == []
    finally:
        if sleeper and alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
        process.wait()


@pytest.mark.anyio
async def test_a_plugin_installed_for_the_binary_is_served(home: dict[str, str], tmp_path: Path) -> None:
    target = Path(home["AWF_MCP_PLUGIN_PATH"])
    install_echo(home, target)
    # Nothing the binary bundles was copied into the plugin directory.
    assert sorted(p.name for p in target.glob("*.dist-info")) == ["awf_plugin_echo-1.0.0.dist-info"]
    listed = run("plugins", "list", "--json", env=home)
    row = {r["name"]: r for r in json.loads(listed.stdout)["plugins"]}["echo"]
    assert row["status"] == "ok" and Path(row["location"]) == target and row["tools"] == ["echo_echo"]

    params = StdioServerParameters(command=BINARY, args=["serve", "--no-builtins"], env=home)
    async with (
        stdio_client(params, errlog=sys.stderr) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert [tool.name for tool in (await session.list_tools()).tools] == ["echo_echo"]
        result = await session.call_tool("echo_echo", {"text": "frozen", "prefix": ">"})
        assert not result.is_error and json.loads(text_of(result))["output"] == ">frozen"

    removed = run("plugins", "uninstall", "echo", env=home)
    assert removed.returncode == 0, removed.stderr
    assert list(target.glob("*.dist-info")) == []


@pytest.mark.anyio
async def test_a_plugin_with_a_compiled_extension_installs_and_runs(
    home: dict[str, str], tmp_path: Path
) -> None:
    """``plugins install`` builds or picks a wheel the binary's own interpreter and libc load."""
    done = run("plugins", "install", str(NATIVE), env=home, timeout=300)
    assert done.returncode == 0, done.stderr
    target = Path(home["AWF_MCP_PLUGIN_PATH"])
    assert list(target.glob("awf_plugin_native/_native.*.so")), sorted(p.name for p in target.rglob("*"))
    params = StdioServerParameters(command=BINARY, args=["serve", "--no-builtins"], env=home)
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert [tool.name for tool in (await session.list_tools()).tools] == ["native_hypot"]
            result = await session.call_tool("native_hypot", {"a": 3, "b": 4})
    assert not result.is_error and text_of(result) == "5.0", text_of(result)


def test_a_mismatched_compiled_plugin_is_one_line_not_a_crash(home: dict[str, str]) -> None:
    from tests.helpers.distributions import make_distribution

    target = Path(home["AWF_MCP_PLUGIN_PATH"])
    make_distribution(
        target, dist="awf-plugin-native", plugin="native", module="awf_native_plugin",
        source="import awf_native_ext\n",
    )  # fmt: skip
    (target / "awf_native_ext.cpython-311-x86_64-linux-gnu.so").write_bytes(b"\x7fELF not for this machine")
    (target / "awf_native_ext.abi3.so").write_bytes(b"not an ELF file")
    done = run("tools", "list", "--json", env=home)
    assert done.returncode == 0, done.stderr
    assert set(BUILTINS) <= {tool["name"] for tool in json.loads(done.stdout)["tools"]}
    lines = [line for line in done.stderr.splitlines() if "native" in line]
    assert len(lines) == 1 and "ImportError" in lines[0] and "Traceback" not in done.stderr


# ---------------------------------------------------------------- the raw process: purity, EOF, signals


def initialize_frames() -> bytes:
    frames = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    return b"".join(json.dumps(frame).encode() + b"\n" for frame in frames)


def start_raw(
    env: dict[str, str], cwd: Path, command: Sequence[str] = (), replies: list[Any] | None = None
) -> subprocess.Popen[bytes]:
    """``command`` (default ``BINARY serve``) past ``initialize`` and ``tools/list``, whose
    answers go to ``replies``."""
    process = subprocess.Popen(
        list(command) or [BINARY, "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(initialize_frames())
    process.stdin.flush()
    for _ in range(2):
        reply = json.loads(process.stdout.readline())
        assert reply["jsonrpc"] == "2.0" and "result" in reply
        if replies is not None:
            replies.append(reply)
    return process


def test_stdout_is_json_rpc_only_and_eof_exits_zero(home: dict[str, str], tmp_path: Path) -> None:
    done = subprocess.run(
        [BINARY, "serve"], input=initialize_frames(), capture_output=True, env=home, cwd=tmp_path, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(line)["jsonrpc"] == "2.0" for line in lines)
    assert done.stdout.endswith(b"\n")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signals_exit_zero_promptly(home: dict[str, str], tmp_path: Path, signum: int) -> None:
    process = start_raw(home, tmp_path)
    try:
        began = time.monotonic()
        # Signal the whole process: a one-file binary is a bootloader parent and a Python child.
        process.send_signal(signum)
        code = process.wait(timeout=10)
        assert time.monotonic() - began < 3
        assert code == 0, process.stderr.read() if process.stderr else ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_closing_stdin_while_idle_exits_within_a_second(home: dict[str, str], tmp_path: Path) -> None:
    process = start_raw(home, tmp_path)
    try:
        assert process.stdin is not None
        began = time.monotonic()
        process.stdin.close()
        assert process.wait(timeout=10) == 0
        assert time.monotonic() - began < 2
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_sigkill_of_the_process_a_client_started_leaves_no_server_behind(
    home: dict[str, str], tmp_path: Path
) -> None:
    """An HTTP server never sees stdin EOF: killing the one-file bootloader must still end it."""
    process = subprocess.Popen(
        [BINARY, "serve", "--transport", "http", "--port", "0", "--root", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=home,
    )
    try:
        assert process.stderr is not None
        deadline = time.monotonic() + 30
        while "listening on" not in process.stderr.readline().decode() and time.monotonic() < deadline:
            assert process.poll() is None, "the HTTP server did not start"
        servers = children_of(process.pid) or [process.pid]  # one-file: the bootloader's child
        process.kill()
        process.wait()
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in servers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in servers), f"left running: {servers}"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def launch_chain(pid: int) -> list[int]:
    """``pid`` and its descendants down to the Python server, each the only child of the one before.

    The one-file binary is PyInstaller's bootloader and the server; the portable one is
    staticx's bootloader and the server (idle servers start no other process).
    """
    chain = [pid]
    while children := [child for child in children_of(chain[-1]) if parent_of(child) == chain[-1]]:
        assert len(children) == 1, f"{chain[-1]} has children {children}"
        chain.append(children[0])
    return chain


@pytest.mark.parametrize("victim", ["the process the client started", "the server's parent"])
def test_sigkill_of_a_bootloader_leaves_no_unpacked_bundle_behind(
    home: dict[str, str], tmp_path: Path, victim: str
) -> None:
    """The bootloader removes what it unpacked (about 50 MB); killed, it cannot, so the server does."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    process = start_raw({**home, "TMPDIR": str(scratch)}, tmp_path)  # stdin stays open: no EOF
    try:
        chain = launch_chain(process.pid)
        unpacked = [entry.name for entry in scratch.iterdir()]
        assert len(chain) == 2 and len(unpacked) == 1, (chain, unpacked)  # one bootloader, one bundle
        assert unpacked[0].startswith(("_MEI", "staticx-")), unpacked
        killed = chain[0] if victim == "the process the client started" else chain[-2]
        os.kill(killed, signal.SIGKILL)
        process.wait()
        deadline = time.monotonic() + 10
        while (any(alive(pid) for pid in chain) or list(scratch.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(alive(pid) for pid in chain), f"left running: {chain}"
        assert list(scratch.iterdir()) == []
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def test_cold_start_is_reported(home: dict[str, str], tmp_path: Path) -> None:
    """Spawn -> tools/list answered, for the record (printed with -s; not a pass/fail threshold)."""
    began = time.monotonic()
    process = start_raw(home, tmp_path)
    elapsed = time.monotonic() - began
    assert process.stdin is not None
    process.stdin.close()
    assert process.wait(timeout=10) == 0
    print(f"\ncold start (spawn -> tools/list answered): {elapsed * 1000:.0f} ms")
    assert elapsed < 30


# ---------------------------------------------------------------- nothing from the machine: an empty root


def empty_root(tmp_path: Path, *host_tools: str) -> Path:
    """A root file system holding the binary, empty ``/dev``, ``/proc``, ``/tmp``, ``/work`` and a home.

    ``host_tools`` (absolute paths) come along with the loader and libraries ``ldd`` names
    for them, at the same paths, plus ``/etc/passwd`` and ``/etc/group``: the machine's own
    programs for Bash to run, on the machine's own libc, next to a binary that carries its own.
    """
    root = tmp_path / "root"
    for directory in ("dev", "proc", "tmp", "work", "home/user"):
        (root / directory).mkdir(parents=True)
    (root / "tmp").chmod(0o1777)
    shutil.copy2(BINARY, root / "awf-mcp")
    needed = set(host_tools)
    for tool in host_tools:
        listed = subprocess.run(["ldd", tool], capture_output=True, text=True, check=True).stdout
        needed.update(word for word in listed.split() if word.startswith("/"))
    if host_tools:
        needed.update(("/etc/passwd", "/etc/group"))
    for path in needed:
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.realpath(path), root / path.lstrip("/"))
    return root


def in_root(root: Path, *argv: str) -> list[str]:
    """``argv`` run chrooted into ``root``, with ``/dev`` and a ``/proc`` of its own mounted there."""
    unshare, mount, chroot, sh = (shutil.which(name) for name in ("unshare", "mount", "chroot", "sh"))
    assert unshare and mount and chroot and sh, (
        "unshare, mount, chroot and sh are needed (util-linux, coreutils)"
    )
    options = ["--mount", "--pid", "--fork", "--kill-child"]
    if os.geteuid() != 0:
        options.insert(0, "--map-root-user")
    script = f'{mount} --rbind /dev "$0/dev" && {mount} -t proc proc "$0/proc" && exec {chroot} "$0" "$@"'
    return [unshare, *options, sh, "-c", script, str(root), *argv]


ROOT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/home/user",
    "TMPDIR": "/tmp",
    "XDG_STATE_HOME": "/home/user/.local/state",
    "LANG": "C.UTF-8",
}


def test_the_binary_needs_nothing_from_the_machine(tmp_path: Path) -> None:
    """No libc, no loader, no shell in the root: the binary starts, lists its tools and names itself."""
    root = empty_root(tmp_path)
    assert sorted(p.name for p in (root / "awf-mcp").parent.iterdir()) == [
        "awf-mcp", "dev", "home", "proc", "tmp", "work",
    ]  # fmt: skip
    version = subprocess.run(
        in_root(root, "/awf-mcp", "--version"), capture_output=True, text=True, env=ROOT_ENV
    )
    assert version.returncode == 0, version.stderr
    first, *rest = version.stdout.splitlines()
    assert first == f"awf-mcp {awf_mcp.__version__}"
    assert "installed in /awf-mcp" in rest and any("carried" in line for line in rest), rest
    listed = subprocess.run(
        in_root(root, "/awf-mcp", "tools", "list", "--json"), capture_output=True, text=True, env=ROOT_ENV
    )
    assert listed.returncode == 0, listed.stderr
    assert set(BUILTINS) <= {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    assert list((root / "tmp").iterdir()) == []  # the bootloader cleaned up after itself
    doctor = subprocess.run(
        in_root(root, "/awf-mcp", "doctor", "--json"), capture_output=True, text=True, env=ROOT_ENV
    )
    (build,) = [finding for finding in json.loads(doctor.stdout)["findings"] if finding["check"] == "build"]
    said = build["data"]
    assert said["commit"] != "unknown" and said["version"] == awf_mcp.__version__, said
    assert said["libc"].startswith("glibc ") and said["libc"].endswith("(carried by the binary)"), said
    assert said["rg"].startswith("ripgrep 14"), said
    assert said["built for"].startswith(f"linux-{os.uname().machine}, against glibc"), said


@pytest.mark.anyio
async def test_the_binary_serves_in_an_empty_root(tmp_path: Path) -> None:
    """The file tools and the bundled rg run with no libc in the root; so does Bash, given a shell.

    The shell and the programs it runs are the machine's own, with their libraries: they must
    load those, never the libc the binary carries, and see none of its variables.
    """
    tools = [shutil.which(name) or name for name in ("bash", "cat", "env", "ls", "grep", "sort")]
    root = empty_root(tmp_path, *tools)
    (root / "bin").mkdir(exist_ok=True)
    if not (root / "bin" / "bash").exists():
        (root / "bin" / "bash").symlink_to(tools[0])
    params = StdioServerParameters(
        command=in_root(root)[0],
        args=[*in_root(root)[1:], "/awf-mcp", "serve", "--root", "/work"],
        env=ROOT_ENV,
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            assert set(BUILTINS) <= {tool.name for tool in (await session.list_tools()).tools}
            results = {}
            for name, arguments in [
                ("Write", {"path": "notes.txt", "content": "alpha\nbeta\n"}),
                ("Read", {"path": "notes.txt"}),
                ("Edit", {"path": "notes.txt", "old": "beta", "new": "gamma"}),
                ("Glob", {"pattern": "*.txt"}),
                ("Grep", {"pattern": "gam+a"}),
                # (the first unpacked copy, should there be more than one)
                (
                    "Bash",
                    {
                        "command": "ls -l notes.txt; for d in /tmp/staticx-*/_internal; "
                        'do "$d/rg" --version; break; done'
                    },
                ),
                ("Bash", {"command": "grep -h ' /' /proc/self/maps | grep -o '/[^ ]*' | sort -u"}),
                ("Bash", {"command": "env | grep -E '^(LD_|_PYI|_MEI|STATICX)' | sort"}),
            ]:
                result = await session.call_tool(name, arguments)
                assert not result.is_error, f"{name}: {text_of(result)}"
                results.setdefault(name, []).append(text_of(result))
    assert (root / "work" / "notes.txt").read_text() == "alpha\ngamma\n"
    assert "alpha" in results["Read"][0] and "notes.txt" in results["Glob"][0]
    assert "notes.txt" in results["Grep"][0] and "gamma" in results["Grep"][0]
    listing, maps, leaked = results["Bash"]
    # The server runs as uid 0 there (root, or mapped to it): the names come from the root's /etc.
    assert " root root " in listing and "ripgrep 14" in listing, listing
    loaded = [line for line in maps.splitlines() if line.startswith("/")]
    assert any("libc.so" in line for line in loaded), maps
    assert not any("staticx" in line or "_MEI" in line for line in loaded), (
        maps
    )  # the machine's libc, not ours
    assert [line for line in leaked.splitlines() if "=" in line] == [], leaked


@pytest.mark.anyio
async def test_bash_runs_in_an_empty_root_whose_only_shell_is_a_static_busybox(tmp_path: Path) -> None:
    """No bash, no libc: Bash falls back to ``/bin/sh``, here Debian's static busybox."""
    busybox = shutil.which("busybox") or "/bin/busybox"
    linkage = subprocess.run(["ldd", busybox], capture_output=True, text=True)
    assert linkage.returncode != 0 or "statically linked" in linkage.stdout, (
        f"a static busybox is needed, {busybox} is not one: apt-get install busybox-static"
    )
    root = empty_root(tmp_path)
    (root / "bin").mkdir()
    shutil.copy2(busybox, root / "bin" / "busybox")
    for applet in ("sh", "ls", "cat", "id"):
        (root / "bin" / applet).symlink_to("busybox")
    (root / "work" / "notes.txt").write_text("alpha\n")
    params = StdioServerParameters(
        command=in_root(root)[0],
        args=[*in_root(root)[1:], "/awf-mcp", "serve", "--root", "/work"],
        env={**ROOT_ENV, "PATH": "/bin"},
    )
    with (tmp_path / "stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool(
                "Bash", {"command": "echo $((6 * 7)) from $0; cat notes.txt; ls /bin/bash || true"}
            )
    assert not result.is_error, text_of(result)
    text = text_of(result)
    assert "42 from /bin/sh" in text and "alpha" in text, text
    assert "/bin/bash: No such file or directory" in text, text  # there really was no bash


DNS_ADDRESS = "127.3.4.5"  # any loopback address: the resolver only speaks to port 53
USER_CONFIG = Path("/home/user/.config/awf-mcp/config.toml")  # the user's own: HOME is /home/user


@pytest.mark.anyio
async def test_an_https_upstream_is_reached_by_name_in_an_empty_root(tmp_path: Path) -> None:
    """Name lookups (``/etc/hosts``, then DNS) and TLS with the root's own CA certificates.

    The root holds a Debian-style ``/etc/ssl/certs/ca-certificates.crt`` (only the test's
    authority), ``/etc/hosts`` and ``/etc/resolv.conf``; the configuration is the user's own,
    under ``$HOME/.config/awf-mcp``. One upstream serves HTTPS on loopback under two names:
    ``hosts.test`` (in ``/etc/hosts``) and ``dns.test`` (answered by the test's DNS server).
    """
    try:
        dns = dns_server(DNS_ADDRESS, {"dns.test": "127.0.0.1"})
        asked = dns.__enter__()
    except PermissionError:
        pytest.skip("serving DNS on port 53 needs root (CI runs as root)")
    try:
        root = empty_root(tmp_path)
        authority, certificate, key = tls_files(tmp_path, "hosts.test", "dns.test")
        (root / "etc" / "ssl" / "certs").mkdir(parents=True)
        shutil.copy(authority, root / "etc" / "ssl" / "certs" / "ca-certificates.crt")
        (root / "etc" / "hosts").write_text("127.0.0.1 localhost\n127.0.0.1 hosts.test\n")
        (root / "etc" / "resolv.conf").write_text(f"nameserver {DNS_ADDRESS}\noptions timeout:2 attempts:2\n")
        tls = {"REMOTE_UPSTREAM_TLS_CERT": str(certificate), "REMOTE_UPSTREAM_TLS_KEY": str(key)}
        with remote_upstream("sse", env=tls) as base:
            port = base.rsplit(":", 1)[1]
            config = root / USER_CONFIG.relative_to("/")
            config.parent.mkdir(parents=True)
            config.write_text(
                f'[servers.byhosts]\ntype = "sse"\nurl = "https://hosts.test:{port}/sse"\n'
                f'[servers.bydns]\ntype = "sse"\nurl = "https://dns.test:{port}/sse"\n'
            )
            serve = ["/awf-mcp", "serve", "--root", "/work", "--no-builtins", "--config", str(USER_CONFIG)]
            params = StdioServerParameters(
                command=in_root(root)[0], args=[*in_root(root)[1:], *serve], env=ROOT_ENV
            )
            with (tmp_path / "stderr.log").open("w") as errlog:
                async with (
                    stdio_client(params, errlog=errlog) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    names = {tool.name for tool in (await session.list_tools()).tools}
                    by_hosts = await session.call_tool("byhosts_echo", {"message": "through /etc/hosts"})
                    by_dns = await session.call_tool("bydns_echo", {"message": "through DNS"})
    finally:
        dns.__exit__(None, None, None)
    log = (tmp_path / "stderr.log").read_text()
    assert {"byhosts_echo", "bydns_echo"} <= names, log
    assert text_of(by_hosts) == "echo: through /etc/hosts", text_of(by_hosts)
    assert text_of(by_dns) == "echo: through DNS", text_of(by_dns)
    assert "dns.test" in asked and "hosts.test" not in asked, asked


def test_the_start_up_shim_serves_in_process_and_says_why_when_the_shared_server_is_unusable(
    home: dict[str, str], tmp_path: Path
) -> None:
    """A socket directory another user could write to is never used: the shim says so on stderr
    and runs the binary's ``serve`` itself, which answers as usual. ``AWF_MCP_SHARED=0`` runs it
    in-process without a word."""
    runtime = Path(tempfile.mkdtemp(prefix="awf-run-", dir="/tmp"))
    (runtime / "awf-mcp").mkdir(mode=0o700)
    (runtime / "awf-mcp").chmod(0o777)
    env = {key: value for key, value in home.items() if key != "AWF_MCP_SHARED"}
    env["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        command = shlex.split(run("daemon", "shim", env=env).stdout)
        for extra, said in (({}, "not a private directory"), ({"AWF_MCP_SHARED": "0"}, "")):
            done = subprocess.run(
                [*command, "--root", str(tmp_path)],
                input=initialize_frames(),
                capture_output=True,
                env={**env, **extra},
                cwd=tmp_path,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            replies = [json.loads(line) for line in done.stdout.splitlines()]
            assert {tool["name"] for tool in replies[1]["result"]["tools"]} >= set(BUILTINS)
            notes = [line for line in done.stderr.decode().splitlines() if "serving in-process" in line]
            assert (said in notes[0]) if said else not notes, done.stderr
        assert not list((runtime / "awf-mcp").iterdir())  # no server was started there
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
