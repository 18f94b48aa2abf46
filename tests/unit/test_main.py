"""The entry point: ``serve`` is parsed without Typer, every other command goes through it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.helpers.harness import server_command, server_env

SERVE_OPTIONS = (
    "--root", "--no-builtins", "--only", "--exclude", "--config", "--strict", "--log-level",
    "--log-format", "--log-file", "--audit-log", "--debug", "--call-timeout", "--transport",
    "--host", "--port", "--token", "--no-token",
)  # fmt: skip


def awf(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        cwd=cwd,
        env=server_env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_serve_help_names_every_option_in_the_style_of_every_other_command(tmp_path: Path, flag: str) -> None:
    done = awf("serve", flag, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Usage: awf-mcp serve [OPTIONS]" in done.stdout
    missing = [option for option in SERVE_OPTIONS if option not in done.stdout]
    assert missing == []
    tools = awf("tools", "list", "--help", cwd=tmp_path)
    assert "╭─ Options" in done.stdout and "╭─ Options" in tools.stdout  # one look for every help
    assert "--log-format" in done.stdout and "text|json" in done.stdout


def test_the_top_level_help_lists_serve(tmp_path: Path) -> None:
    done = awf("--help", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "serve" in done.stdout


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("--bogus",), 2, "unrecognized arguments: --bogus"),
        (("--port", "eighty"), 2, "invalid int value: 'eighty'"),
        (("--transport", "carrier-pigeon"), 2, "invalid choice: 'carrier-pigeon'"),
        (("--log-level", "LOUD"), 1, "unknown log level 'LOUD'"),
        (("--root", "does-not-exist"), 1, "does-not-exist"),
        (("--transport", "http", "--host", "0.0.0.0"), 1, "pass --token TOKEN"),
        (("--transport", "http", "--host", "0.0.0.0", "--no-token"), 1, "pass --token TOKEN"),
        (("--transport", "http", "--no-token", "--token", "t0ken"), 1, "--no-token contradicts"),
    ],
)
def test_bad_serve_options_are_one_clear_line(
    tmp_path: Path, args: tuple[str, ...], code: int, needle: str
) -> None:
    done = awf("serve", *args, cwd=tmp_path)
    assert done.returncode == code, done.stderr
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert done.stdout == ""
