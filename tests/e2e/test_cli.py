"""The command line's conventions, as a user who knows git, pip, uv and gh meets them.

Help: ``-h`` works everywhere; no Python type labels (``<bool>``, ``<list[str]>``,
``{name}``); ``serve --help`` looks like every other command's. Shell completion.
``--version`` names what awf-mcp runs on. ``tools call`` takes ``--only``/``--exclude``
like ``tools list``, suggests the tool or argument a typo meant, and ``serve`` started on a
terminal says what it waits for.
"""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.e2e

HELP_SCREENS = [
    [],
    ["serve"],
    ["tools"],
    ["tools", "list"],
    ["tools", "call"],
    ["config"],
    ["plugins"],
    ["plugins", "install"],
    ["plugins", "init"],
    ["servers", "list"],
    ["doctor"],
]


def awf(*args: str, cwd: Path | None = None, **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args),
        cwd=cwd,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1", "COLUMNS": "200", "NO_COLOR": "1", **extra}),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize("command", HELP_SCREENS, ids=lambda c: " ".join(c) or "awf-mcp")
def test_every_help_answers_h_and_shows_no_python_type_labels(command: list[str], tmp_path: Path) -> None:
    short, long = awf(*command, "-h", cwd=tmp_path), awf(*command, "--help", cwd=tmp_path)
    assert short.returncode == 0 and long.returncode == 0, short.stderr + long.stderr
    assert short.stdout == long.stdout
    assert "Usage: awf-mcp" in long.stdout
    labels = re.findall(r"<(?:bool|str|int|float|list\[[a-z]+\])>|\{[a-z_]+\}", long.stdout)
    assert labels == []


def test_arguments_and_options_are_named_in_capitals(tmp_path: Path) -> None:
    done = awf("plugins", "install", "--help", cwd=tmp_path)
    assert "Usage: awf-mcp plugins install [OPTIONS] SPEC" in done.stdout
    assert re.search(r"--find-links\s+URL\|DIR", done.stdout)
    call = awf("tools", "call", "--help", cwd=tmp_path)
    assert "Usage: awf-mcp tools call [OPTIONS] NAME [ARGUMENTS]" in call.stdout


def test_shell_completion_completes_commands(tmp_path: Path) -> None:
    done = awf(
        cwd=tmp_path, _AWF_MCP_COMPLETE="complete_bash", COMP_WORDS="awf-mcp plugins in", COMP_CWORD="2"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["init", "install"]
    # Typer names the shell from the process tree; its switch for tests takes the name instead.
    script = awf("--show-completion", "bash", cwd=tmp_path, _TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION="1")
    assert script.returncode == 0 and "_AWF_MCP_COMPLETE" in script.stdout


def test_version_names_the_sdk_python_and_the_install(tmp_path: Path) -> None:
    import awf_mcp

    done = awf("--version", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"awf-mcp {awf_mcp.__version__}"  # alone on the first line, for scripts
    assert re.search(r"^MCP Python SDK \(mcp\) \d+\.\d+", done.stdout, re.M)
    assert f"Python {sys.version.split()[0]}" in done.stdout
    assert f"installed in {Path(awf_mcp.__file__).parent}" in done.stdout or os.environ.get("AWF_MCP_BINARY")


def test_tools_call_takes_only_and_exclude_like_tools_list(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("text\n")
    excluded = awf("tools", "call", "Read", '{"path": "a.txt"}', "--exclude", "Read", cwd=tmp_path)
    assert excluded.returncode == 1 and "unknown tool 'Read'" in excluded.stderr
    other = awf("tools", "call", "Read", '{"path": "a.txt"}', "--only", "Glob", cwd=tmp_path)
    assert other.returncode == 1
    kept = awf("tools", "call", "Read", '{"path": "a.txt"}', "--only", "Re*", "--json", cwd=tmp_path)
    assert kept.returncode == 0, kept.stderr
    assert json.loads(kept.stdout)["isError"] is False


def test_a_mistyped_tool_gets_the_name_it_meant(tmp_path: Path) -> None:
    done = awf("tools", "call", "Reed", "{}", cwd=tmp_path)
    assert done.returncode == 1
    assert "unknown tool 'Reed'; did you mean 'Read'?" in done.stderr


def test_a_mistyped_argument_is_named_beside_the_missing_one(tmp_path: Path) -> None:
    done = awf("tools", "call", "Read", '{"pathh": "a.txt"}', cwd=tmp_path)
    assert done.returncode == 3
    text = " ".join(done.stdout.split())
    assert "'path' is a required property" in text
    assert "unknown argument 'pathh' (did you mean 'path'?)" in text


def test_serve_on_a_terminal_says_it_waits_for_an_mcp_client(tmp_path: Path) -> None:
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        server_command("serve"),
        cwd=tmp_path,
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1"}),
    )
    os.close(terminal)
    try:
        time.sleep(0.5)
        os.write(controller, b"\x04")  # Ctrl-D: end of input on a terminal
        out, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
        os.close(controller)
    assert proc.returncode == 0
    assert out == b""
    assert "waiting for an MCP client on stdin" in err.decode()
    assert "awf-mcp config claude" in err.decode()


def test_serve_from_an_agent_says_nothing_of_the_kind(tmp_path: Path) -> None:
    done = subprocess.run(
        server_command("serve"),
        cwd=tmp_path,
        input="",
        capture_output=True,
        text=True,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1"}),
        timeout=30,
    )
    assert done.returncode == 0 and "waiting for an MCP client" not in done.stderr


OFFERING_PLUGIN = """
from awf_mcp import hookimpl, prompt, resource, tool


@tool
def notes_count() -> str:
    \"\"\"How many notes there are.\"\"\"
    return "2"


@prompt
def notes_summarize(topic: str) -> str:
    \"\"\"Summarize the notes on a topic.

    Args:
        topic: What the notes are about.
    \"\"\"
    return f"Summarize the notes on {topic}."


@resource("notes://all")
def all_notes() -> str:
    return "one, two"


@resource("notes://by-topic/{topic}")
def notes_on(topic: str) -> str:
    return topic


@hookimpl
def awf_mcp_register_tools(plugin):
    plugin.register(notes_count)


@hookimpl
def awf_mcp_register_prompts(plugin):
    plugin.register(notes_summarize)


@hookimpl
def awf_mcp_register_resources(plugin):
    plugin.register(all_notes)
    plugin.register(notes_on)
"""


def test_plugins_list_shows_each_plugins_prompts_and_resources_beside_its_tools(tmp_path: Path) -> None:
    from tests.helpers.distributions import make_distribution

    plugins = make_distribution(
        tmp_path / "plugins",
        dist="awf-plugin-notes",
        plugin="notes",
        module="awf_notes",
        source=OFFERING_PLUGIN,
    )
    env = {"AWF_MCP_PLUGIN_PATH": str(plugins), "AWF_MCP_PLUGINS": "notes", "AWF_MCP_NO_PLUGINS": ""}
    listed = awf("plugins", "list", "--json", cwd=tmp_path, **env)
    assert listed.returncode == 0, listed.stderr
    [notes] = [p for p in json.loads(listed.stdout)["plugins"] if p["name"] == "notes"]
    assert notes["tools"] == ["notes_count"] and notes["prompts"] == ["notes_summarize"]
    assert notes["resources"] == ["notes://all"] and notes["templates"] == ["notes://by-topic/{topic}"]
    table = awf("plugins", "list", cwd=tmp_path, COLUMNS="400", **env)
    assert table.returncode == 0, table.stderr
    [row] = [line for line in table.stdout.splitlines() if "notes_count" in line]
    assert "notes_summarize" in row and "notes://all, notes://by-topic/{topic}" in row


PIPED_LISTINGS = [
    (("tools", "list"), ["name", "source", "description"], "BashOutput", "an exited job with a non-zero"),
    (("plugins", "list"), ["name", "distribution", "version", "status"], "notes", "notes_count"),
    (("prompts", "list"), ["name"], "notes_summarize", "plugin:notes"),
    (("resources", "list"), ["uri"], "notes://all", "plugin:notes"),
    (("servers", "list"), ["server", "transport", "state", "tools", "held"], "fake", "fake_progress"),
]


@pytest.mark.parametrize(("command", "header", "name", "value"), PIPED_LISTINGS, ids=lambda v: str(v))
def test_a_listing_in_a_pipe_prints_whole_values_one_row_a_line(
    tmp_path: Path, command: tuple[str, ...], header: list[str], name: str, value: str
) -> None:
    """At 80 columns in a pipe, a listing is tab-separated, a row a line, nothing cut with '…'."""
    from tests.helpers.distributions import make_distribution

    plugins = make_distribution(
        tmp_path / "plugins",
        dist="awf-plugin-notes",
        plugin="notes",
        module="awf_notes",
        source=OFFERING_PLUGIN,
    )
    fake = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"
    config = tmp_path / "awf.toml"  # the user's own: outside the working directory
    config.write_text(f"[servers.fake]\ncommand = {sys.executable!r}\nargs = [{str(fake)!r}]\n")
    extra = ("--config", str(config)) if command[0] == "servers" else ()
    env = {"AWF_MCP_PLUGIN_PATH": str(plugins), "AWF_MCP_PLUGINS": "notes,testkit", "AWF_MCP_NO_PLUGINS": ""}
    (tmp_path / "work").mkdir()
    done = awf(*command, *extra, cwd=tmp_path / "work", COLUMNS="80", **env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split("\t")[: len(header)] == header, lines[0]
    assert "…" not in done.stdout and "│" not in done.stdout
    width = len(lines[0].split("\t"))
    assert all(len(line.split("\t")) == width for line in lines), lines
    [row] = [line for line in lines[1:] if line.split("\t")[0] == name]
    assert value.lower() in row.lower(), row
