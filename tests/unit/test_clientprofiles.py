"""The clients beyond the three agents (Cursor, VS Code, Claude Desktop, Windsurf, Zed, opencode):
each documented format written, read back and rewritten idempotently; paths per scope and
platform; ``--list``; and what ``awf-mcp doctor`` reads (:func:`clientconfig.read_entry`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.clients import clientconfig as cc
from awf_mcp.clients.jsonedit import loads_json
from awf_mcp.errors import UserError

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
def test_files_with_comments_keep_them_and_the_original_is_kept_in_the_backup(
    dirs: tuple[Path, Path], client: str
) -> None:
    cwd, home = dirs
    path = cc.target_files(client, "project", cwd=cwd, home=home, env={})["servers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    original = '// my settings\n{\n  "theme": "dark", /* inline */\n  "url": "http://x//y",\n}\n'
    path.write_text(original)
    write(client, dirs, scope="project")
    text = path.read_text()
    # Only the new entry is inserted (after the last member, its trailing comma kept).
    head = '// my settings\n{\n  "theme": "dark", /* inline */\n  "url": "http://x//y",\n'
    assert text.startswith(head) and text.endswith("  },\n}\n")
    data = loads_json(text, comments=True)
    assert data["theme"] == "dark" and data["url"] == "http://x//y"
    assert path.with_name(path.name + ".bak").read_text() == original
    assert write(client, dirs, scope="project").changed == []
    assert path.read_text() == text


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


# --------------------------------------------------------------------------- read_servers (files as they are)


def server_file(dirs: tuple[Path, Path], client: str, scope: str, content: str) -> cc.ServerFile:
    """CONTENT written as CLIENT's SCOPE server file, read back by :func:`clientconfig.read_servers`."""
    cwd, home = dirs
    path = cc.target_files(client, scope, cwd=cwd, home=home, env={}, platform="linux")["servers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode())
    return cc.read_servers(client, path, scopes=(scope,))


@pytest.mark.parametrize(("client", "scope", "relative", "expected"), FORMATS)
def test_read_servers_finds_the_entry_config_writes_in_each_client_format(
    dirs: tuple[Path, Path], client: str, scope: str, relative: str, expected: dict[str, Any]
) -> None:
    cwd, home = dirs
    write(client, dirs, scope=scope)
    path = (cwd if scope == "project" else home) / relative
    found = cc.read_servers(client, path, scopes=(scope,))
    assert (found.exists, found.problem, found.scopes) == (True, "", (scope,))
    [entry] = found.servers
    assert (entry.name, entry.argv, entry.url, entry.disabled, entry.is_awf) == (
        "awf",
        COMMAND,
        "",
        False,
        True,
    )


def test_read_servers_lists_every_entry_of_codex_toml(dirs: tuple[Path, Path]) -> None:
    found = server_file(
        dirs,
        "codex",
        "project",
        '# mine\n[mcp_servers.git]\ncommand = "uvx"\nargs = ["mcp-server-git"]\n'
        'env = { TOKEN = "s3cret" }\n\n'
        '[mcp_servers.remote]\nurl = "https://x.invalid/mcp"\nenabled = false\n',
    )
    git, remote = found.servers
    assert (git.name, git.argv, git.env_keys, git.is_awf) == (
        "git",
        ["uvx", "mcp-server-git"],
        ["TOKEN"],
        False,
    )
    assert (remote.argv, remote.url, remote.disabled) == (None, "https://x.invalid/mcp", True)
    assert found.awf_servers == []


def test_read_servers_reads_json_with_comments_and_trailing_commas_in_every_json_client(
    dirs: tuple[Path, Path],
) -> None:
    # Gemini CLI's settings are "json" for writing, yet what it reads may carry comments.
    text = '{\n  // servers\n  "mcpServers": {"a": {"command": "x", /* c */ "args": ["/*", "http://y//z",],},},\n}\n'
    found = server_file(dirs, "gemini", "project", text)
    assert found.problem == ""
    assert [(e.name, e.argv) for e in found.servers] == [("a", ["x", "/*", "http://y//z"])]


def test_read_servers_reads_disabled_and_http_entries(dirs: tuple[Path, Path]) -> None:
    found = server_file(
        dirs,
        "cursor",
        "project",
        json.dumps(
            {
                "mcpServers": {
                    "off": {"command": "awf-mcp", "args": ["serve"], "disabled": True},
                    "also-off": {"command": ["awf-mcp", "serve"], "enabled": False},
                    "on": {"command": "uvx", "args": ["mcp-server-time"], "enabled": True},
                    "remote": {"type": "http", "url": "http://127.0.0.1:8765/mcp"},
                    "gemini-http": {"httpUrl": "http://h/mcp"},
                    "windsurf-http": {"serverUrl": "http://w/mcp"},
                }
            }
        ),
    )
    by_name = {entry.name: entry for entry in found.servers}
    assert [by_name[n].disabled for n in ("off", "also-off", "on")] == [True, True, False]
    assert [by_name[n].url for n in ("remote", "gemini-http", "windsurf-http")] == [
        "http://127.0.0.1:8765/mcp",
        "http://h/mcp",
        "http://w/mcp",
    ]
    assert by_name["remote"].argv is None and not by_name["remote"].is_awf


def test_read_servers_finds_awfs_entry_by_its_command_under_any_name(dirs: tuple[Path, Path]) -> None:
    found = server_file(
        dirs,
        "opencode",
        "project",
        json.dumps(
            {
                "mcp": {
                    "tools": {"type": "local", "command": ["/opt/bin/awf-mcp", "serve", "--root", "/r"]},
                    "py": {"type": "local", "command": ["python3", "-m", "awf_mcp", "serve"]},
                    "win": {"type": "local", "command": ["C:\\awf\\awf-mcp.exe", "serve"]},
                    "listing": {"type": "local", "command": ["awf-mcp", "tools", "list"]},
                    "git": {"type": "local", "command": ["uvx", "mcp-server-git", "serve"]},
                    "named": {"type": "local", "command": ["anything"]},
                }
            }
        ),
    )
    assert [entry.name for entry in found.awf_servers] == ["tools", "py", "win"]
    named = cc.read_servers("opencode", found.path, awf_name="named")
    assert [entry.name for entry in named.awf_servers] == ["tools", "py", "win", "named"]


@pytest.mark.parametrize(
    ("entry", "argv"),
    [
        ({"command": "awf-mcp", "args": ["serve", "--root", "/r"]}, ["awf-mcp", "serve", "--root", "/r"]),
        ({"command": ["awf-mcp", "serve"]}, ["awf-mcp", "serve"]),
        ({"command": {"path": "awf-mcp", "args": ["serve"]}}, ["awf-mcp", "serve"]),
        ({"command": "awf-mcp", "args": ["--port", 8]}, ["awf-mcp", "--port", "8"]),
        ({"url": "http://127.0.0.1:8765/mcp"}, None),
        ({"command": "awf-mcp", "args": "serve"}, None),
        ({"command": ""}, None),
        ({"command": []}, None),
    ],
)
def test_entry_commands_are_read_in_every_shape_clients_write(
    entry: dict[str, Any], argv: list[str] | None
) -> None:
    assert cc.ServerEntry.from_table("x", entry, awf_name="awf").argv == argv


def test_an_entrys_env_is_read_from_env_or_environment_and_keeps_strings_only() -> None:
    entry = cc.ServerEntry.from_table(
        "x", {"command": "y", "env": {"B": "2", "A": "1", "N": 3}}, awf_name="awf"
    )
    assert entry.env == {"B": "2", "A": "1"} and entry.env_keys == ["A", "B"]
    opencode = cc.ServerEntry.from_table("x", {"command": ["y"], "environment": {"T": "t"}}, awf_name="awf")
    assert opencode.env == {"T": "t"}


@pytest.mark.parametrize(
    ("client", "content", "problem"),
    [
        ("cursor", '{"mcpServers": ', "is not valid JSON (Expecting value at line 1 column 16)"),
        ("vscode", "[1, 2]", "does not hold a JSON object"),
        ("claude", '{"mcpServers": []}', "has a 'mcpServers' that is not a table of servers"),
        ("codex", "[mcp_servers.awf\n", "is not valid TOML"),
        ("zed", "\udcff", "is not UTF-8 text"),
    ],
)
def test_a_malformed_file_is_a_problem_not_an_exception(
    dirs: tuple[Path, Path], client: str, content: str, problem: str
) -> None:
    cwd, home = dirs
    path = cc.target_files(client, "project", cwd=cwd, home=home, env={})["servers"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    found = cc.read_servers(client, path)
    assert found.exists and found.servers == () and found.problem.startswith(problem)


def test_a_missing_or_blank_file_has_no_servers_and_no_problem(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    missing = cc.read_servers("cursor", cwd / "nowhere.json")
    assert (missing.exists, missing.servers, missing.problem) == (False, (), "")
    blank = server_file(dirs, "codex", "project", "\n")
    assert (blank.exists, blank.servers, blank.problem) == (True, (), "")
    garbage_entries = server_file(
        dirs, "cursor", "project", '{"mcpServers": {"a": 1, "b": {"command": "x"}}}'
    )
    assert [entry.name for entry in garbage_entries.servers] == ["b"]


def test_server_files_reads_each_clients_file_once_with_every_scope_it_serves(
    dirs: tuple[Path, Path],
) -> None:
    home = dirs[1]
    write("cursor", dirs, scope="user")
    # With the project directory at home, Cursor's project and user files are one file.
    found = cc.server_files(cwd=home, home=home, env={}, platform="linux")
    expected = [(p.name, scope) for p in cc.profiles() for scope in p.scopes("linux")]
    assert sorted((f.client, s) for f in found for s in f.scopes) == sorted(expected)
    [cursor] = [f for f in found if f.client == "cursor"]
    assert cursor.scopes == ("project", "user") and [e.name for e in cursor.awf_servers] == ["awf"]
    assert all(not f.exists for f in found if f.client != "cursor")


def test_read_entry_finds_awfs_entry_by_its_command_when_it_has_another_name(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    server_file(
        dirs, "cursor", "project", json.dumps({"mcpServers": {"other": {"command": "x"}, "tools": SPLIT}})
    )
    found = cc.read_entry("cursor", "project", cwd=cwd, home=home, env={})
    assert (found.present, found.name, found.command) == (True, "tools", COMMAND)
