"""Hostile upstreams that must not take awf-mcp down with them, end to end through ``awf-mcp serve``.

Each drives the real server as a subprocess with tests/upstreams/fake_upstream.py configured to
be hostile: tools whose definitions take megabytes, megabytes of ``instructions``, a tool
listed twice, a tool that takes a built-in's name, a ``[rename]`` of a server that never starts,
and a flood of large progress notifications while the agent does not read. Each time the rest
is served, and what was left out is said on stderr (and in ``servers list``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.core.upstream import MAX_INSTRUCTIONS_BYTES, MAX_TOOL_DEFINITION_BYTES
from tests.e2e.test_upstream import NO_PLUGINS, fake, markers, servers_list, write_config  # noqa: F401  (the fixture)
from tests.helpers.harness import RawServer, wait_until

pytestmark = pytest.mark.e2e

SIX_MB = 6_000_000


def served_tools(config: str, cwd: Path) -> tuple[dict[str, Any], str]:
    """The tools ``serve`` lists with ``config`` (by name), and what it wrote on stderr."""
    with RawServer("--config", config, env=NO_PLUGINS, cwd=cwd) as server:
        server.initialize()
        listed = server.request("tools/list", timeout=30)["result"]["tools"]
        return {tool["name"]: tool for tool in listed}, server.stderr()


def test_two_tools_of_6_mb_are_left_out_and_every_other_tool_is_listed(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers, env={"FAKE_HUGE": f"2:{SIX_MB}"}))
    names, errors = served_tools(config, tmp_path)
    assert {"Read", "Bash", "fake_wait", "fake_audio"} <= set(names)
    assert not any(name.startswith("fake_huge") for name in names)
    for page in (1, 2):
        assert (
            f"server 'fake': tool 'huge{page}' is left out: its definition takes 6,000,0" in errors
            and f"over the {MAX_TOOL_DEFINITION_BYTES:,} awf-mcp serves of one tool" in errors
        )

    done = servers_list(config, tmp_path, NO_PLUGINS)
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)["servers"]
    assert row["state"] == "running" and "fake_wait" in row["tools"]
    assert [sentence.split(":")[0] for sentence in row["left_out"]] == [
        "tool 'huge1' is left out",
        "tool 'huge2' is left out",
    ]


def test_two_servers_with_6_mb_of_instructions_leave_them_out_and_initialize_answers(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    huge = {"FAKE_INSTRUCTIONS_BYTES": str(SIX_MB)}
    config = write_config(
        tmp_path,
        fake("one", "good", markers, env=huge),
        fake("two", "good", markers, env=huge),
        fake("calm", "good", markers),
    )
    with RawServer("--config", config, env=NO_PLUGINS, cwd=tmp_path) as server:
        reply = server.initialize()
        instructions = reply["result"]["instructions"]
        assert "Use the fake tools with care." in instructions and "iiii" not in instructions
        assert len(instructions.encode()) < 100_000
        names = {tool["name"] for tool in server.request("tools/list")["result"]["tools"]}
        assert {"Read", "one_wait", "two_wait", "calm_wait"} <= names
        errors = server.stderr()
    for name in ("one", "two"):
        assert (
            f"server '{name}': its instructions are left out: they take {SIX_MB:,} bytes, over the "
            f"{MAX_INSTRUCTIONS_BYTES:,} awf-mcp relays of one server" in errors
        )


def test_a_tool_listed_twice_is_served_once(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    config = write_config(tmp_path, fake("fake", "good", markers, env={"FAKE_DUPLICATE": "wait"}))
    with RawServer("--config", config, env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        names = [tool["name"] for tool in server.request("tools/list")["result"]["tools"]]
        errors = server.stderr()
    assert names.count("fake_wait") == 1 and "Read" in names
    assert "server 'fake': tool 'wait' is listed twice: the second is left out" in errors


def test_an_upstream_tool_taking_a_built_ins_name_gives_way_with_the_rename_line(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    config = write_config(
        tmp_path, fake("fake", "good", markers), '[rename]\n"server:fake/fake_wait" = "Read"\n'
    )
    tools, errors = served_tools(config, tmp_path)
    assert "fake_audio" in tools and "fake_wait" not in tools
    assert tools["Read"]["description"] != "Sleep."  # the built-in kept its name
    assert "server 'fake': tool 'wait' is left out: its name 'Read' is already taken by builtin" in errors
    assert 'add to awf-mcp.toml under [rename]: "server:fake/fake_wait" = "fake_wait"' in errors


def test_the_suggested_rename_line_of_a_server_that_hangs_at_start_up_is_not_fatal(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    config = write_config(
        tmp_path,
        fake("hangs", "silent", markers, startup_timeout_seconds=1),
        fake("fake", "good", markers),
        '[rename]\n"server:hangs/hangs_bad.name" = "hangs_bad_name"\n',
    )
    names, errors = served_tools(config, tmp_path)
    assert {"Read", "fake_wait"} <= set(names)
    assert "server 'hangs' not served: it did not list its tools within 1 s" in errors
    assert "rename of 'server:hangs/hangs_bad.name' not applied: no server serves that tool now" in errors


def test_progress_the_agent_does_not_read_is_coalesced_and_the_latest_arrives(
    tmp_path: Path,
    markers: Path,  # noqa: F811  (the imported fixture)
) -> None:
    count, size = 300, 100_000
    config = write_config(tmp_path, fake("fake", "good", markers))
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
        server.initialize()
        server.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tools/call",
                "params": {
                    "name": "fake_progress",
                    "arguments": {"count": count, "size": size},
                    "_meta": {"progressToken": "p"},
                },
            }
        )
        # The agent reads nothing until the upstream has sent every notification.
        assert wait_until(lambda: (markers / "progress-sent").exists(), timeout=60)
        received: list[float] = []
        while True:
            message = server.receive(timeout=30)
            if message.get("id") == 7:
                break
            if message.get("method") == "notifications/progress":
                received.append(message["params"]["progress"])
        assert message["result"]["content"][0]["text"] == f"sent {count}"
    assert received == sorted(received) and received[-1] == count  # in order, the latest kept
    assert len(received) < count // 2, f"{len(received)} of {count} notifications were queued"
