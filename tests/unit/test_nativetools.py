"""``--replace-native`` / ``--restore-native`` (:mod:`awf_mcp.clients.nativetools` through
:mod:`awf_mcp.clients.clientconfig`): idempotent writes with a ``.bak``, and a restore that
removes exactly what was added and nothing the user had."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.clients import clientconfig as cc
from awf_mcp.clients import nativetools
from awf_mcp.clients.clientprofiles import CLAUDE_NATIVE_TOOLS, CODEX_NATIVE_SWITCHES, GEMINI_NATIVE_TOOLS
from awf_mcp.errors import UserError

BASE = ["/opt/awf/bin/awf-mcp"]


def configure(client: str, dirs: tuple[Path, Path], **kw: Any) -> str:
    cwd, home = dirs
    return cc.configure(client, cwd=cwd, home=home, env={}, base_command=BASE, **kw)


def restore(client: str, dirs: tuple[Path, Path], scope: str | None = None) -> str:
    cwd, home = dirs
    return cc.restore_native_tools(client, scope=scope, cwd=cwd, home=home, env={})


def test_claude_deny_rules_go_to_the_settings_file_and_come_out_again(dirs: tuple[Path, Path]) -> None:
    cwd, _home = dirs
    settings = cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    # The user's own rules: one of them names a tool awf-mcp would deny as well.
    mine = {"permissions": {"deny": ["Bash", "WebFetch"], "allow": ["Read(./docs/**)"]}, "model": "x"}
    settings.write_text(json.dumps(mine))

    out = configure("claude", dirs, write_files=True, replace_native=True)
    assert f"updated {settings}" in out and "--replace-native" in out
    deny = json.loads(settings.read_text())["permissions"]["deny"]
    assert deny == ["Bash", "WebFetch", *(t for t in CLAUDE_NATIVE_TOOLS if t != "Bash")]
    assert json.loads(settings.with_name("settings.json.bak").read_text()) == mine

    again = configure("claude", dirs, write_files=True, replace_native=True)
    assert f"{settings} already up to date" in again

    said = restore("claude", dirs)
    assert f"updated {settings}" in said
    # Exactly what was added is gone: the user's Bash rule, WebFetch, allow and model stay.
    assert json.loads(settings.read_text()) == mine
    assert "nothing to restore" in restore("claude", dirs)


def test_claude_user_scope_uses_the_user_settings(dirs: tuple[Path, Path]) -> None:
    _cwd, home = dirs
    configure("claude", dirs, write_files=True, scope="user", replace_native=True)
    data = json.loads((home / ".claude" / "settings.json").read_text())
    assert data == {"permissions": {"deny": list(CLAUDE_NATIVE_TOOLS)}}
    restore("claude", dirs, "user")
    # Nothing was there before: the list and the objects it leaves empty go.
    assert json.loads((home / ".claude" / "settings.json").read_text()) == {}


def test_gemini_entry_and_exclusion_are_one_write_with_one_backup(dirs: tuple[Path, Path]) -> None:
    cwd, _home = dirs
    settings = cwd / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"tools": {"exclude": ["web_fetch"]}}))
    configure("gemini", dirs, write_files=True, trust="all", replace_native=True)
    data = json.loads(settings.read_text())
    assert data["mcpServers"]["awf"]["trust"] is True
    assert data["tools"]["exclude"] == ["web_fetch", *GEMINI_NATIVE_TOOLS]
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json", "settings.json.bak"]
    restore("gemini", dirs)
    data = json.loads(settings.read_text())
    assert data["tools"] == {"exclude": ["web_fetch"]} and "awf" in data["mcpServers"]


CODEX_USER_FILE = (
    "# mine\n"
    'model = "gpt"\n'
    "\n"
    "[features]\n"
    "plugins = false  # no sync\n"
    "shell_tool = true\n"
    "\n"
    "[analytics]\n"
    "enabled = false\n"
)


def test_codex_switches_keep_the_users_table_and_restore_previous_values(dirs: tuple[Path, Path]) -> None:
    _cwd, home = dirs
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_USER_FILE)
    configure("codex", dirs, write_files=True, scope="user", replace_native=True)
    text = config.read_text()
    assert tomllib.loads(text)["features"] == {"plugins": False, **CODEX_NATIVE_SWITCHES}
    assert "plugins = false  # no sync\n" in text and text.startswith("# mine\n")
    assert "[mcp_servers.awf]" in text
    assert configure("codex", dirs, write_files=True, scope="user", replace_native=True).count(
        "already up to date"
    )
    restore("codex", dirs, "user")
    restored = config.read_text()
    # shell_tool was true before: it is true again; the others were absent: they are gone.
    assert tomllib.loads(restored)["features"] == {"plugins": False, "shell_tool": True}
    assert restored.replace("\n\n[mcp_servers.awf]", "").startswith(CODEX_USER_FILE.rstrip("\n"))


def test_restore_leaves_a_switch_the_user_changed_since(dirs: tuple[Path, Path]) -> None:
    _cwd, home = dirs
    config = home / ".codex" / "config.toml"
    configure("codex", dirs, write_files=True, scope="user", replace_native=True)
    config.write_text(config.read_text().replace("view_image = false", "view_image = true"))
    restore("codex", dirs, "user")
    assert tomllib.loads(config.read_text())["features"] == {"view_image": True}


def test_codex_project_scope_gets_a_features_table(dirs: tuple[Path, Path]) -> None:
    cwd, _home = dirs
    configure("codex", dirs, write_files=True, replace_native=True)
    data = tomllib.loads((cwd / ".codex" / "config.toml").read_text())
    assert data["features"] == CODEX_NATIVE_SWITCHES


def test_printing_shows_the_setting_and_writes_nothing(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    text = configure("gemini", dirs, replace_native=True)
    assert '"exclude": [' in text and "run_shell_command" in text
    assert "--replace-native` applies this" in text
    assert "[features]\nshell_tool = false" in configure("codex", dirs, replace_native=True)
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []


@pytest.mark.parametrize("client", ["cursor", "vscode", "zed", "json"])
def test_a_client_without_a_known_setting_is_a_clear_error(dirs: tuple[Path, Path], client: str) -> None:
    with pytest.raises(
        UserError, match=r"knows no setting that switches off .* --replace-native works for claude"
    ):
        configure(client, dirs, replace_native=True)


def test_a_broken_file_stops_every_write_and_the_ledger(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    settings = cwd / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{broken")
    with pytest.raises(UserError, match="not valid JSON"):
        configure("claude", dirs, write_files=True, replace_native=True)
    assert not (cwd / ".mcp.json").exists() and settings.read_text() == "{broken"
    assert not nativetools.ledger_path(home, {}).exists()


def test_the_ledger_follows_xdg_state_home(dirs: tuple[Path, Path], tmp_path: Path) -> None:
    cwd, home = dirs
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    cc.replace_native_tools("gemini", cwd=cwd, home=home, env=env)
    ledger = json.loads((tmp_path / "state" / "awf-mcp" / "native-tools.json").read_text())
    assert ledger["files"][str(cwd / ".gemini" / "settings.json")]["added"] == list(GEMINI_NATIVE_TOOLS)
    # Without that state directory there is no record, so nothing is removed.
    assert "nothing to restore" in restore("gemini", dirs)
    assert "removed what awf-mcp added" in cc.restore_native_tools("gemini", cwd=cwd, home=home, env=env)


def test_every_native_setting_has_a_writable_file_and_one_kind() -> None:
    for profile in cc.profiles():
        native = profile.native
        if native is None:
            continue
        assert bool(native.names) != bool(native.switches), profile.name
        assert native.file in ("servers", "trust"), profile.name
        # Switches are written as TOML keys, names as JSON list items.
        assert (nativetools.file_format(profile) == "toml") == bool(native.switches), profile.name


def test_restore_after_the_file_is_gone_creates_nothing(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    cc.replace_native_tools("gemini", cwd=cwd, home=home, env={})
    (cwd / ".gemini" / "settings.json").unlink()
    assert "no longer exists" in restore("gemini", dirs)
    assert not (cwd / ".gemini" / "settings.json").exists()
    assert "nothing to restore" in restore("gemini", dirs)


def test_replacing_again_after_a_manual_removal_records_each_name_once(dirs: tuple[Path, Path]) -> None:
    cwd, home = dirs
    settings = cwd / ".gemini" / "settings.json"
    cc.replace_native_tools("gemini", cwd=cwd, home=home, env={})
    data = json.loads(settings.read_text())
    data["tools"]["exclude"].remove("glob")
    settings.write_text(json.dumps(data))
    cc.replace_native_tools("gemini", cwd=cwd, home=home, env={})
    ledger = json.loads(nativetools.ledger_path(home, {}).read_text())
    assert ledger["files"][str(settings)]["added"] == list(GEMINI_NATIVE_TOOLS)
    restore("gemini", dirs)
    assert json.loads(settings.read_text()) == {}
