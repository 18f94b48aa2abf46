"""The AWF proxy JSON of the seed, kept outside the project as AWF users keep it, for every command.

``{"plugin_tools": [{"plugin": "echo", "expose": ["echo"]}]}`` in ``../cfg.json``, named with
``--config ../cfg.json`` from inside the project: every command that accepts ``--config`` loads
it, and the ones that list or serve tools give exactly ``echo_echo`` beside the built-ins. The
``echo`` example plugin offers no prompts, which is what once made the prompt merge refuse it
(``UNKNOWN_PLUGIN ... installed plugins: none``); the test plugin, which offers prompts, hid that.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import pytest

from tests.helpers.harness import mcp_session, server_command, server_env, text_of

pytestmark = pytest.mark.e2e

SEED = {"plugin_tools": [{"plugin": "echo", "expose": ["echo"]}]}
BUILTINS = {"Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "cfg.json").write_text(json.dumps(SEED))
    inside = tmp_path / "proj"
    inside.mkdir()
    return inside


def cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(*args, "--config", "../cfg.json"),
        capture_output=True,
        text=True,
        cwd=project,
        env=server_env(),
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_serve_loads_the_seed_config_from_outside_the_project(project: Path) -> None:
    async def drive() -> tuple[set[str], str]:
        async with mcp_session("--config", "../cfg.json", cwd=project) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            echoed = await session.call_tool("echo_echo", {"text": "seed"})
            return names, text_of(echoed)

    names, echoed = anyio.run(drive)
    assert names == BUILTINS | {"echo_echo"}
    assert "seed" in echoed


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (("tools", "list", "--json"), "echo_echo"),
        (("tools", "call", "echo_echo", '{"text": "seed-call"}'), "seed-call"),
        (("prompts", "list"), ""),
        (("resources", "list"), ""),
        (("servers", "list"), ""),
        (("plugins", "list"), "echo"),
        (("doctor", "--json"), "echo_echo"),
    ],
)
def test_every_command_taking_config_loads_the_seed_config(
    project: Path, command: tuple[str, ...], expect: str
) -> None:
    done = cli(project, *command)
    said = done.stdout + done.stderr
    assert "UNKNOWN_PLUGIN" not in said and "MCP_PROXY" not in said, said
    assert done.returncode in (0, 1) if command[0] == "doctor" else done.returncode == 0, said
    assert expect in done.stdout, said
    if command[:2] == ("tools", "list"):
        listed = {tool["name"] for tool in json.loads(done.stdout)["tools"]}
        assert listed == BUILTINS | {"echo_echo"}


def test_a_plugin_that_is_not_installed_is_named_with_the_way_to_install_it(tmp_path: Path) -> None:
    (tmp_path / "cfg.json").write_text(json.dumps({"plugin_tools": [{"plugin": "nosuch", "expose": ["x"]}]}))
    (tmp_path / "proj").mkdir()
    done = cli(tmp_path / "proj", "tools", "list")
    assert done.returncode == 1
    assert "USER.MCP_PROXY.UNKNOWN_PLUGIN" in done.stderr and "'nosuch'" in done.stderr
    assert "awf-mcp plugins install" in done.stderr and "awf-plugin-echo" in done.stderr
