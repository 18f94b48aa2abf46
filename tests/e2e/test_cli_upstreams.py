"""The one-shot commands start only the upstream servers they need, and say so on stderr.

Two upstream servers are configured, each behind a wrapper that appends a line to its own
file when it starts, so a test sees exactly which ones a command started: none for a
built-in's ``tools call`` or for ``config`` (which only prints), one for a call to that
server's tool, and the one a ``[rename]`` takes a tool from.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.test_upstream import FAKE, server_table, write_config
from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.e2e

SERVERS = ("alpha", "beta")


@pytest.fixture
def configured(tmp_path: Path) -> tuple[Path, str]:
    """A config with two fake upstream servers that record each start in ``<name>.started``."""
    tables = [
        server_table(
            name,
            "sh",
            [
                "-c",
                'echo started >> "$0"; exec "$@"',
                str(tmp_path / f"{name}.started"),
                sys.executable,
                str(FAKE),
                "good",
            ],
        )
        for name in SERVERS
    ]
    tables.append('[rename]\n"server:beta/beta_big" = "alpha_huge"\n')
    return tmp_path, write_config(tmp_path, *tables)


def run(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        cwd=directory,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1"}),
        capture_output=True,
        text=True,
        timeout=60,
    )


def started(directory: Path) -> list[str]:
    return [name for name in SERVERS if (directory / f"{name}.started").exists()]


def test_calling_a_builtin_starts_no_upstream_server(configured: tuple[Path, str]) -> None:
    directory, config = configured
    (directory / "notes.txt").write_text("hello\n")
    result = run(directory, "tools", "call", "Read", '{"path": "notes.txt"}', "--config", config)
    assert result.returncode == 0, result.stderr
    assert "hello" in result.stdout
    assert started(directory) == []
    assert "starting" not in result.stderr


def test_calling_a_servers_tool_starts_that_server_alone_and_says_so(configured: tuple[Path, str]) -> None:
    directory, config = configured
    result = run(directory, "tools", "call", "alpha_wait", '{"seconds": 0}', "--config", config)
    assert result.returncode == 0, result.stderr
    assert started(directory) == ["alpha"]
    assert "awf-mcp: starting 1 upstream server (alpha)" in result.stderr


def test_a_renamed_tool_starts_the_server_it_comes_from(configured: tuple[Path, str]) -> None:
    directory, config = configured
    result = run(directory, "tools", "call", "alpha_huge", '{"size": 10}', "--json", "--config", config)
    assert result.returncode == 0, result.stderr
    assert sorted(started(directory)) == ["alpha", "beta"]
    assert json.loads(result.stdout)["isError"] is False


def test_config_only_prints_and_starts_no_upstream_server(configured: tuple[Path, str]) -> None:
    directory, config = configured
    result = run(directory, "config", "claude", "--config", config)
    assert result.returncode == 0, result.stderr
    assert '"serve"' in result.stdout
    assert started(directory) == []


def test_tools_list_starts_every_server_and_says_so(configured: tuple[Path, str]) -> None:
    directory, config = configured
    result = run(directory, "tools", "list", "--json", "--config", config)
    assert result.returncode == 0, result.stderr
    names = {tool["name"] for tool in json.loads(result.stdout)["tools"]}
    assert {"alpha_wait", "beta_wait", "alpha_huge"} <= names
    assert sorted(started(directory)) == ["alpha", "beta"]
    assert "awf-mcp: starting 2 upstream servers (alpha, beta)" in result.stderr


def test_servers_list_and_doctor_say_what_they_are_doing(configured: tuple[Path, str]) -> None:
    directory, config = configured
    listed = run(directory, "servers", "list", "--config", config)
    assert "awf-mcp: starting 2 upstream servers (alpha, beta)" in listed.stderr
    checked = run(directory, "doctor", "--config", config)
    assert checked.stderr.startswith("awf-mcp: checking the clients' awf entries")
