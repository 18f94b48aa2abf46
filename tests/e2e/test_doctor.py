"""``awf-mcp doctor --json`` end to end: a subprocess with HOME in a temporary directory.

The client configuration there is written by ``awf-mcp config`` itself (pointed at the
real server's command, or at a command that is gone); doctor must start the real server
through it and see its tools, or report the broken entry and exit non-zero.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.clients import clientconfig
from tests.helpers.harness import server_command, server_env

pytestmark = pytest.mark.e2e

CLIENT = next(name for name, profile in clientconfig.PROFILES.items() if profile.files)
_FOREIGN = (
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "XDG_DATA_HOME",
    "AWF_MCP_PLUGIN_PATH",
    "AWF_MCP_SEARCH_ENGINE",
)


def doctor(home: Path, project: Path) -> tuple[int, dict[str, Any]]:
    env = server_env({"HOME": str(home)})
    for variable in _FOREIGN:
        env.pop(variable, None)
    done = subprocess.run(
        server_command("doctor", "--json"),
        cwd=project,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.stdout.strip(), done.stderr
    return done.returncode, json.loads(done.stdout)


def configure(home: Path, project: Path, command: list[str]) -> Path:
    clientconfig.write(
        CLIENT,
        command=command,
        read_only_tools=["Read"],
        trust=None,
        scope="user",
        cwd=project,
        home=home,
        env={},
    )
    return clientconfig.target_files(CLIENT, "user", cwd=project, home=home, env={})["servers"]


def test_doctor_starts_the_configured_server_and_sees_its_tools(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    path = configure(home, project, server_command("serve"))
    code, report = doctor(home, project)
    [entry] = [f for f in report["findings"] if f["check"] == "clients" and f["data"].get("client") == CLIENT]
    assert entry["status"] == "ok", entry
    assert entry["data"]["path"] == str(path) and "answers tools/list" in entry["detail"]
    assert {"Read", "Write", "Edit", "Bash", "Glob", "Grep"} <= set(entry["data"]["tools"])
    assert code == 0 and report["ok"] is True, [f for f in report["findings"] if f["status"] == "error"]
    checks = {f["check"] for f in report["findings"]}
    assert {"configuration", "clients", "plugins", "tools", "roots", "search", "plugin-directories"} <= checks


def test_doctor_exits_non_zero_when_the_entrys_command_is_gone(dirs: tuple[Path, Path]) -> None:
    project, home = dirs
    gone = str(home / "old-venv" / "bin" / "awf-mcp")
    configure(home, project, [gone, "serve"])
    code, report = doctor(home, project)
    [entry] = [f for f in report["findings"] if f["check"] == "clients" and f["data"].get("client") == CLIENT]
    assert entry["status"] == "error" and gone in entry["detail"]
    assert f"awf-mcp config {CLIENT} --write --scope user" in entry["fix"]
    assert code == 1 and report["ok"] is False and report["counts"]["error"] >= 1
