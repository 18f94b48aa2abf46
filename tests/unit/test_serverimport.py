"""``awf-mcp servers import``: an agent's servers into awf-mcp.toml, and the agent's file swapped to awf."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.clients.serverimport import import_servers
from awf_mcp.core.config import parse_settings
from awf_mcp.core.servers import parse
from awf_mcp.errors import UserError

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


def run(tmp_path: Path, client: str, write: bool, signed_in: Any = lambda name, table: True) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return import_servers(client, write=write, cwd=tmp_path, home=home, env={}, signed_in=signed_in)


def test_without_write_nothing_changes_and_the_tables_are_printed(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    out = run(tmp_path, "claude", write=False)
    assert "[servers.git-tools]" in out and "[servers.docs]" in out and "[servers.awf]" not in out
    assert "'git_tools' becomes 'git-tools'" in out and "[servers.old]" in out and "skipped" not in out
    assert not (tmp_path / "awf-mcp.toml").exists()
    assert json.loads((tmp_path / ".mcp.json").read_text()) == CLAUDE


def test_claude_write_moves_the_servers_and_keeps_a_backup(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    run(tmp_path, "claude", write=True)
    data = tomllib.loads((tmp_path / "awf-mcp.toml").read_text())
    specs = {s.name: s for s in parse(data, "awf-mcp.toml", {"GH": "g", "D": "d"})}
    assert specs["git-tools"].env == {"T": "g"} and specs["docs"].headers == {"Authorization": "Bearer d"}
    assert specs["old"].transport == "sse" and specs["old"].url == "https://x.invalid/sse"
    agent = json.loads((tmp_path / ".mcp.json").read_text())
    assert set(agent["mcpServers"]) == {"awf"} and agent["keep"] == 1
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


# --------------------------------------------------------------------------- what is written is checked


def run_checked(tmp_path: Path, client: str, write: bool, **kw: object) -> str:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return import_servers(
        client,
        write=write,
        cwd=tmp_path,
        home=home,
        env={},
        check=parse_settings,
        **kw,  # type: ignore[arg-type]
    )


def test_an_entry_serve_would_refuse_is_skipped_by_name_and_the_rest_imported(tmp_path: Path) -> None:
    agent = {
        "mcpServers": {
            "bad": {"command": "x", "args": [1, None, {"a": "b"}]},
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
        }
    }
    (tmp_path / ".mcp.json").write_text(json.dumps(agent))
    out = run_checked(tmp_path, "claude", write=True)
    assert "skipped 'bad': " in out and "None" not in (tmp_path / "awf-mcp.toml").read_text()
    assert set(tomllib.loads((tmp_path / "awf-mcp.toml").read_text())["servers"]) == {"time"}
    left = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert set(left) == {"bad", "awf"} and left["bad"] == agent["mcpServers"]["bad"]


def test_an_import_left_with_nothing_valid_swaps_nothing(tmp_path: Path) -> None:
    agent = {"mcpServers": {"bad": {"command": "x", "args": [1, None]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(agent))
    out = run_checked(tmp_path, "claude", write=True)
    assert "skipped 'bad'" in out and "nothing imported" in out
    assert json.loads((tmp_path / ".mcp.json").read_text()) == agent
    assert not (tmp_path / "awf-mcp.toml").exists() and not (tmp_path / ".mcp.json.bak").exists()


def test_del_round_trips_and_a_lone_surrogate_is_one_sentence(tmp_path: Path) -> None:
    text = '{"mcpServers": {"del": {"command": "x", "args": ["a\\u007fb"]}, "sur": {"command": "a\\ud800"}}}'
    (tmp_path / ".mcp.json").write_text(text)
    out = run_checked(tmp_path, "claude", write=True)
    assert "skipped 'sur': its settings cannot be written as TOML (it holds a lone surrogate" in out
    ours = parse(tomllib.loads((tmp_path / "awf-mcp.toml").read_text()), "awf-mcp.toml", {})
    assert [(s.name, s.args) for s in ours] == [("del", ("a\x7fb",))]
    left = json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]
    assert set(left) == {"sur", "awf"} and left["sur"]["command"] == "a\ud800"


def test_a_config_that_would_not_load_after_the_import_swaps_nothing(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    (tmp_path / "awf-mcp.toml").write_text("colour = 1\n")
    with pytest.raises(
        UserError, match=r"the import would leave .*awf-mcp\.toml unloadable: unknown key 'colour'"
    ):
        run_checked(tmp_path, "claude", write=True)
    assert json.loads((tmp_path / ".mcp.json").read_text()) == CLAUDE
    assert (tmp_path / "awf-mcp.toml").read_text() == "colour = 1\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".mcp.json", "awf-mcp.toml", "home"]


def test_write_leaves_one_backup_per_file_of_what_the_user_had(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    (tmp_path / "awf-mcp.toml").write_text('exclude = ["Bash"]\n')
    run_checked(tmp_path, "claude", write=True)
    backups = sorted(p.name for p in tmp_path.iterdir() if ".bak" in p.name)
    assert backups == [".mcp.json.bak", "awf-mcp.toml.bak"]
    assert json.loads((tmp_path / ".mcp.json.bak").read_text()) == CLAUDE
    assert (tmp_path / "awf-mcp.toml.bak").read_text() == 'exclude = ["Bash"]\n'


def test_a_second_import_keeps_the_first_backup(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    run_checked(tmp_path, "claude", write=True)
    swapped = (tmp_path / ".mcp.json").read_text()
    again = {"mcpServers": {**json.loads(swapped)["mcpServers"], "new": {"command": "uvx"}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(again))
    run_checked(tmp_path, "claude", write=True)
    assert json.loads((tmp_path / ".mcp.json.bak").read_text()) == CLAUDE
    [second] = [p for p in tmp_path.glob(".mcp.json.*.bak")]
    assert json.loads(second.read_text()) == again


def test_a_linked_agent_file_or_awf_config_in_the_project_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "home" / "config.json"
    secret.parent.mkdir()
    secret.write_text(json.dumps(CLAUDE))
    (tmp_path / ".mcp.json").symlink_to(secret)
    for write in (False, True):
        with pytest.raises(UserError, match=r"\.mcp\.json is a symbolic link"):
            run_checked(tmp_path, "claude", write=write)
    (tmp_path / ".mcp.json").unlink()
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    (tmp_path / "awf-mcp.toml").symlink_to(tmp_path / "home" / "awf.toml")
    with pytest.raises(UserError, match=r"awf-mcp\.toml is a symbolic link"):
        run_checked(tmp_path, "claude", write=True)
    assert json.loads(secret.read_text()) == CLAUDE and not (tmp_path / "home" / "awf.toml").exists()
    assert json.loads((tmp_path / ".mcp.json").read_text()) == CLAUDE


def test_the_trust_hint_names_the_read_only_tools_it_is_given(tmp_path: Path) -> None:
    (tmp_path / ".mcp.json").write_text(json.dumps(CLAUDE))
    tools = [("Read", True), ("LS", True), ("Bash", False), ("time_now", True)]
    out = run_checked(tmp_path, "claude", write=True, tools=lambda: tools)
    assert "for LS, Read, time_now" in out


def imported_specs(tmp_path: Path, client: str) -> tuple[dict[str, Any], str]:
    out = run(tmp_path, client, write=True)
    data = tomllib.loads((tmp_path / "awf-mcp.toml").read_text())
    parse_settings(data, tmp_path / "awf-mcp.toml")  # what serve applies: it loads
    return {s.name: s for s in parse(data, "awf-mcp.toml", {"T": "t"})}, out


def test_claudes_remote_entries_round_trip_with_their_transport_and_sign_in(tmp_path: Path) -> None:
    agent = {
        "mcpServers": {
            "linear": {"type": "http", "url": "https://mcp.linear.invalid/mcp"},
            "legacy": {"type": "sse", "url": "https://legacy.invalid/sse"},
            "keyed": {
                "type": "http",
                "url": "https://k.invalid/mcp",
                "headers": {"Authorization": "Bearer ${T}"},
            },
        }
    }
    (tmp_path / ".mcp.json").write_text(json.dumps(agent))
    specs, out = imported_specs(tmp_path, "claude")
    assert (specs["linear"].transport, specs["linear"].auth) == ("http", "oauth")
    assert (specs["legacy"].transport, specs["legacy"].auth) == ("sse", "oauth")
    assert (specs["keyed"].auth, dict(specs["keyed"].headers)) == ("", {"Authorization": "Bearer t"})
    assert "run awf-mcp servers login linear once" in out and "run awf-mcp servers login legacy once" in out
    assert "servers login keyed" not in out
    assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"awf"}


def test_geminis_url_is_sse_its_http_url_is_not_and_its_oauth_settings_are_kept(tmp_path: Path) -> None:
    (tmp_path / ".gemini").mkdir()
    agent = {
        "mcpServers": {
            "old": {"url": "https://old.invalid/sse"},
            "new": {"httpUrl": "https://new.invalid/mcp", "oauth": {"enabled": True, "clientId": "cid-1"}},
            "open": {"httpUrl": "https://open.invalid/mcp", "oauth": {"enabled": False}},
        }
    }
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(agent))
    specs, out = imported_specs(tmp_path, "gemini")
    assert (specs["old"].transport, specs["old"].url) == ("sse", "https://old.invalid/sse")
    assert (specs["new"].transport, specs["new"].auth, specs["new"].client_id) == ("http", "oauth", "cid-1")
    assert specs["open"].auth == ""
    assert "servers login new once" in out and "servers login open" not in out


def test_codexs_url_and_bearer_token_variable_round_trip(tmp_path: Path) -> None:
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "config.toml").write_text(
        '[mcp_servers.keyed]\nurl = "https://k.invalid/mcp"\nbearer_token_env_var = "T"\n\n'
        '[mcp_servers.signin]\nurl = "https://s.invalid/mcp"\n'
    )
    specs, out = imported_specs(tmp_path, "codex")
    assert dict(specs["keyed"].headers) == {"Authorization": "Bearer t"} and specs["keyed"].auth == ""
    assert specs["signin"].auth == "oauth" and "servers login signin once" in out


def test_a_server_that_needs_sign_in_leaves_the_agents_file_only_once_signed_in(tmp_path: Path) -> None:
    agent = {
        "mcpServers": {
            "linear": {"type": "http", "url": "https://mcp.linear.invalid/mcp"},
            "time": {"command": "uvx", "args": ["mcp-server-time"]},
        }
    }
    (tmp_path / ".mcp.json").write_text(json.dumps(agent))
    signed: set[str] = set()
    out = run(tmp_path, "claude", write=True, signed_in=lambda name, table: name in signed)
    assert "'linear' stays in" in out and "run awf-mcp servers login linear, then this import again" in out
    assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"linear", "awf"}
    assert tomllib.loads((tmp_path / "awf-mcp.toml").read_text())["servers"]["linear"]["auth"] == "oauth"
    again = run(tmp_path, "claude", write=True, signed_in=lambda name, table: name in signed)
    assert "nothing imported" in again
    assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"linear", "awf"}
    signed.add("linear")  # awf-mcp servers login linear
    moved = run(tmp_path, "claude", write=True, signed_in=lambda name, table: name in signed)
    assert "'linear' is already in" in moved and "awf-mcp can serve it: it leaves" in moved
    assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"awf"}
    assert list(tomllib.loads((tmp_path / "awf-mcp.toml").read_text())["servers"]) == ["linear", "time"]
