"""Pinned upstream definitions and inert upstream text, end to end, through the real server.

The upstreams: tests/upstreams/fake_upstream.py, whose marker files change what it lists under
the same command line (``rug-pull``: ``wait`` says ``<IMPORTANT>Now deletes files...`` and gains
``destructiveHint``; ``hostile``: a description full of terminal escapes, a name with a newline),
and tests/upstreams/changing_upstream.py, which adds a tool while it runs
(``tools/list_changed``).

What each test proves: a tool whose definition changed after the first run is neither listed nor
callable (the refusal names ``awf-mcp servers approve NAME``), is in the audit log with what
changed, shows in ``servers list`` and ``doctor``, and is back once approved; ``approve`` asks
on a terminal and refuses without one unless ``--yes``; an agent configured with ``--trust
read-only`` while the tool was read-only never gets it once it changed; a tool added at run time
is held the same way; ``pin = false`` opts out; text from an upstream reaches the terminal and
the log escaped, and a name holding a newline writes no line of its own.

Each test has a state directory of its own (``XDG_STATE_HOME``): the pins of one never meet
another's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from tests.e2e.test_upstream import CHANGING, fake, server_table, write_config
from tests.helpers.harness import mcp_session, server_command, server_env, text_of, wait_until

pytestmark = pytest.mark.e2e

APPROVE = "awf-mcp servers approve fake"


@pytest.fixture
def env() -> dict[str, str]:
    """No plugins, and the state directory (the pins, the approvals) of this test's own."""
    return {"AWF_MCP_NO_PLUGINS": "1", "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}


@pytest.fixture
def markers(tmp_path: Path) -> Path:
    directory = tmp_path / "markers"
    directory.mkdir()
    return directory


def awf(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``awf-mcp ARGS`` with no terminal on stdin."""
    return subprocess.run(
        server_command(*args),
        cwd=cwd,
        env=server_env(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


@pytest.mark.anyio
async def test_a_tool_changed_under_an_approval_is_held_until_the_user_approves_it(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers))
    serve = ("--config", config, "--no-builtins")
    async with mcp_session(*serve, cwd=tmp_path, env=env) as session:
        assert "fake_wait" in await names(session)  # the first run pins what it sees

    (markers / "rug-pull").touch()
    audit = tmp_path / "audit.jsonl"
    async with mcp_session(*serve, "--audit-log", str(audit), cwd=tmp_path, env=env) as session:
        served = await names(session)
        assert "fake_wait" not in served and "fake_audio" in served
        with pytest.raises(MCPError) as refused:
            await session.call_tool("fake_wait", {"seconds": 0})
        assert "held back" in str(refused.value) and APPROVE in str(refused.value)
        assert text_of(await session.call_tool("fake_big", {"size": 3})) == "xxx"  # the rest is served

    held = [json.loads(line) for line in audit.read_text().splitlines() if '"event"' in line]
    assert len(held) == 1, held
    assert held[0]["event"] == "held" and held[0]["server"] == "fake" and held[0]["name"] == "wait"
    assert held[0]["changes"]["annotations"]["destructiveHint"] == [None, True]
    assert held[0]["changes"]["description"]["added"].startswith("<IMPORTANT>Now deletes files")
    assert held[0]["approve"] == APPROVE

    listing = awf("servers", "list", "--json", "--config", config, cwd=tmp_path, env=env)
    (row,) = json.loads(listing.stdout)["servers"]
    assert "fake_wait" not in row["tools"] and [hold["name"] for hold in row["held"]] == ["wait"]
    assert row["approve"] == APPROVE and "destructiveHint unset -> true" in row["held"][0]["summary"]
    doctor = awf("doctor", "--json", "--config", config, cwd=tmp_path, env=env)
    (finding,) = [f for f in json.loads(doctor.stdout)["findings"] if "held" in f["detail"]]
    assert finding["status"] == "warning" and APPROVE in finding["fix"]

    no_terminal = awf("servers", "approve", "fake", "--config", config, cwd=tmp_path, env=env)
    assert no_terminal.returncode == 1 and "rerun with --yes" in no_terminal.stderr
    assert "destructiveHint unset -> true" in no_terminal.stdout  # shown, not approved
    async with mcp_session(*serve, cwd=tmp_path, env=env) as session:
        assert "fake_wait" not in await names(session)

    approved = awf("servers", "approve", "fake", "--yes", "--config", config, cwd=tmp_path, env=env)
    assert approved.returncode == 0, approved.stderr
    assert "Now deletes files" in approved.stdout and "approved 1 of server 'fake'" in approved.stdout
    async with mcp_session(*serve, cwd=tmp_path, env=env) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert (tools["fake_wait"].description or "").startswith("<IMPORTANT>Now deletes files")
        assert text_of(await session.call_tool("fake_wait", {"seconds": 0})) == "waited"


def test_approve_asks_on_a_terminal_and_a_no_approves_nothing(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers))
    assert awf("tools", "list", "--config", config, cwd=tmp_path, env=env).returncode == 0
    (markers / "rug-pull").touch()
    script = (
        "import os, pty, sys\n"
        "pid, fd = pty.fork()\n"
        "if pid == 0:\n"
        "    os.execvp(sys.argv[1], sys.argv[1:])\n"
        "out = b''\n"
        "while b'[y/N]' not in out:\n"
        "    out += os.read(fd, 4096)\n"
        "os.write(fd, sys.stdin.buffer.read())\n"
        "try:\n"
        "    while chunk := os.read(fd, 4096):\n"
        "        out += chunk\n"
        "except OSError:\n"
        "    pass\n"
        "sys.stdout.write(out.decode(errors='replace'))\n"
        "sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
    )
    command = server_command("servers", "approve", "fake", "--config", config)

    def answer(text: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script, *command],
            input=text,
            cwd=tmp_path,
            env=server_env(env),
            capture_output=True,
            text=True,
            timeout=120,
        )

    declined = answer("n\n")
    assert declined.returncode == 1 and "not approved" in declined.stdout
    listed = awf("tools", "list", "--json", "--config", config, cwd=tmp_path, env=env)
    assert "fake_wait" not in {tool["name"] for tool in json.loads(listed.stdout)["tools"]}
    accepted = answer("y\n")
    assert accepted.returncode == 0 and "approved 1 of server 'fake'" in accepted.stdout
    listed = awf("tools", "list", "--json", "--config", config, cwd=tmp_path, env=env)
    assert "fake_wait" in {tool["name"] for tool in json.loads(listed.stdout)["tools"]}


@pytest.mark.anyio
async def test_an_agent_trusting_read_only_tools_never_gets_one_that_changed(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    """``config claude --trust read-only`` allows fake_wait by name; once it changed, it is not served."""
    home = tmp_path / "home"
    home.mkdir()
    env = {**env, "HOME": str(home)}
    config = write_config(tmp_path, fake("fake", "good", markers))
    trusted = awf("config", "claude", "--trust", "read-only", "--config", config, cwd=tmp_path, env=env)
    assert trusted.returncode == 0 and "mcp__awf__fake_wait" in trusted.stdout, trusted.stderr

    (markers / "rug-pull").touch()  # still readOnlyHint, now destructive too, and a new description
    again = awf("config", "claude", "--trust", "read-only", "--config", config, cwd=tmp_path, env=env)
    assert "mcp__awf__fake_wait" not in again.stdout and APPROVE in again.stderr
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=env) as session:
        assert "fake_wait" not in await names(session)
        with pytest.raises(MCPError, match="held back"):
            await session.call_tool("fake_wait", {"seconds": 0})


@pytest.mark.anyio
async def test_a_tool_added_while_serving_is_held_like_a_changed_one(
    tmp_path: Path, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, server_table("chg", sys.executable, [str(CHANGING)]))
    audit = tmp_path / "audit.jsonl"
    async with mcp_session(
        "--config", config, "--no-builtins", "--audit-log", str(audit), cwd=tmp_path, env=env
    ) as session:
        assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}
        assert text_of(await session.call_tool("chg_grow", {"name": "delete_everything"})) == "ok"
        assert wait_until(lambda: '"event": "held"' in audit.read_text(), timeout=10)
        assert await names(session) == {"chg_wait", "chg_grow", "chg_drop"}
        with pytest.raises(MCPError) as refused:
            await session.call_tool("chg_delete_everything", {})
        assert "awf-mcp servers approve chg" in str(refused.value)
    (held,) = [json.loads(line) for line in audit.read_text().splitlines() if '"event"' in line]
    assert held["name"] == "delete_everything" and held["changes"]["new"] is True


@pytest.mark.anyio
async def test_pin_false_serves_a_changed_tool_as_listed(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers, pin=False))
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=env) as session:
        assert "fake_wait" in await names(session)
    (markers / "rug-pull").touch()
    async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=env) as session:
        assert "fake_wait" in await names(session)


RAW = ("\x1b", "\u202e", "\u202c", "\x07")


def test_tools_list_and_servers_list_show_an_upstreams_escapes_escaped(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    (markers / "hostile").touch()
    config = write_config(tmp_path, fake("fake", "good", markers))
    env = {**env, "COLUMNS": "1000"}  # rich wraps nothing
    listed = awf("tools", "list", "--config", config, "--no-builtins", cwd=tmp_path, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "fake_shady" in listed.stdout and "\\x1b[31mred" in listed.stdout and "\\u202eexe" in listed.stdout
    servers = awf("servers", "list", "--config", config, cwd=tmp_path, env=env)
    assert servers.returncode == 0, servers.stderr
    assert "fake_forged\\u202e\\x0aawf-mcp: ERROR: forged line" in servers.stdout
    for output in (listed.stdout, listed.stderr, servers.stdout, servers.stderr):
        assert not any(char in output for char in RAW), repr(output)


def test_doctor_and_servers_list_show_held_tools_with_their_escapes_escaped(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers))
    env = {**env, "COLUMNS": "1000"}
    assert awf("tools", "list", "--config", config, cwd=tmp_path, env=env).returncode == 0
    (markers / "hostile").touch()  # two new tools: held, their descriptions quoted in the summary
    servers = awf("servers", "list", "--config", config, cwd=tmp_path, env=env)
    doctor = awf("doctor", "--config", config, cwd=tmp_path, env=env)
    for output in (servers.stdout, doctor.stdout):
        assert "\\x1b[31mred\\x1b[0m" in output and "\\u202eexe" in output, output
        assert "tool 'forged\\u202e\\x0aawf-mcp: ERROR: forged line'" in output, output
        assert APPROVE in output
    for output in (servers.stdout, servers.stderr, doctor.stdout, doctor.stderr):
        assert not any(char in output for char in RAW), repr(output)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_a_newline_in_an_upstream_tool_name_writes_no_log_line_of_its_own(
    tmp_path: Path, markers: Path, env: dict[str, str], log_format: str
) -> None:
    (markers / "hostile").touch()
    config = write_config(tmp_path, fake("fake", "good", markers))
    server = subprocess.run(
        server_command("serve", "--config", config, "--no-builtins", "--log-format", log_format),
        input="",
        cwd=tmp_path,
        env=server_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = server.stderr.splitlines()
    assert any("forged" in line for line in lines), server.stderr  # the name is logged...
    for line in lines:  # ...inside the line that reports it, escaped
        assert not any(char in line for char in RAW), repr(line)
        if log_format == "json":
            assert json.loads(line)["level"] in ("INFO", "WARNING"), line
        else:
            assert line.startswith(("awf-mcp: INFO: ", "awf-mcp: WARNING: ")), line
    if log_format == "text":
        assert "forged\\u202e\\x0aawf-mcp: ERROR: forged line" in server.stderr


@pytest.mark.anyio
async def test_changed_instructions_are_held_and_the_approved_ones_relayed(
    tmp_path: Path, markers: Path, env: dict[str, str]
) -> None:
    """An upstream's instructions reach the agent's system prompt: a change is a rug pull too."""
    from tests.upstreams.fake_upstream import POISONED_INSTRUCTIONS

    config = write_config(tmp_path, fake("fake", "good", markers))
    serve = ("--config", config, "--no-builtins")

    async def relayed(*extra: str) -> str:
        async with mcp_session(*serve, *extra, cwd=tmp_path, env=env) as session:
            assert session.initialize_result is not None
            return session.initialize_result.instructions or ""

    assert "Use the fake tools with care." in await relayed()  # the first use approves them
    (markers / "instructions-pull").touch()
    audit = tmp_path / "audit.jsonl"
    held_run = await relayed("--audit-log", str(audit))
    assert "Use the fake tools with care." in held_run and "curl evil.example" not in held_run
    events = [json.loads(line) for line in audit.read_text().splitlines() if '"event"' in line]
    assert [(e["event"], e["item"], e["name"]) for e in events] == [("held", "instructions", "instructions")]
    listing = awf("servers", "list", "--json", "--config", config, cwd=tmp_path, env=env)
    (row,) = json.loads(listing.stdout)["servers"]
    assert [hold["item"] for hold in row["held"]] == ["instructions"] and row["approve"] == APPROVE
    assert "curl evil.example" in row["held"][0]["summary"]
    approved = awf("servers", "approve", "fake", "--yes", "--config", config, cwd=tmp_path, env=env)
    assert approved.returncode == 0, approved.stderr
    assert POISONED_INSTRUCTIONS in await relayed()  # approved: relayed as the server gives them
