"""Live reload, end to end: a real ``awf-mcp serve`` whose config file changes while an agent is attached.

The agent is the SDK's own client (:func:`tests.helpers.harness.mcp_session`); the upstreams are
tests/upstreams/fake_upstream.py, each started with a directory of its own on its command line, so
that its process can be found (:func:`~tests.helpers.harness.marked_pids`).

* A valid change applies live: the server tells the agent ``notifications/tools/list_changed``, and
  the next ``tools/list`` shows it. An upstream added starts (its process runs), one removed stops
  (its process is gone), one changed restarts (a new process), one unchanged keeps its process.
* An invalid file changes nothing: the old tools are served on, with one warning on stderr.
* A project file changed after its approval is not used until approved again: the old
  configuration is served on, with one warning naming ``awf-mcp trust``; approving it applies it.
* Prompts and resources of a server added or removed reach the agent, with their ``list_changed``.
* ``awf-mcp doctor`` says that a running server keeps its old configuration.
* ``serve --transport http`` and ``serve`` on stdio reload at once on SIGHUP: the file is changed
  so that no poll can see it (same size, times and inode), so only the signal can have reloaded it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp_types import (
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ToolListChangedNotification,
)

from awf_mcp.cli.doctor import Context, Report, check_configuration, run_checks
from awf_mcp.core.config import ServeOptions
from tests.e2e.test_list_changed import http_serve, http_session
from tests.helpers.harness import (
    RawServer,
    marked_pids,
    mcp_session,
    server_command,
    server_env,
    text_of,
    wait_until,
    write_approved,
)

pytestmark = pytest.mark.e2e

FAKE = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"
NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}


def server_table(name: str, markers: Path, **extra: str) -> str:
    """A ``[servers.NAME]`` table running the fake upstream in ``good`` mode, marked by ``markers``."""
    markers.mkdir(exist_ok=True)
    lines = [
        f"[servers.{name}]",
        f'command = "{sys.executable}"',
        f'args = ["{FAKE}", "good", "{markers}"]',
        "pin = false",
        *(f'{key} = "{value}"' for key, value in extra.items()),
    ]
    return "\n".join(lines) + "\n"


class Told:
    """The ``tools/list_changed`` notifications the client got."""

    def __init__(self) -> None:
        self.count = 0

    async def handle(self, message: object) -> None:
        if isinstance(message, ToolListChangedNotification):
            self.count += 1

    async def until(self, count: int, timeout: float = 15) -> None:
        with anyio.fail_after(timeout):
            while self.count < count:
                await anyio.sleep(0.02)


async def names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


def one_pid(markers: Path) -> int:
    assert wait_until(lambda: len(marked_pids(str(markers))) == 1, timeout=10), marked_pids(str(markers))
    return marked_pids(str(markers))[0]


@pytest.mark.anyio
async def test_servers_added_removed_and_changed_start_stop_and_restart_live(tmp_path: Path) -> None:
    config = tmp_path / "awf-mcp.toml"
    first, second = tmp_path / "first", tmp_path / "second"
    write_approved(config, server_table("one", first))
    told = Told()
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with mcp_session(
            "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, errlog=errlog, message_handler=told.handle
        ) as session:
            initialized = session.initialize_result
            assert initialized is not None and initialized.capabilities.tools is not None
            assert initialized.capabilities.tools.list_changed  # the config file may change
            assert "one_audio" in await names(session)
            one = one_pid(first)

            # Added: it starts, the agent is told and lists it; the server kept is untouched.
            write_approved(config, server_table("one", first) + server_table("two", second))
            await told.until(1)
            listed = await names(session)
            assert {"one_audio", "two_audio"} <= listed
            two = one_pid(second)
            assert marked_pids(str(first)) == [one]
            assert text_of(await session.call_tool("two_big", {"size": 5})) == "xxxxx"

            # Changed: it restarts (a new process, the old one gone).
            write_approved(
                config, server_table("one", first) + server_table("two", second, cwd=str(tmp_path))
            )
            await told.until(2)
            assert wait_until(lambda: two not in marked_pids(str(second)), timeout=10)
            assert one_pid(second) != two
            assert marked_pids(str(first)) == [one]
            assert "two_audio" in await names(session)

            # Removed: it stops, its process ends, and its tools go.
            write_approved(config, server_table("one", first))
            await told.until(3)
            assert not {name for name in await names(session) if name.startswith("two_")}
            assert wait_until(lambda: not marked_pids(str(second)), timeout=10)
            assert marked_pids(str(first)) == [one]
    assert "is not reloaded" not in errors.read_text()


@pytest.mark.anyio
async def test_an_invalid_file_keeps_the_old_configuration_with_one_warning(tmp_path: Path) -> None:
    config = tmp_path / "awf-mcp.toml"
    first = tmp_path / "first"
    write_approved(config, server_table("one", first))
    errors = tmp_path / "stderr.txt"
    told = Told()
    with errors.open("w") as errlog:
        async with mcp_session(
            "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, errlog=errlog, message_handler=told.handle
        ) as session:
            before = await names(session)
            one = one_pid(first)
            write_approved(config, server_table("one", first) + "[servers.two\n")  # not TOML
            assert wait_until(lambda: "is not reloaded" in errors.read_text(), timeout=10)
            config.write_text(config.read_text())  # saved again as it is: reloaded, no second warning
            await anyio.sleep(1.5)
            assert await names(session) == before
            assert marked_pids(str(first)) == [one]
            assert told.count == 0
            assert text_of(await session.call_tool("one_big", {"size": 5})) == "xxxxx"
    warnings = [line for line in errors.read_text().splitlines() if "is not reloaded" in line]
    assert len(warnings) == 1, warnings
    assert "not valid TOML" in warnings[0] and "keeps its old configuration" in warnings[0]
    [finding] = (await doctor_configuration(tmp_path)).findings
    assert finding.status == "error" and "not valid TOML" in finding.detail
    assert "running awf-mcp serve keeps its old configuration" in finding.fix


async def doctor_configuration(cwd: Path) -> Report:
    """``awf-mcp doctor``'s configuration check, run in ``cwd``."""
    context = Context(
        cwd=cwd, home=cwd, env={"PATH": os.environ.get("PATH", "")}, options=ServeOptions(), timeout=5
    )
    context.load_settings()
    return await run_checks(context, [check_configuration])


@pytest.mark.anyio
async def test_a_project_file_changed_after_approval_is_ignored_until_approved_again(tmp_path: Path) -> None:
    from awf_mcp.core import trust

    config = tmp_path / "awf-mcp.toml"
    first, second = tmp_path / "first", tmp_path / "second"
    write_approved(config, server_table("one", first))
    errors = tmp_path / "stderr.txt"
    told = Told()
    with errors.open("w") as errlog:
        async with mcp_session(
            "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, errlog=errlog, message_handler=told.handle
        ) as session:
            before = await names(session)
            config.write_text(server_table("one", first) + server_table("two", second))  # not approved
            assert wait_until(lambda: "awf-mcp trust" in errors.read_text(), timeout=10)
            await anyio.sleep(1.0)
            assert await names(session) == before
            assert not marked_pids(str(second))  # nothing it names was started
            assert told.count == 0

            trust.approve(config, config.read_bytes())  # awf-mcp trust: now it applies
            await told.until(1)
            assert "two_audio" in await names(session)
            one_pid(second)
    warnings = [line for line in errors.read_text().splitlines() if "awf-mcp trust" in line]
    assert len(warnings) == 1, warnings
    assert "changed since you approved it" in warnings[0] and "keeps its old configuration" in warnings[0]


@pytest.mark.anyio
async def test_doctor_says_a_running_server_keeps_the_configuration_approved_before(tmp_path: Path) -> None:
    config = tmp_path / "awf-mcp.toml"
    write_approved(config, 'only = ["Read"]\n')
    config.write_text('only = ["Glob"]\n')
    [finding] = (await doctor_configuration(tmp_path)).findings
    assert finding.status == "warning" and "changed since you approved it" in finding.detail
    assert "running awf-mcp serve keeps its old configuration" in finding.detail


CHANGING = Path(__file__).resolve().parents[1] / "upstreams" / "changing_upstream.py"


def offering_table(name: str) -> str:
    """A ``[servers.NAME]`` table running the SDK upstream with prompts and resources."""
    return (
        f'[servers.{name}]\ncommand = "{sys.executable}"\nargs = ["{CHANGING}", "--offerings"]\npin = false\n'
    )


@pytest.mark.anyio
async def test_prompts_and_resources_of_a_server_added_reach_the_agent_with_their_list_changed(
    tmp_path: Path,
) -> None:
    config = tmp_path / "awf-mcp.toml"
    write_approved(config, offering_table("one"))
    told: list[object] = []

    async def until(kind: type, count: int = 1) -> None:
        with anyio.fail_after(15):
            while sum(isinstance(message, kind) for message in told) < count:
                await anyio.sleep(0.02)

    async def on_message(message: object) -> None:
        told.append(message)

    async with mcp_session(
        "--no-builtins", cwd=tmp_path, env=NO_PLUGINS, message_handler=on_message
    ) as session:
        capabilities = session.initialize_result.capabilities if session.initialize_result else None
        assert (
            capabilities is not None
            and capabilities.prompts is not None
            and capabilities.prompts.list_changed
        )
        assert "one_greet" in {prompt.name for prompt in (await session.list_prompts()).prompts}
        resources = {str(resource.uri) for resource in (await session.list_resources()).resources}
        write_approved(config, offering_table("one") + offering_table("two"))
        await until(PromptListChangedNotification)
        assert {"one_greet", "two_greet"} <= {
            prompt.name for prompt in (await session.list_prompts()).prompts
        }
        greeting = await session.get_prompt("two_greet", {"who": "Ada"})
        assert greeting.messages[0].content.text == "Hello, Ada!"  # type: ignore[union-attr]
        assert {str(resource.uri) for resource in (await session.list_resources()).resources} == resources
        assert not any(isinstance(message, ResourceListChangedNotification) for message in told)

        write_approved(config, offering_table("two"))
        await until(PromptListChangedNotification, 2)
        assert "one_greet" not in {prompt.name for prompt in (await session.list_prompts()).prompts}


def same_stat(path: Path, text: str) -> None:
    """Write ``text`` (of the file's size) to ``path``, keeping its times: no poll sees the change."""
    before = path.stat()
    assert len(text.encode()) == before.st_size
    with path.open("r+") as file:  # in place: same inode
        file.write(text)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.anyio
async def test_sighup_reloads_http_serve_at_once(tmp_path: Path) -> None:
    """The user's own file (named, outside the project: no approval needed), changed so that no poll
    sees it; SIGHUP reloads it."""
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "own.toml"
    config.write_text('only = ["Read"]\n')
    with http_serve("--config", str(config), cwd=work) as (url, process):
        told = Told()
        async with http_session(url, message_handler=told.handle) as session:
            await session.initialize()
            assert await names(session) == {"Read"}
            same_stat(config, 'only = ["Glob"]\n')
            await anyio.sleep(1.5)
            assert await names(session) == {"Read"}, "the watcher saw a change it cannot see"
            process.send_signal(signal.SIGHUP)
            await told.until(1, timeout=10)
            assert await names(session) == {"Glob"}
        assert process.poll() is None  # SIGHUP reloads; it does not stop the server


@pytest.mark.parametrize("shared", [False, True], ids=["in-process", "shared"])
def test_sighup_reloads_stdio_serve_at_once(tmp_path: Path, shared: bool) -> None:
    """The signal goes to the process the agent started: the server, or the shim that hands the
    session to the shared server (docs/shared.md), which passes it on."""
    work = tmp_path / "work"
    work.mkdir()
    config = tmp_path / "own.toml"
    config.write_text('only = ["Read"]\n')
    env = dict(NO_PLUGINS)
    if shared:  # a shared server of this test's own, stopped at the end
        env |= {"AWF_MCP_SHARED": "1", "XDG_RUNTIME_DIR": str(tmp_path / "runtime")}
        (tmp_path / "runtime").mkdir(mode=0o700)

    def sessions() -> int:
        done = subprocess.run(
            server_command("daemon", "status", "--json"), env=server_env(env), capture_output=True, timeout=60
        )
        return int(json.loads(done.stdout).get("sessions", 0))

    try:
        sighup_reloads(config, work, env, sessions if shared else None)
    finally:
        if shared:
            subprocess.run(server_command("daemon", "stop"), env=server_env(env), timeout=60, check=False)


def sighup_reloads(config: Path, work: Path, env: dict[str, str], sessions: Callable[[], int] | None) -> None:
    with RawServer("--config", str(config), cwd=work, env=env) as server:
        server.initialize()
        if sessions is not None:
            assert sessions() == 1  # served by the shared server, through the shim
        listed = server.request("tools/list")["result"]["tools"]
        assert [tool["name"] for tool in listed] == ["Read"]
        same_stat(config, 'only = ["Glob"]\n')
        time.sleep(1.5)
        server.send({"jsonrpc": "2.0", "id": "again", "method": "tools/list"})
        frame = server.receive()
        assert frame.get("id") == "again", f"the watcher saw a change it cannot see: {frame}"
        server.process.send_signal(signal.SIGHUP)
        assert server.receive()["method"] == "notifications/tools/list_changed"
        listed = server.request("tools/list")["result"]["tools"]
        assert [tool["name"] for tool in listed] == ["Glob"]
        assert server.process.poll() is None  # SIGHUP reloads; it does not stop the server
