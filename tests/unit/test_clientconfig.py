"""``awf_mcp.clients.clientconfig``: printed snippets and ``--write`` for Claude Code, Gemini CLI, Codex."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from awf_mcp.clients import clientconfig as cc
from awf_mcp.clients.jsonedit import loads_json
from awf_mcp.errors import UserError
from tests.helpers.harness import server_command, server_env

COMMAND = ["/opt/awf/bin/awf-mcp", "serve", "--root", "/work/repo"]
TOOLS = [("Read", True), ("Write", False), ("Grep", True), ("Glob", True), ("Bash", False)]


def write(client: str, dirs: tuple[Path, Path], **kw: object) -> cc.WriteReport:
    cwd, home = dirs
    options: dict[str, object] = {
        "command": COMMAND,
        "read_only_tools": ["Glob", "Grep", "Read"],
        "trust": None,
        "scope": "project",
        "env": {},
    }
    options.update(kw)
    return cc.write(client, cwd=cwd, home=home, **options)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- command


def test_console_script_is_named_by_its_absolute_path(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "awf-mcp"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    assert cc.server_command(argv0=str(script), executable="/usr/bin/python3", frozen=False) == [
        str(script.resolve())
    ]


def test_python_dash_m_uses_the_interpreter() -> None:
    argv0 = str(Path(cc.__file__).parents[1] / "__main__.py")
    assert cc.server_command(argv0=argv0, executable=sys.executable, frozen=False) == [
        sys.executable,
        "-P",
        "-m",
        "awf_mcp",
    ]


def test_frozen_binary_is_the_executable(tmp_path: Path) -> None:
    binary = tmp_path / "awf-mcp"
    assert cc.server_command(argv0="awf-mcp", executable=str(binary), frozen=True) == [str(binary)]


def test_read_only_tools_come_from_annotations_with_a_fallback() -> None:
    assert cc.read_only_names(TOOLS) == ["Glob", "Grep", "Read"]
    assert cc.read_only_names([("Read", True), ("echo_echo", True)]) == ["Read", "echo_echo"]
    assert cc.read_only_names(None) == ["Glob", "Grep", "Read"]


# --------------------------------------------------------------------------- render


def test_render_claude_has_the_add_line_and_the_mcp_json_entry(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = cc.render(
        "claude", command=COMMAND, read_only_tools=["Read"], trust=None, scope="project", cwd=cwd, home=home
    )
    assert "claude mcp add --scope project awf -- /opt/awf/bin/awf-mcp serve --root /work/repo" in text
    assert '"type": "stdio"' in text and str(cwd / ".mcp.json") in text
    assert "refuse" in text and "--trust read-only" in text


def test_render_json_is_a_generic_snippet(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = cc.render("json", command=COMMAND, read_only_tools=[], trust=None, cwd=cwd, home=home)
    assert json.loads(text) == {
        "mcpServers": {"awf": {"type": "stdio", "command": COMMAND[0], "args": COMMAND[1:]}}
    }


def test_render_codex_table_is_valid_toml(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = cc.render("codex", command=COMMAND, read_only_tools=["Read"], trust="all", cwd=cwd, home=home)
    table = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    data = tomllib.loads(table)
    assert data["mcp_servers"]["awf"] == {
        "command": COMMAND[0],
        "args": COMMAND[1:],
        "required": True,
        "default_tools_approval_mode": "approve",
    }


def test_render_gemini_mentions_folder_trust(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = cc.render("gemini", command=COMMAND, read_only_tools=["Read"], trust="all", cwd=cwd, home=home)
    assert '"trust": true' in text and "folderTrust" in text and "trustedFolders.json" in text


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"client": "vim"}, "unknown client"),
        ({"scope": "global"}, "unknown scope"),
        ({"trust": "some"}, "unknown trust"),
        ({"server_name": "a b"}, "server name"),
    ],
)
def test_bad_choices_are_user_errors(dirs: tuple[Path, Path], kwargs: dict[str, str], needle: str) -> None:
    cwd, home = dirs
    options: dict[str, object] = {"client": "claude", "scope": "project", "trust": None}
    options.update(kwargs)
    client = str(options.pop("client"))
    with pytest.raises(UserError, match=needle):
        cc.render(client, command=COMMAND, read_only_tools=[], cwd=cwd, home=home, **options)  # type: ignore[arg-type]


def test_json_client_cannot_write(dirs: tuple[Path, Path]) -> None:
    with pytest.raises(UserError, match="only prints"):
        write("json", dirs)


# --------------------------------------------------------------------------- Claude Code


def test_claude_project_write_creates_mcp_json(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    report = write("claude", dirs)
    assert report.changed == [cwd / ".mcp.json"] and report.backups == []
    text = (cwd / ".mcp.json").read_text()
    assert json.loads(text) == {
        "mcpServers": {"awf": {"type": "stdio", "command": COMMAND[0], "args": COMMAND[1:]}}
    }
    assert text.startswith('{\n  "mcpServers": {\n    "awf"') and text.endswith("}\n")


def test_claude_write_keeps_other_servers_and_key_order_and_is_idempotent(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    existing = {
        "zeta": 1,
        "mcpServers": {"other": {"command": "other-server", "args": []}, "awf": {"command": "old"}},
        "alpha": {"nested": [1, 2]},
    }
    (cwd / ".mcp.json").write_text(json.dumps(existing, indent=4))
    report = write("claude", dirs)
    assert report.changed == [cwd / ".mcp.json"]
    assert report.backups == [cwd / ".mcp.json.bak"]
    assert json.loads((cwd / ".mcp.json.bak").read_text()) == existing
    data = json.loads((cwd / ".mcp.json").read_text())
    assert list(data) == ["zeta", "mcpServers", "alpha"]
    assert list(data["mcpServers"]) == ["other", "awf"]
    assert data["mcpServers"]["other"] == existing["mcpServers"]["other"]  # type: ignore[index]
    assert data["mcpServers"]["awf"]["command"] == COMMAND[0]
    before = (cwd / ".mcp.json").read_text()
    again = write("claude", dirs)
    assert again.changed == [] and again.unchanged == [cwd / ".mcp.json"] and again.backups == []
    assert (cwd / ".mcp.json").read_text() == before
    assert "nothing changed" in again.summary()


def test_claude_trust_all_allows_the_whole_server(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    settings = cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Bash(npm test)"], "deny": ["WebFetch"]}}))
    write("claude", dirs, trust="all")
    data = json.loads(settings.read_text())
    assert data["permissions"] == {"allow": ["Bash(npm test)", "mcp__awf"], "deny": ["WebFetch"]}
    assert data["enabledMcpjsonServers"] == ["awf"]
    assert write("claude", dirs, trust="all").changed == []


def test_claude_trust_read_only_lists_the_read_only_tools(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    write("claude", dirs, trust="read-only", read_only_tools=cc.read_only_names(TOOLS))
    data = json.loads((cwd / ".claude" / "settings.json").read_text())
    assert data["permissions"]["allow"] == ["mcp__awf__Glob", "mcp__awf__Grep", "mcp__awf__Read"]


def test_claude_user_scope_edits_claude_json_top_level(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    (home / ".claude.json").write_text(json.dumps({"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}}))
    write("claude", dirs, scope="user", trust="all")
    data = json.loads((home / ".claude.json").read_text())
    assert list(data) == ["numStartups", "projects", "mcpServers"]
    assert data["projects"] == {"/x": {"mcpServers": {}}}
    assert data["mcpServers"]["awf"]["args"] == COMMAND[1:]
    user_settings = json.loads((home / ".claude" / "settings.json").read_text())
    assert user_settings == {"permissions": {"allow": ["mcp__awf"]}}


def test_claude_config_dir_is_respected(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    config_dir = tmp_path / "claude-config"
    write("claude", dirs, scope="user", trust="all", env={"CLAUDE_CONFIG_DIR": str(config_dir)})
    assert (config_dir / ".claude.json").exists() and (config_dir / "settings.json").exists()


# --------------------------------------------------------------------------- Gemini CLI


def test_gemini_entry_with_trust_and_other_settings_kept(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    settings = cwd / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps(
            {
                "theme": "GitHub",
                "mcpServers": {
                    "awf": {"command": "old", "env": {"X": "1"}},
                    "other": {"httpUrl": "http://h"},
                },
            }
        )
    )
    write("gemini", dirs, trust="all")
    data = json.loads(settings.read_text())
    assert data["theme"] == "GitHub"
    assert data["mcpServers"]["other"] == {"httpUrl": "http://h"}
    assert data["mcpServers"]["awf"] == {
        "command": COMMAND[0],
        "env": {"X": "1"},
        "args": COMMAND[1:],
        "timeout": cc.GEMINI_TIMEOUT_MS,
        "trust": True,
    }
    assert write("gemini", dirs, trust="all").changed == []
    # Without --trust the entry stops bypassing confirmations.
    write("gemini", dirs)
    assert "trust" not in json.loads(settings.read_text())["mcpServers"]["awf"]


def test_gemini_read_only_uses_tools_allowed(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    write("gemini", dirs, scope="user", trust="read-only", read_only_tools=["Read", "Grep"])
    data = json.loads((home / ".gemini" / "settings.json").read_text())
    assert data["tools"]["allowed"] == ["mcp_awf_Read", "mcp_awf_Grep"]
    assert "trust" not in data["mcpServers"]["awf"]


# --------------------------------------------------------------------------- Codex CLI

CODEX_EXISTING = """\
# my codex settings
model = "gpt-5"   # keep this comment
approval_policy = "on-request"

[mcp_servers.docs]
command = "docs-server"
args = ["--stdio"]

[profiles.fast]
model = "gpt-5-mini"
"""


def test_codex_appends_the_table_and_keeps_the_file_byte_for_byte(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_EXISTING)
    report = write("codex", dirs, scope="user", trust="all")
    assert report.changed == [config] and report.backups == [config.with_name("config.toml.bak")]
    text = config.read_text()
    assert text.startswith(CODEX_EXISTING)
    data = tomllib.loads(text)
    assert data["mcp_servers"]["docs"] == {"command": "docs-server", "args": ["--stdio"]}
    assert data["mcp_servers"]["awf"]["default_tools_approval_mode"] == "approve"
    assert data["profiles"] == {"fast": {"model": "gpt-5-mini"}}
    again = write("codex", dirs, scope="user", trust="all")
    assert again.changed == [] and again.unchanged == [config]
    assert config.read_text() == text


def test_codex_replaces_an_existing_table_and_its_subtables_in_place(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(
        'model = "gpt-5"\n\n'
        "[mcp_servers.awf]\n"
        'command = "/old/awf-mcp"\n'
        'args = ["serve"]\n'
        'env = { A = "1" }\n\n'
        "[mcp_servers.awf.tools.Bash]\n"
        'approval_mode = "approve"\n\n'
        "# the docs server\n"
        "[mcp_servers.docs]\n"
        'command = "docs"\n'
    )
    write("codex", dirs, scope="user", trust="read-only", read_only_tools=["Read"])
    text = config.read_text()
    data = tomllib.loads(text)
    assert data["mcp_servers"]["awf"] == {
        "command": COMMAND[0],
        "args": COMMAND[1:],
        "required": True,
        "tools": {"Read": {"approval_mode": "approve"}},
    }
    assert data["mcp_servers"]["docs"] == {"command": "docs"}
    assert text.startswith('model = "gpt-5"\n\n[mcp_servers.awf]\n')
    assert "# the docs server\n[mcp_servers.docs]" in text
    assert "/old/awf-mcp" not in text and "Bash" not in text


def test_codex_home_is_respected(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    codex_home = tmp_path / "codex-home"
    write("codex", dirs, scope="user", env={"CODEX_HOME": str(codex_home)})
    assert "[mcp_servers.awf]" in (codex_home / "config.toml").read_text()


def test_codex_project_scope_file(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    report = write("codex", dirs)
    assert report.changed == [cwd / ".codex" / "config.toml"]


def test_codex_quoted_header_is_recognised(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    config = cwd / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[ mcp_servers . "awf" ]  # mine\ncommand = "x"\n')
    write("codex", dirs)
    data = tomllib.loads(config.read_text())
    assert data["mcp_servers"]["awf"]["command"] == COMMAND[0]


@pytest.mark.parametrize(
    "original",
    ['# mine\n[mcp_servers]\nawf = { command = "x" }\n', '# mine\nmcp_servers.awf.command = "x"\n'],
)
def test_codex_inline_or_dotted_definition_is_rewritten(dirs: tuple[Path, Path], original: str) -> None:
    cwd, _ = dirs
    config = cwd / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(original)
    write("codex", dirs)
    text = config.read_text()
    assert text.startswith("# mine\n")
    assert tomllib.loads(text)["mcp_servers"]["awf"]["command"] == COMMAND[0]
    assert config.with_name("config.toml.bak").read_text() == original
    assert write("codex", dirs).changed == []


def test_codex_multiline_string_that_looks_like_a_header_is_not_a_header(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    config = cwd / ".codex" / "config.toml"
    config.parent.mkdir()
    original = 'instructions = """\n[mcp_servers.awf]\nnot a table\n"""\n'
    config.write_text(original)
    write("codex", dirs)
    data = tomllib.loads(config.read_text())
    assert data["instructions"] == "[mcp_servers.awf]\nnot a table\n"
    assert data["mcp_servers"]["awf"]["command"] == COMMAND[0]


# --------------------------------------------------------------------------- refusals and backups


@pytest.mark.parametrize(
    ("client", "relative", "content", "needle"),
    [
        ("claude", ".mcp.json", '{"mcpServers": {', "not valid JSON"),
        ("claude", ".mcp.json", "[1, 2]", "does not hold a JSON object"),
        ("claude", ".mcp.json", '{"mcpServers": []}', "'mcpServers' is not a JSON object"),
        ("gemini", ".gemini/settings.json", "{ // comment\n}", "not valid JSON"),
        ("codex", ".codex/config.toml", "model = \n", "not valid TOML"),
    ],
)
def test_unparsable_files_are_refused_untouched(
    dirs: tuple[Path, Path], client: str, relative: str, content: str, needle: str
) -> None:
    cwd, _ = dirs
    path = cwd / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)
    with pytest.raises(UserError, match=needle):
        write(client, dirs, trust="all")
    assert path.read_text() == content
    assert not path.with_name(path.name + ".bak").exists()


def test_nothing_is_written_when_one_of_the_files_is_broken(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    settings = cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken")
    with pytest.raises(UserError, match="not valid JSON"):
        write("claude", dirs, trust="all")
    assert not (cwd / ".mcp.json").exists()


def test_a_second_backup_does_not_overwrite_the_first(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    (cwd / ".mcp.json").write_text('{"a": 1}')
    write("claude", dirs)
    (cwd / ".mcp.json").write_text('{"a": 2}')
    report = write("claude", dirs)
    assert len(report.backups) == 1 and report.backups[0] != cwd / ".mcp.json.bak"
    assert json.loads(report.backups[0].read_text()) == {"a": 2}
    assert json.loads((cwd / ".mcp.json.bak").read_text()) == {"a": 1}


def test_configure_prints_and_writes(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    options: dict[str, Any] = {
        "write_files": True,
        "trust": "read-only",
        "tools": TOOLS,
        "serve_args": ["--root", str(cwd), "--only", "Read"],
        "cwd": cwd,
        "home": home,
        "env": {},
        "base_command": ["/bin/awf-mcp"],
    }
    out = cc.configure("claude", **options)
    assert f"claude mcp add --scope project awf -- /bin/awf-mcp serve --root {cwd} --only Read" in out
    assert f"updated {cwd / '.mcp.json'}" in out
    again = cc.configure("claude", **options)
    assert "already up to date: nothing changed" in again and "updated" not in again


def test_configure_states_each_note_once(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    for client, needle in (("codex", "trusted project"), ("gemini", "gemini trust")):
        out = cc.configure(client, write_files=True, cwd=cwd, home=home, env={}, base_command=["/awf"])
        assert out.lower().count(needle) == 1, out


# --------------------------------------------------------------------------- profiles


def test_every_profile_has_known_scopes_a_known_format_and_its_docs() -> None:
    for profile in cc.PROFILES.values():
        assert profile.format in ("json", "jsonc", "toml")
        assert set(profile.files) <= set(cc.SCOPES), profile.name
        assert set(profile.scopes("darwin")) == set(profile.scopes("linux")), profile.name
        assert profile.name in cc.CLIENTS
        assert not profile.files or profile.docs.startswith("https://"), profile.name


def test_macos_paths_are_the_linux_paths_unless_a_profile_says_otherwise(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    for profile in cc.PROFILES.values():
        for scope in profile.scopes() if profile.macos_files is None else ():
            assert profile.scope_files(scope, "darwin") == profile.scope_files(scope, "linux")
    moved = replace(
        cc.PROFILES["gemini"],
        macos_files={"user": cc.ScopeFiles(cc.FileLocation("home", "Library/Gemini/settings.json"))},
    )
    location = moved.scope_files("user", "darwin").servers
    assert location.resolve(cwd=cwd, home=home, env={}) == home / "Library/Gemini/settings.json"
    assert moved.scope_files("user", "linux").servers.relative == ".gemini/settings.json"


def test_a_new_client_is_one_profile(dirs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """A profile alone gives a client its snippet, its file, its approvals and its notes."""
    cwd, home = dirs
    profile = cc.ClientProfile(
        name="newcli",
        title="New CLI",
        files={
            "project": cc.ScopeFiles(cc.FileLocation("project", ".newcli/mcp.json")),
            "user": cc.ScopeFiles(cc.FileLocation("home", ".newcli/mcp.json", "NEWCLI_HOME", "mcp.json")),
        },
        servers_key=("servers",),
        entry_tail={"enabled": True},
        allow_list=("approved",),
        allow_name=lambda server, tool: f"{server}/{tool or '*'}",
        headless="`newcli run` cannot ask.",
        notes="# {server} is ready.",
    )
    monkeypatch.setitem(cc.PROFILES, "newcli", profile)
    text = cc.render(
        "newcli", command=COMMAND, read_only_tools=["Read"], trust="read-only", cwd=cwd, home=home
    )
    assert f"# New CLI, project scope: add this entry to {cwd / '.newcli' / 'mcp.json'}:" in text
    assert "`newcli run` cannot ask." in text and "# awf is ready." in text
    report = write("newcli", dirs, trust="read-only", read_only_tools=["Read"])
    assert report.changed == [cwd / ".newcli" / "mcp.json"]
    assert json.loads((cwd / ".newcli" / "mcp.json").read_text()) == {
        "servers": {"awf": {"command": COMMAND[0], "args": COMMAND[1:], "enabled": True}},
        "approved": ["awf/Read"],
    }


# --------------------------------------------------------------------------- the CLI, end to end


def run_config(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    env = server_env({"HOME": str(home), "CODEX_HOME": str(home / ".codex")})
    env.pop("CLAUDE_CONFIG_DIR", None)
    return subprocess.run(
        server_command("config", *args),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_cli_writes_vscodes_own_file_keeping_its_comments(tmp_path: Path) -> None:
    """``awf-mcp config vscode --write``, the real command, on VS Code's own JSONC files."""
    data = Path(__file__).resolve().parent.parent / "data" / "vscode"
    cwd, home = tmp_path / "project", tmp_path / "home"
    (cwd / ".vscode").mkdir(parents=True)
    home.mkdir()
    path = cwd / ".vscode" / "mcp.json"
    # VS Code's mcp.json, with a comment and a trailing comma as a user might add them.
    original = (
        (data / "mcp.json")
        .read_text()
        .replace('\t"inputs": []\n', '\t// prompts for secrets\n\t"inputs": [],\n')
    )
    path.write_text(original)
    env = server_env(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".local" / "state"),
            "XDG_DATA_HOME": str(home / ".local" / "share"),
        }
    )
    command = server_command("config", "vscode", "--write", "--only", "Read")
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert f"updated {path}" in done.stdout
    text = path.read_text()
    assert '\t// prompts for secrets\n\t"inputs": [],\n}\n' in text
    assert text.startswith(original.split("\t\t}\n\t},")[0] + '\t\t},\n\t\t"awf": {\n')
    written = loads_json(text, comments=True)
    assert list(written["servers"]) == ["vscode-playwright-mcp", "awf"]
    assert written["servers"]["awf"]["args"][-3:] == ["serve", "--only", "Read"]
    assert path.with_name("mcp.json.bak").read_text() == original

    again = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert again.returncode == 0, again.stderr
    assert "already up to date" in again.stdout and path.read_text() == text


@pytest.mark.e2e
@pytest.mark.anyio
async def test_cli_writes_an_entry_that_starts_a_working_server(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    (cwd / "marker.txt").write_text("configured and served\n")
    done = run_config("claude", "--write", "--trust", "read-only", "--only", "Read", cwd=cwd, home=home)
    assert done.returncode == 0, done.stderr
    assert f"updated {cwd / '.mcp.json'}" in done.stdout

    entry = json.loads((cwd / ".mcp.json").read_text())["mcpServers"]["awf"]
    assert entry["args"][-3:] == ["serve", "--only", "Read"]
    allowed = json.loads((cwd / ".claude" / "settings.json").read_text())["permissions"]["allow"]
    assert "mcp__awf__Read" in allowed and "mcp__awf__Write" not in allowed

    # Start exactly what the client would start, from another directory, and use it.
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], cwd=str(home), env=server_env()
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        assert [t.name for t in listed.tools] == ["Read"]
        # No --root was given: the server's root is the directory it is started in.
        result = await session.call_tool("Read", {"path": str(home / "nothing-here.txt")})
        assert result.is_error


def test_cli_trust_read_only_follows_the_served_tools_annotations(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    done = run_config("gemini", "--write", "--scope", "user", "--trust", "read-only", cwd=cwd, home=home)
    assert done.returncode == 0, done.stderr
    settings = json.loads((home / ".gemini" / "settings.json").read_text())
    listed = subprocess.run(
        server_command("tools", "list", "--json"), cwd=cwd, env=server_env(), capture_output=True, check=True
    )
    read_only = {
        t["name"] for t in json.loads(listed.stdout)["tools"] if t.get("annotations", {}).get("readOnlyHint")
    }
    assert {"Read", "Glob", "Grep"} <= read_only
    assert settings["tools"]["allowed"] == sorted(f"mcp_awf_{name}" for name in read_only)
    assert not (cwd / ".gemini").exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("vim",), "unknown client 'vim'"),
        (("claude", "--scope", "galaxy"), "unknown scope 'galaxy'"),
        (("codex", "--trust", "everything"), "unknown trust level 'everything'"),
        (("json", "--write"), "json"),
    ],
)
def test_cli_bad_options_are_clear_errors(
    dirs: tuple[Path, Path], args: tuple[str, ...], needle: str
) -> None:
    cwd, home = dirs
    done = run_config(*args, cwd=cwd, home=home)
    assert done.returncode != 0
    assert needle in done.stderr and "Traceback" not in done.stderr
    assert list(cwd.iterdir()) == []


def test_cli_refuses_an_unparsable_file_and_leaves_it_alone(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    broken = cwd / ".mcp.json"
    broken.write_text("{not json")
    done = run_config("claude", "--write", cwd=cwd, home=home)
    assert done.returncode != 0 and str(broken) in done.stderr
    assert broken.read_text() == "{not json"
    assert not (cwd / ".mcp.json.bak").exists()


def test_cli_list_names_every_client_with_its_file(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    done = run_config("--list", cwd=cwd, home=home)
    assert done.returncode == 0, done.stderr
    for client in cc.CLIENTS:
        assert any(line.split()[0] == client for line in done.stdout.splitlines()), client
    assert str(cwd / ".vscode" / "mcp.json") in done.stdout
    assert str(home / ".codeium" / "windsurf" / "mcp_config.json") in done.stdout
    assert list(cwd.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ((), "name a client"),
        (("claude", "--replace-native", "--restore-native"), "give one of them"),
        (("cursor", "--write", "--replace-native"), "knows no setting that switches off Cursor"),
        (("windsurf", "--scope", "project"), "Windsurf has no project configuration file"),
    ],
)
def test_cli_native_and_scope_mistakes_are_clear_errors(
    dirs: tuple[Path, Path], args: tuple[str, ...], needle: str
) -> None:
    cwd, home = dirs
    done = run_config(*args, cwd=cwd, home=home)
    assert done.returncode != 0 and needle in done.stderr and "Traceback" not in done.stderr
    assert list(cwd.iterdir()) == []


def test_cli_replace_and_restore_native(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    done = run_config("gemini", "--write", "--replace-native", "--only", "Read", cwd=cwd, home=home)
    assert done.returncode == 0, done.stderr
    settings = cwd / ".gemini" / "settings.json"
    assert "run_shell_command" in json.loads(settings.read_text())["tools"]["exclude"]
    done = run_config("gemini", "--restore-native", cwd=cwd, home=home)
    assert done.returncode == 0, done.stderr
    assert "removed what awf-mcp added" in done.stdout
    assert "tools" not in json.loads(settings.read_text())


# --------------------------------------------------------------------------- links


@pytest.mark.parametrize(
    ("client", "planted", "written"),
    [
        ("claude", ".mcp.json", ".mcp.json"),
        ("claude", ".claude", ".claude/settings.json"),
        ("gemini", ".gemini/settings.json", ".gemini/settings.json"),
        ("codex", ".codex", ".codex/config.toml"),
        ("vscode", ".vscode/mcp.json", ".vscode/mcp.json"),
    ],
)
def test_a_project_file_or_directory_that_is_a_link_is_refused(
    dirs: tuple[Path, Path], client: str, planted: str, written: str
) -> None:
    cwd, home = dirs
    outside = home / "outside"
    outside.mkdir()
    (outside / "config.json").write_text('{"auths": {"registry": "s3cret"}}')
    (cwd / planted).parent.mkdir(parents=True, exist_ok=True)
    (cwd / planted).symlink_to(outside / "config.json" if planted == written else outside)
    trust = "read-only" if cc.PROFILES[client].can_trust else None
    with pytest.raises(UserError, match="is a symbolic link"):
        write(client, dirs, trust=trust)
    assert sorted(p.name for p in outside.iterdir()) == ["config.json"]
    assert (outside / "config.json").read_text() == '{"auths": {"registry": "s3cret"}}'
    assert [p for p in cwd.rglob("*") if p.name.endswith(".bak")] == []


def test_replace_native_in_a_linked_project_file_is_refused(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    (home / "settings.json").write_text("{}")
    (cwd / ".claude").mkdir()
    (cwd / ".claude" / "settings.json").symlink_to(home / "settings.json")
    with pytest.raises(UserError, match="is a symbolic link"):
        cc.replace_native_tools("claude", scope="project", cwd=cwd, home=home, env={})
    assert (home / "settings.json").read_text() == "{}"


def test_a_user_file_that_is_a_link_is_written_through_and_stays_a_link(dirs: tuple[Path, Path]) -> None:
    _, home = dirs
    (home / "dotfiles").mkdir()
    (home / "dotfiles" / "claude.json").write_text('{"numStartups": 3}\n')
    (home / ".claude.json").symlink_to(home / "dotfiles" / "claude.json")
    write("claude", dirs, scope="user")
    assert (home / ".claude.json").is_symlink()
    data = json.loads((home / "dotfiles" / "claude.json").read_text())
    assert data["numStartups"] == 3 and data["mcpServers"]["awf"]["command"] == COMMAND[0]
    assert json.loads((home / ".claude.json.bak").read_text()) == {"numStartups": 3}


# --------------------------------------------------------------------------- a team gateway (--url)

GATEWAY = cc.Gateway("https://mcp.example.com/mcp", "AWF_GATEWAY_TOKEN")


def test_remote_entries_name_the_variable_never_a_token(dirs: tuple[Path, Path]) -> None:
    cwd, _ = dirs
    write("claude", dirs, command=GATEWAY, trust="all")
    write("gemini", dirs, command=GATEWAY, trust="all")
    write("codex", dirs, command=GATEWAY, trust="all")
    claude = json.loads((cwd / ".mcp.json").read_text())["mcpServers"]["awf"]
    gemini = json.loads((cwd / ".gemini" / "settings.json").read_text())["mcpServers"]["awf"]
    codex = tomllib.loads((cwd / ".codex" / "config.toml").read_text())["mcp_servers"]["awf"]
    assert claude == {
        "type": "http",
        "url": GATEWAY.url,
        "headers": {"Authorization": "Bearer ${AWF_GATEWAY_TOKEN}"},
    }
    assert gemini == {
        "httpUrl": GATEWAY.url,
        "headers": {"Authorization": "Bearer ${AWF_GATEWAY_TOKEN}"},
        "timeout": cc.GEMINI_TIMEOUT_MS,
        "trust": True,
    }
    assert codex == {
        "url": GATEWAY.url,
        "bearer_token_env_var": "AWF_GATEWAY_TOKEN",
        "required": True,
        "default_tools_approval_mode": "approve",
    }
    assert json.loads((cwd / ".claude" / "settings.json").read_text())["permissions"]["allow"] == ["mcp__awf"]


def test_a_local_entry_turned_remote_and_back_keeps_only_one_way_and_the_users_keys(
    dirs: tuple[Path, Path],
) -> None:
    cwd, _ = dirs
    write("claude", dirs)
    path = cwd / ".mcp.json"
    data = json.loads(path.read_text())
    data["mcpServers"]["awf"]["description"] = "the team's"
    path.write_text(json.dumps(data))
    write("claude", dirs, command=GATEWAY)
    remote = json.loads(path.read_text())["mcpServers"]["awf"]
    assert "command" not in remote and "args" not in remote and remote["url"] == GATEWAY.url
    assert remote["description"] == "the team's"
    write("claude", dirs, command=cc.Gateway(GATEWAY.url))  # signing in: no header any more
    assert "headers" not in json.loads(path.read_text())["mcpServers"]["awf"]
    write("claude", dirs)
    local = json.loads(path.read_text())["mcpServers"]["awf"]
    assert local["command"] == COMMAND[0] and "url" not in local and local["description"] == "the team's"


@pytest.mark.parametrize(
    ("url", "variable", "needle"),
    [
        ("http://10.0.0.5/mcp", None, "in clear over the network: use https"),
        ("ftp://gateway/mcp", None, "is not an http(s) URL"),
        ("https:///mcp", None, "is not an http(s) URL"),
        ("https://gateway/mcp", "1TOKEN", "is not an environment variable's name"),
        ("https://gateway/mcp", "TOKEN; rm -rf ~", "is not an environment variable's name"),
        (None, "TOKEN", "give the gateway's --url too"),
    ],
)
def test_unusable_gateways_are_refused(url: str | None, variable: str | None, needle: str) -> None:
    with pytest.raises(UserError, match=re.escape(needle)):
        cc.parse_gateway(url, variable)


def test_plain_http_is_allowed_to_loopback_only() -> None:
    for url in ("http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp"):
        assert cc.parse_gateway(url, "T").url == url


def test_cli_remote_entry_printed_written_and_refused_where_unknown(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    args = ("--url", GATEWAY.url, "--token-env", "AWF_GATEWAY_TOKEN")
    printed = run_config("codex", *args, cwd=cwd, home=home)
    assert printed.returncode == 0, printed.stderr
    assert 'bearer_token_env_var = "AWF_GATEWAY_TOKEN"' in printed.stdout
    assert f"awf-mcp config codex --write --url {GATEWAY.url} --token-env AWF_GATEWAY_TOKEN" in printed.stdout
    assert list(cwd.iterdir()) == []
    written = run_config("claude", "--write", *args, cwd=cwd, home=home)
    assert written.returncode == 0, written.stderr
    assert json.loads((cwd / ".mcp.json").read_text())["mcpServers"]["awf"]["url"] == GATEWAY.url
    for refused, needle in [
        (("cursor", *args), "cannot write a remote entry for Cursor"),
        (("claude", *args, "--root", str(cwd)), "these options are for a server the client starts"),
        (("claude", "--token-env", "T"), "give the gateway's --url too"),
    ]:
        done = run_config(*refused, cwd=cwd, home=home)
        assert done.returncode != 0 and needle in done.stderr and "Traceback" not in done.stderr, done.stderr
