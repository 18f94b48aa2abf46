"""A new user's first hour, as they would live it: a fresh clone, the README's command, the journeys.

A fresh ``git clone`` of this repository goes into a temporary directory; the README's
first command (parsed out of README.md, so that this test breaks when the README's
command does) runs there exactly as written, with nothing activated and nothing of this
test run's environment (no ``PYTHONPATH``, no virtualenv). Then the journeys the README
describes, with the ``awf-mcp`` that command installed, in an empty project directory:
the tools an agent gets (the eight built-ins, nothing a test installed), help, a client's
configuration, a new plugin, the version. The binary build is CI's (``.ci/run``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
BUILTINS = ["Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"]


def readme_command(readme: str, starts: str) -> str:
    """The one-line shell command of a ``sh`` block in README.md that starts with ``starts``."""
    commands = [
        block.strip() for block in re.findall(r"```sh\n(.*?)```", readme, re.S) if block.startswith(starts)
    ]
    assert len(commands) == 1, f"README.md should have one sh block starting with {starts!r}"
    return commands[0]


@dataclass
class Newcomer:
    clone: Path
    project: Path
    env: dict[str, str]

    def awf(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.clone / ".venv" / "bin" / "awf-mcp"), *args],
            cwd=self.project,
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Newcomer]:
    if shutil.which("git") is None:
        pytest.fail("git is not installed: the first-hour test clones the repository")
    base = tmp_path_factory.mktemp("first-hour")
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"} and not key.startswith("AWF_MCP_")
    }
    env["XDG_DATA_HOME"] = str(base / "data")  # no plugin directory of the real user
    clone = base / "awf-mcp"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True, timeout=120, env=env)
    command = readme_command((clone / "README.md").read_text(), "python3 -m venv")
    done = subprocess.run(
        ["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"README command 1 failed: {command}\n{done.stdout}\n{done.stderr}"
    listed = done.stdout[done.stdout.index("name\tsource\tdescription") :].splitlines()[1:]
    assert [line.split("\t")[0] for line in listed] == BUILTINS  # in a pipe, one tool a line
    project = base / "project"
    project.mkdir()
    yield Newcomer(clone, project, env)


def test_the_agent_gets_exactly_the_eight_built_ins(newcomer: Newcomer) -> None:
    done = newcomer.awf("tools", "list", "--json")
    assert done.returncode == 0, done.stderr
    tools = json.loads(done.stdout)["tools"]
    assert [tool["name"] for tool in tools] == BUILTINS
    assert {tool["source"] for tool in tools} == {"builtin"}


def test_help_answers_both_ways(newcomer: Newcomer) -> None:
    long, short = newcomer.awf("--help"), newcomer.awf("-h")
    assert long.returncode == 0 and short.returncode == 0, long.stderr + short.stderr
    assert long.stdout == short.stdout
    assert "Usage: awf-mcp" in long.stdout and "plugins" in long.stdout and "<bool>" not in long.stdout


def test_config_claude_prints_an_entry_that_starts_this_install(newcomer: Newcomer) -> None:
    done = newcomer.awf("config", "claude")
    assert done.returncode == 0, done.stderr
    assert str(newcomer.clone / ".venv" / "bin" / "awf-mcp") in done.stdout
    assert '"serve"' in done.stdout
    assert not (newcomer.project / ".mcp.json").exists()  # printing writes nothing


def test_plugins_init_writes_a_plugin_and_names_this_installs_pip(newcomer: Newcomer) -> None:
    done = newcomer.awf("plugins", "init", "demo")
    assert done.returncode == 0, done.stderr
    created = newcomer.project / "awf-plugin-demo"
    assert (created / "pyproject.toml").is_file()
    python = newcomer.clone / ".venv" / "bin" / "python"
    assert f"next: {python}" in done.stderr and f"-m pip install -e {created}" in done.stderr
    refused = newcomer.awf("plugins", "init", "awf-plugin-other")
    assert refused.returncode == 1 and "did you mean 'other'?" in refused.stderr


def test_version_names_the_install(newcomer: Newcomer) -> None:
    done = newcomer.awf("--version")
    assert done.returncode == 0, done.stderr
    assert re.match(r"awf-mcp \d+\.\d+", done.stdout)
    assert "MCP Python SDK (mcp)" in done.stdout
    assert f"installed in {newcomer.clone / '.venv'}" in done.stdout  # the normal install, not editable
