"""Hostile repositories against the real ``awf-mcp config --write`` and ``servers import --write``.

Each test lays out a repository the way an attacker would (links planted at a file's or
its backup's name, entries awf-mcp cannot serve), points HOME at a directory of its own,
and runs the command as a user would, as a subprocess. What must hold: nothing outside
the repository is read, copied or written; a user's own dotfile link is written through
and kept; every refusal is one line, never a traceback.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers.harness import server_command, server_env, write_approved

pytestmark = pytest.mark.e2e

ATTACKER = '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "echo pwned"]}}}'


def awf(*args: str, repo: Path, home: Path) -> subprocess.CompletedProcess[str]:
    """``awf-mcp ARGS`` run in REPO (the ``dirs`` fixture's project) with HOME as the user's home."""
    env = server_env({"HOME": str(home), "AWF_MCP_NO_PLUGINS": "1"})
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"):
        env.pop(name, None)
    return subprocess.run(
        server_command(*args), cwd=repo, env=env, capture_output=True, text=True, timeout=120
    )


def one_error_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr
    assert lines[0].startswith("awf-mcp: error: ")
    return lines[0]


def test_a_planted_dangling_backup_link_does_not_create_the_users_shell_profile(
    dirs: tuple[Path, Path],
) -> None:
    repo, home = dirs
    (repo / ".mcp.json").write_text(ATTACKER)
    (repo / ".mcp.json.bak").symlink_to("../home/.bash_profile")
    done = awf("config", "claude", "--write", repo=repo, home=home)
    assert done.returncode == 0, done.stderr
    assert not os.path.lexists(home / ".bash_profile")
    assert (repo / ".mcp.json.bak").is_symlink()
    [backup] = [p for p in repo.glob(".mcp.json.*.bak") if not p.is_symlink()]
    assert backup.read_text() == ATTACKER and f"backed up the previous version to {backup}" in done.stdout


def test_a_project_file_linked_to_the_users_credentials_is_refused(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    docker = home / ".docker" / "config.json"
    docker.parent.mkdir()
    docker.write_text('{"auths": {"registry.example": {"auth": "c2VjcmV0"}}}')
    (repo / ".mcp.json").symlink_to(docker)
    done = awf("config", "claude", "--write", repo=repo, home=home)
    assert done.returncode == 1
    assert "is a symbolic link" in one_error_line(done)
    assert docker.read_text() == '{"auths": {"registry.example": {"auth": "c2VjcmV0"}}}'
    assert sorted(p.name for p in repo.iterdir()) == [".mcp.json"]
    assert sorted(p.name for p in docker.parent.iterdir()) == ["config.json"]


def test_a_project_settings_directory_linked_elsewhere_is_refused(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    (home / ".claude").mkdir()
    (repo / ".claude").symlink_to(home / ".claude")
    done = awf("config", "claude", "--write", "--trust", "read-only", repo=repo, home=home)
    assert done.returncode == 1 and "is a symbolic link" in one_error_line(done)
    assert list((home / ".claude").iterdir()) == [] and not (repo / ".mcp.json").exists()


def test_the_users_dotfile_link_is_written_through_and_kept(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "claude.json").write_text('{"numStartups": 7}\n')
    (home / ".claude.json").symlink_to("dotfiles/claude.json")
    done = awf("config", "claude", "--write", "--scope", "user", repo=repo, home=home)
    assert done.returncode == 0, done.stderr
    assert os.readlink(home / ".claude.json") == "dotfiles/claude.json"
    data = json.loads((home / "dotfiles" / "claude.json").read_text())
    assert data["numStartups"] == 7 and "serve" in data["mcpServers"]["awf"]["args"]
    assert json.loads((home / ".claude.json.bak").read_text()) == {"numStartups": 7}


def test_import_skips_entries_serve_cannot_read_and_the_result_loads(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    (repo / ".mcp.json").write_text(
        '{"mcpServers": {'
        '"nulls": {"command": "x", "args": [1, null, {"a": "b"}]},'
        '"del": {"command": "awf-test-no-such-command", "args": ["a\\u007fb"]},'
        '"surrogate": {"command": "a\\ud800"}}}'
    )
    done = awf("servers", "import", "claude", "--write", repo=repo, home=home)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "skipped 'nulls': args in [servers.nulls]" in done.stdout
    assert "skipped 'surrogate': its settings cannot be written as TOML" in done.stdout
    assert sorted(p.name for p in repo.iterdir() if ".bak" in p.name) == [".mcp.json.bak"]
    left = json.loads((repo / ".mcp.json").read_text())["mcpServers"]
    assert set(left) == {"nulls", "surrogate", "awf"}
    # What was written loads as serve loads it: the one imported server is listed (and fails
    # to start, so servers list says so in its exit code).
    listed = awf("servers", "list", "--json", repo=repo, home=home)
    rows = json.loads(listed.stdout)["servers"]
    assert [(row["name"], row["args"], row["state"]) for row in rows] == [("del", ["a\x7fb"], "failed")]
    assert listed.returncode == 1


def test_an_import_into_a_linked_awf_config_is_refused_and_swaps_nothing(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    (repo / ".mcp.json").write_text('{"mcpServers": {"time": {"command": "uvx"}}}')
    (repo / "awf-mcp.toml").symlink_to("../home/.bashrc")
    done = awf("servers", "import", "claude", "--write", repo=repo, home=home)
    assert done.returncode == 1 and "awf-mcp.toml is a symbolic link" in one_error_line(done)
    assert not os.path.lexists(home / ".bashrc")
    (home / ".bashrc").write_text('x = "the user\'s own"\n')
    done = awf("servers", "import", "claude", "--write", repo=repo, home=home)
    assert done.returncode == 1 and "awf-mcp.toml is a symbolic link" in one_error_line(done)
    assert (home / ".bashrc").read_text() == 'x = "the user\'s own"\n'
    assert sorted(p.name for p in repo.iterdir()) == [".mcp.json", "awf-mcp.toml"]
    assert (repo / ".mcp.json").read_text() == '{"mcpServers": {"time": {"command": "uvx"}}}'


def test_config_without_a_client_is_a_usage_error(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    done = awf("config", repo=repo, home=home)
    assert done.returncode == 2 and "awf-mcp config --list" in done.stderr


def test_import_and_config_name_the_same_read_only_tools(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    (repo / ".mcp.json").write_text('{"mcpServers": {"t": {"command": "awf-test-no-such-command"}}}')
    hint = re.compile(r"--trust read-only adds mcp__awf__<tool> for (.*)")
    config = hint.search(awf("config", "claude", repo=repo, home=home).stdout)
    done = awf("servers", "import", "claude", "--write", repo=repo, home=home)
    imported = hint.search(done.stdout)
    assert config and imported, done.stdout
    assert imported.group(1) == config.group(1)
    assert {"Read", "Grep", "Glob", "BashOutput"} <= set(config.group(1).split(", "))


def test_servers_list_fails_when_an_enabled_server_failed(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    write_approved(repo / "awf-mcp.toml", '[servers.gone]\ncommand = "awf-test-no-such-command"\n')
    for extra in ((), ("--json",)):
        done = awf("servers", "list", *extra, repo=repo, home=home)
        assert done.returncode == 1 and "gone" in done.stdout, done.stderr
    write_approved(
        repo / "awf-mcp.toml", '[servers.gone]\ncommand = "awf-test-no-such-command"\nenabled = false\n'
    )
    done = awf("servers", "list", repo=repo, home=home)
    assert done.returncode == 0 and "disabled" in done.stdout, done.stderr


def test_a_fifo_planted_at_the_agent_file_is_refused_not_waited_on(dirs: tuple[Path, Path]) -> None:
    repo, home = dirs
    os.mkfifo(repo / ".mcp.json")
    for command in (("config", "claude", "--write"), ("servers", "import", "claude", "--write")):
        done = awf(*command, repo=repo, home=home)
        assert done.returncode == 1 and "not a regular file" in one_error_line(done)
