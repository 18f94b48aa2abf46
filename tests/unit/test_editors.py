"""``awf_mcp.ops.editors``: order-keeping JSON edits, line-exact TOML table edits, all-or-nothing writes."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from awf_mcp.errors import UserError
from awf_mcp.ops import editors


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
