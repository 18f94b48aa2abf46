"""The clients beyond the three agents (Cursor, VS Code, Claude Desktop, Windsurf, Zed, opencode):
each documented format written, read back and rewritten idempotently; paths per scope and
platform; ``--list``; and what ``awf-mcp doctor`` reads (:func:`clientconfig.read_entry`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.errors import UserError
from awf_mcp.ops import clientconfig as cc
from awf_mcp.ops.editors import loads_json

COMMAND = ["/opt/awf/bin/awf-mcp", "serve", "--root", "/work/repo"]
SPLIT = {"command": COMMAND[0], "args": COMMAND[1:]}

#: client, scope, file (Linux, relative to the project or home), the documented file content.
FORMATS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("cursor", "project", ".cursor/mcp.json", {"mcpServers": {"awf": SPLIT}}),
    ("cursor", "user", ".cursor/mcp.json", {"mcpServers": {"awf": SPLIT}}),
    ("vscode", "project", ".vscode/mcp.json", {"servers": {"awf": {"type": "stdio", **SPLIT}}}),
    ("vscode", "user", ".config/Code/User/mcp.json", {"servers": {"awf": {"type": "stdio", **SPLIT}}}),
    ("claude-desktop", "user", ".config/Claude/claude_desktop_config.json", {"mcpServers": {"awf": SPLIT}}),
    ("windsurf", "user", ".codeium/windsurf/mcp_config.json", {"mcpServers": {"awf": SPLIT}}),
    ("zed", "project", ".zed/settings.json", {"context_servers": {"awf": {"source": "custom", **SPLIT}}}),
    ("zed", "user", ".config/zed/settings.json", {"context_servers": {"awf": {"source": "custom", **SPLIT}}}),
    (
        "opencode",
        "project",
        "opencode.json",
        {"mcp": {"awf": {"type": "local", "command": COMMAND, "enabled": True}}},
    ),
    (
        "opencode",
        "user",
        ".config/opencode/opencode.json",
        {"mcp": {"awf": {"type": "local", "command": COMMAND, "enabled": True}}},
    ),
]


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    cwd, home = tmp_path / "project", tmp_path / "home"
    cwd.mkdir()
    home.mkdir()
    return cwd, home


def write(client: str, dirs: tuple[Path, Path], **kw: Any) -> cc.WriteReport:
    cwd, home = dirs
    options: dict[str, Any] = {"command": COMMAND, "read_only_tools": ["Read"], "trust": None, "env": {}}
    options.update(kw)
    return cc.write(client, cwd=cwd, home=home, **options)


@pytest.mark.parametrize(("client", "scope", "relative", "expected"), FORMATS)
def test_each_client_format_round_trips(
    dirs: tuple[Path, Path], client: str, scope: str, relative: str, expected: dict[str, Any]
) -> None:
    cwd, home = dirs
    path = (cwd if scope == "project" else home) / relative
    report = write(client, dirs, scope=scope)
    assert report.changed == [path]
    assert json.loads(path.read_text()) == expected
    # The entry is read back as the command it runs ...
    found = cc.read_entry(client, scope, cwd=cwd, home=home, env={})
    assert (found.path, found.present, found.command, found.problem) == (path, True, COMMAND, "")
    # ... and writing again changes nothing.
    again = write(client, dirs, scope=scope)
    assert again.changed == [] and again.unchanged == [path]


@pytest.mark.parametrize(("client", "scope", "relative", "expected"), FORMATS)
def test_each_client_keeps_other_servers_and_settings(
    dirs: tuple[Path, Path], client: str, scope: str, relative: str, expected: dict[str, Any]
) -> None:
    cwd, home = dirs
    path = (cwd if scope == "project" else home) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    (servers_key,) = expected
    other = {
        "theme": "dark",
        servers_key: {"other": {"command": "x"}, "awf": {"command": "old", "env": {"A": "1"}}},
    }
    path.write_text(json.dumps(other))
    write(client, dirs, scope=scope)
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data[servers_key]["other"] == {"command": "x"}
    assert data[servers_key]["awf"] == {**expected[servers_key]["awf"], "env": {"A": "1"}}
    assert json.loads(path.with_name(path.name + ".bak").read_text()) == other


@pytest.mark.parametrize("client", ["vscode", "zed", "opencode"])
def test_files_with_comments_are_read_and_the_original_is_kept_in_the_backup(
    dirs: tuple[Path, Path], client: str
) -> None:
    cwd, home = dirs
    path = cc.target_files(client, "project", cwd=cwd, home=home, env={})["servers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = '// my settings\n{\n  "theme": "dark", /* inline */\n  "url": "http://x//y",\n}\n'
    path.write_text(original)
    write(client, dirs, scope="project")
    data = json.loads(path.read_text())
    assert data["theme"] == "dark" and data["url"] == "http://x//y"
    assert path.with_name(path.name + ".bak").read_text() == original
    assert write(client, dirs, scope="project").changed == []


def test_comments_are_refused_where_the_client_does_not_allow_them(dirs: tuple[Path, Path]) -> None:
    cwd = dirs[0]
    path = cwd / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {}} // no\n')
    with pytest.raises(UserError, match="not valid JSON"):
        write("cursor", dirs, scope="project")
    assert path.read_text() == '{"mcpServers": {}} // no\n'


@pytest.mark.parametrize(
    ("client", "relative"),
    [
        ("vscode", "Library/Application Support/Code/User/mcp.json"),
        ("claude-desktop", "Library/Application Support/Claude/claude_desktop_config.json"),
        ("zed", ".config/zed/settings.json"),
        ("windsurf", ".codeium/windsurf/mcp_config.json"),
        ("cursor", ".cursor/mcp.json"),
        ("opencode", ".config/opencode/opencode.json"),
    ],
)
def test_macos_user_paths(dirs: tuple[Path, Path], client: str, relative: str) -> None:
    cwd, home = dirs
    files = cc.target_files(client, "user", cwd=cwd, home=home, env={}, platform="darwin")
    assert files["servers"] == home / relative


@pytest.mark.parametrize(
    ("client", "relative"),
    [
        ("vscode", "Code/User/mcp.json"),
        ("claude-desktop", "Claude/claude_desktop_config.json"),
        ("zed", "zed/settings.json"),
        ("opencode", "opencode/opencode.json"),
    ],
)
def test_xdg_config_home_moves_the_linux_user_files(
    dirs: tuple[Path, Path], tmp_path: Path, client: str, relative: str
) -> None:
    cwd, home = dirs
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    files = cc.target_files(client, "user", cwd=cwd, home=home, env=env, platform="linux")
    assert files["servers"] == tmp_path / "xdg" / relative


@pytest.mark.parametrize("client", ["claude-desktop", "windsurf"])
def test_user_only_clients_default_to_user_and_refuse_project(dirs: tuple[Path, Path], client: str) -> None:
    cwd, home = dirs
    assert cc.PROFILES[client].default_scope == "user"
    report = write(client, dirs, scope=None)
    assert report.changed and report.changed[0].is_relative_to(home)
    with pytest.raises(UserError, match="no project configuration file; use --scope user"):
        write(client, dirs, scope="project")
    text = cc.render(client, command=COMMAND, read_only_tools=[], trust=None, cwd=cwd, home=home, env={})
    assert "user scope" in text and "--scope user" in text


@pytest.mark.parametrize("client", ["cursor", "vscode", "claude-desktop", "windsurf", "zed", "opencode"])
def test_trust_is_refused_where_the_client_has_no_approval_setting(
    dirs: tuple[Path, Path], client: str
) -> None:
    with pytest.raises(UserError, match="--trust is not available"):
        write(client, dirs, trust="all")
    cwd, home = dirs
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []


@pytest.mark.parametrize(("client", "scope", "relative", "expected"), FORMATS)
def test_render_prints_the_exact_snippet_and_cites_the_docs(
    dirs: tuple[Path, Path], client: str, scope: str, relative: str, expected: dict[str, Any]
) -> None:
    cwd, home = dirs
    text = cc.render(
        client, command=COMMAND, read_only_tools=[], trust=None, scope=scope, cwd=cwd, home=home, env={}
    )
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    assert loads_json(body) == expected
    assert str((cwd if scope == "project" else home) / relative) in text
    assert cc.PROFILES[client].docs in text


def test_list_names_every_client_with_its_files(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = cc.list_clients(cwd=cwd, home=home, env={}, platform="linux")
    for profile in cc.profiles():
        assert any(line.startswith(profile.name + " ") for line in text.splitlines()), profile.name
    assert f"{cwd / '.vscode' / 'mcp.json'}" in text
    assert f"{home / '.codeium' / 'windsurf' / 'mcp_config.json'}" in text
    assert f"(approvals: {cwd / '.claude' / 'settings.json'})" in text
    mac = cc.list_clients(cwd=cwd, home=home, env={}, platform="darwin")
    assert "Library/Application Support/Claude/claude_desktop_config.json" in mac


# --------------------------------------------------------------------------- read_entry (for doctor)


def test_read_entry_says_what_is_missing_or_broken(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    missing = cc.read_entry("cursor", "project", cwd=cwd, home=home, env={})
    assert (missing.exists, missing.present, missing.problem) == (False, False, "")
    path = cwd / ".cursor" / "mcp.json"
    path.parent.mkdir()
    path.write_text('{"mcpServers": {"other": {"command": "x"}}}')
    absent = cc.read_entry("cursor", "project", cwd=cwd, home=home, env={})
    assert (absent.exists, absent.present, absent.problem) == (True, False, "")
    path.write_text("{broken")
    broken = cc.read_entry("cursor", "project", cwd=cwd, home=home, env={})
    assert not broken.present and str(path) in broken.problem and "not valid JSON" in broken.problem
    path.write_text('{"mcpServers": {"awf": {"url": "http://localhost"}}}')
    remote = cc.read_entry("cursor", "project", cwd=cwd, home=home, env={})
    assert not remote.present and "runs no local command" in remote.problem


def test_installed_entries_covers_every_client_and_scope(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    write("codex", dirs, scope="project")
    write("zed", dirs, scope="user")
    found = cc.installed_entries(cwd=cwd, home=home, env={}, platform="linux")
    expected = {(p.name, scope) for p in cc.profiles() for scope in p.scopes("linux")}
    assert {(e.client, e.scope) for e in found} == expected
    present = {(e.client, e.scope): e.command for e in found if e.present}
    assert present == {("codex", "project"): COMMAND, ("zed", "user"): COMMAND}
