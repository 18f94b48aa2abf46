"""``awf_mcp.clients.tomledit``: TOML edited through tomlkit, everything the edit does not name kept."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from awf_mcp.clients import editors, tomledit
from awf_mcp.errors import UserError

WHERE = Path("/nowhere/config.toml")
ENTRY = {"command": "x", "args": ["serve"], "tools": {"Read": {"approval_mode": "approve"}}}


def test_toml_table_renders_values_then_sub_tables_without_empty_headers() -> None:
    text = tomledit.toml_table(
        ("mcp_servers", "my server"),
        {"command": "/a b", "args": ["x", 'q"'], "required": True, "tools": {"Read": {"mode": "approve"}}},
    )
    assert text == (
        '[mcp_servers."my server"]\ncommand = "/a b"\nargs = ["x", "q\\""]\nrequired = true\n\n'
        '[mcp_servers."my server".tools.Read]\nmode = "approve"\n'
    )
    assert tomllib.loads(text)["mcp_servers"]["my server"]["tools"] == {"Read": {"mode": "approve"}}


def test_toml_text_escapes_del_and_refuses_what_toml_cannot_hold() -> None:
    text = tomledit.toml_table(("a",), {"b": "x\x7fy"})
    assert "\x7f" not in text and tomllib.loads(text) == {"a": {"b": "x\x7fy"}}
    with pytest.raises(ValueError, match="lone surrogate"):
        tomledit.toml_table(("a",), {"b": ["x\ud800"]})
    with pytest.raises(TypeError):
        tomledit.toml_table(("a",), {"b": [1, None]})
    with pytest.raises(UserError, match="cannot edit"):
        tomledit.toml_set_table(("a", "b"), {"c": "x\ud800"})("", WHERE)


def test_a_new_table_is_appended_and_every_other_byte_kept() -> None:
    old = (
        '# top\nmodel = "o3"   # mine\n\n'
        '[mcp_servers.other]\ncommand = "o"\n\n'
        "# lead of features\n[features]\na = 1\n"
    )
    new = tomledit.toml_set_table(("mcp_servers", "awf"), ENTRY)(old, WHERE)
    assert new.startswith(old)
    assert new[len(old) :] == tomledit.toml_table(("mcp_servers", "awf"), ENTRY).join(["\n", ""])
    assert tomledit.toml_set_table(("mcp_servers", "awf"), ENTRY)(new, WHERE) is new


def test_an_existing_table_is_changed_key_by_key_where_it_stands() -> None:
    old = (
        "[mcp_servers.awf]\n"
        'command = "old"  # the command\n'
        'args = ["serve"]  # mine\n'
        'env = { A = "1" }\n\n'
        "[mcp_servers.awf.tools.Write]\n"
        'approval_mode = "approve"\n\n'
        "# lead of features\n"
        "[features]\n"
        "a = 1\n"
    )
    new = tomledit.toml_set_table(("mcp_servers", "awf"), ENTRY)(old, WHERE)
    assert new == (
        "[mcp_servers.awf]\n"
        'command = "x"  # the command\n'
        'args = ["serve"]  # mine\n\n'
        "[mcp_servers.awf.tools.Read]\n"
        'approval_mode = "approve"\n\n'
        "# lead of features\n"
        "[features]\n"
        "a = 1\n"
    )
    assert tomllib.loads(new)["mcp_servers"]["awf"] == ENTRY


@pytest.mark.parametrize(
    "old", ['# mine\n[mcp_servers]\nawf = { command = "old" }\n', '# mine\nmcp_servers.awf.command = "old"\n']
)
def test_a_table_written_inline_or_as_dotted_keys_is_rewritten(old: str) -> None:
    new = tomledit.toml_set_table(("mcp_servers", "awf"), ENTRY)(old, WHERE)
    assert new.startswith("# mine\n") and tomllib.loads(new) == {"mcp_servers": {"awf": ENTRY}}


def test_an_edit_that_would_not_read_back_as_meant_is_refused() -> None:
    with pytest.raises(UserError, match=r"cannot edit \[mcp_servers\.awf\] in .* safely"):
        tomledit.toml_set_table(("mcp_servers", "awf"), ENTRY)("mcp_servers = 3\n", WHERE)
    with pytest.raises(editors.UnreadableFile, match="not valid TOML") as bad:
        tomledit.toml_set_table(("a", "b"), {})("a = \n", WHERE)
    assert bad.value.reason.startswith("is not valid TOML (")


def test_toml_set_keys_replaces_removes_and_adds_keys_in_place() -> None:
    old = '# top\n[features]\nkeep = 1  # mine\nflip = true\ngone = "x"\n\n# trailing\n[other]\na = 1\n'
    new = tomledit.toml_set_keys(("features",), {"flip": False, "gone": None, "added": False})(old, WHERE)
    assert (
        new
        == "# top\n[features]\nkeep = 1  # mine\nflip = false\nadded = false\n\n# trailing\n[other]\na = 1\n"
    )
    assert tomledit.toml_set_keys(("features",), {"x": True})(None, WHERE) == "[features]\nx = true\n"
    assert tomledit.toml_set_keys(("features",), {"x": None})("a = 1\n", WHERE) == "a = 1\n"


def test_toml_set_keys_edits_values_over_several_lines_and_leaves_strings_alone() -> None:
    new = tomledit.toml_set_keys(("features",), {"x": True})("[features]\nx = [\n  1,\n]\ny = 2\n", WHERE)
    assert new == "[features]\nx = true\ny = 2\n"
    # A header inside a multi-line string is text, not a table.
    text = 'note = """\n[features]\n"""\n'
    assert tomllib.loads(tomledit.toml_set_keys(("features",), {"x": True})(text, WHERE)) == {
        "note": "[features]\n",
        "features": {"x": True},
    }


def test_removed_tables_leave_the_comments_that_led_the_next_one() -> None:
    old = (
        "x = 1\n\n"
        '[mcp_servers.a]\ncommand = "a"\n\n'
        '# about b\n[mcp_servers.b]\ncommand = "b"\n\n'
        "# about features\n[features]\nq = 1\n"
    )
    one = tomledit.toml_remove_tables(("mcp_servers",), ["b"])(old, WHERE)
    assert (
        one == 'x = 1\n\n[mcp_servers.a]\ncommand = "a"\n\n# about b\n\n# about features\n[features]\nq = 1\n'
    )
    both = tomledit.toml_remove_tables(("mcp_servers",), ["a", "b"])(old, WHERE)
    assert tomllib.loads(both) == {"x": 1, "features": {"q": 1}}
    assert "# about b\n" in both and both.endswith("# about features\n[features]\nq = 1\n")


def test_added_tables_go_at_the_end_and_an_unchanged_file_comes_back_as_it_was() -> None:
    old = '# my servers\n[servers.git]\ncommand = "git-mcp"\n'
    add = tomledit.toml_add_tables(("servers",), {"docs": {"command": "docs", "args": ["--stdio"]}})
    new = add(old, WHERE)
    assert new == old + '\n[servers.docs]\ncommand = "docs"\nargs = ["--stdio"]\n'
    assert add(new, WHERE) is new


def test_a_table_of_tables_split_around_others_is_edited_in_each_part() -> None:
    old = (
        '[mcp_servers.a]\ncommand = "a"\n\n# about f\n[f]\nx = 1\n\n'
        '[mcp_servers.awf]\ncommand = "old"  # mine\n\n# about g\n[g]\ny = 2\n'
    )
    changed = tomledit.toml_set_table(("mcp_servers", "awf"), {"command": "x"})(old, WHERE)
    assert changed == old.replace('"old"', '"x"')
    removed = tomledit.toml_remove_tables(("mcp_servers",), ["a", "awf"])(old, WHERE)
    assert tomllib.loads(removed) == {"f": {"x": 1}, "g": {"y": 2}}
    assert "# about f\n[f]\n" in removed and "# about g\n[g]\n" in removed
