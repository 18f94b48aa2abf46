"""``awf-mcp servers import``: an agent's servers into awf-mcp.toml, and the agent's file swapped to awf."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from awf_mcp.core.servers import parse
from awf_mcp.errors import UserError
from awf_mcp.ops.serverimport import import_servers

CLAUDE = {
    "mcpServers": {
        "git_tools": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {"T": "${GH}"}},
        "docs": {"type": "http", "url": "https://x.invalid/mcp", "headers": {"Authorization": "Bearer ${D}"}},
        "old": {"type": "sse", "url": "https://x.invalid/sse"},
        "awf": {"type": "stdio", "command": "/bin/awf-mcp", "args": ["serve"]},
    },
    "keep": 1,
}

CODEX = """# mine
model = "o3"

[mcp_servers.time]
command = "uvx"
args = ["mcp-server-time"]
startup_timeout_sec = 20
tool_timeout_sec = 30

[mcp_servers.time.env]
TZ = "UTC"

[mcp_servers.remote]
url = "https://x.invalid/mcp"
bearer_token_env_var = "REMOTE_TOKEN"

[profiles.x]
model = "y"
"""


def run(tmp_path: Path, client: str, write: bool) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return import_servers(client, write=write, cwd=tmp_path, home=home, env={})


def test_without_write_nothing_changes_and_the_tables_are_printed(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    out = run(tmp_path, "claude", write=False)
    assert "[servers.git-tools]" in out and "[servers.docs]" in out and "[servers.awf]" not in out
    assert "'git_tools' becomes 'git-tools'" in out and "skipped 'old': it uses the SSE transport" in out
    assert not (tmp_path / "awf-mcp.toml").exists()
    assert json.loads((tmp_path / ".mcp.json").read_text()) == CLAUDE


def test_claude_write_moves_the_servers_and_keeps_a_backup(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    run(tmp_path, "claude", write=True)
    data = tomllib.loads((tmp_path / "awf-mcp.toml").read_text())
    specs = {s.name: s for s in parse(data, "awf-mcp.toml", {"GH": "g", "D": "d"})}
    assert specs["git-tools"].env == {"T": "g"} and specs["docs"].headers == {"Authorization": "Bearer d"}
    agent = json.loads((tmp_path / ".mcp.json").read_text())
    assert set(agent["mcpServers"]) == {"old", "awf"} and agent["keep"] == 1
    assert "serve" in agent["mcpServers"]["awf"]["args"]
    assert json.loads((tmp_path / ".mcp.json.bak").read_text()) == CLAUDE


def test_codex_write_keeps_everything_else_and_maps_its_keys(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CODEX)
    (tmp_path / "awf-mcp.toml").write_text('exclude = ["Bash"]\n\n[servers.time]\ncommand = "mine"\n')
    out = run(tmp_path, "codex", write=True)
    assert "'time' is already in" in out
    ours = tomllib.loads((tmp_path / "awf-mcp.toml").read_text())
    assert ours["exclude"] == ["Bash"] and ours["servers"]["time"] == {"command": "mine"}
    assert ours["servers"]["remote"]["headers"] == {"Authorization": "Bearer ${REMOTE_TOKEN}"}
    codex = tomllib.loads((tmp_path / ".codex" / "config.toml").read_text())
    assert set(codex["mcp_servers"]) == {"time", "awf"}  # time was not imported, so it stays
    assert codex["model"] == "o3" and codex["profiles"] == {"x": {"model": "y"}}
    assert (tmp_path / ".codex" / "config.toml").read_text().startswith("# mine\n")


def test_codex_timeouts_are_mapped(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(CODEX)
    out = run(tmp_path, "codex", write=False)
    assert "startup_timeout_seconds = 20" in out and "timeout_seconds = 30" in out and 'TZ = "UTC"' in out


def test_an_unparsable_agent_file_is_refused_untouched(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text("{not json")
    with pytest.raises(UserError, match="is not valid JSON"):
        run(tmp_path, "claude", write=True)
    assert (tmp_path / ".mcp.json").read_text() == "{not json"
    assert not (tmp_path / "awf-mcp.toml").exists()


def test_awfs_own_entry_is_not_imported_under_any_name(tmp_path: Path) -> None:
    agent = {
        "mcpServers": {
            "tools": {"command": "/opt/venv/bin/awf-mcp", "args": ["serve", "--root", "/r"]},
            "py": {"command": "python3", "args": ["-m", "awf_mcp", "serve"]},
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
        }
    }
    (tmp_path / ".mcp.json").write_text(json.dumps(agent))
    out = run(tmp_path, "claude", write=False)
    assert "[servers.time]" in out and "[servers.tools]" not in out and "[servers.py]" not in out


def test_a_server_table_that_is_not_a_table_is_refused(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text('{"mcpServers": ["x"]}')
    with pytest.raises(UserError, match="'mcpServers' that is not a table of servers"):
        run(tmp_path, "claude", write=True)
    assert (tmp_path / ".mcp.json").read_text() == '{"mcpServers": ["x"]}'


def test_a_file_that_would_not_be_rewritten_is_refused_before_the_preview(tmp_path: Path) -> None:
    # Gemini's settings are rewritten as plain JSON, so a comment there stops the import at once.
    (tmp_path / ".gemini").mkdir()
    (tmp_path / ".gemini" / "settings.json").write_text(
        '{\n  // c\n  "mcpServers": {"t": {"command": "x"}}\n}\n'
    )
    with pytest.raises(UserError, match="is not valid JSON"):
        run(tmp_path, "gemini", write=False)
