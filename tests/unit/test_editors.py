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
