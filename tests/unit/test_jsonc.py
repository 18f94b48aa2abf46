"""``awf_mcp.clients.jsonc``: JSONC changed only where its data changes, on VS Code's own files.

The files in tests/data/vscode are VS Code's (see the README there): tabs, ``//`` comments,
trailing commas.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.clients import jsonc, jsonedit

DATA = Path(__file__).resolve().parent.parent / "data" / "vscode"
VSCODE_FILES = ["mcp.json", "extensions.json", "launch.json"]
WHERE = Path("/nowhere/settings.json")
ENTRY = {"type": "stdio", "command": "/opt/awf/bin/awf-mcp", "args": ["serve", "--root", "/work/repo"]}


def comments(text: str) -> list[str]:
    """Every comment of TEXT (none of these files has ``//`` inside a string but URLs after one)."""
    return re.findall(r"(?m)//[^\n]*$|/\*.*?\*/", text)


def edit(text: str, *updates: jsonedit.JsonUpdate) -> str:
    return jsonedit.json_edit(*updates, comments=True)(text, WHERE)


def without_awf(data: jsonedit.JsonObject, path: Path) -> None:
    del data["servers"]["awf"]
    if not data["servers"]:
        del data["servers"]


@pytest.mark.parametrize("name", VSCODE_FILES)
def test_a_server_is_inserted_replaced_and_removed_with_every_comment_and_byte_kept(name: str) -> None:
    original = (DATA / name).read_text()
    before = jsonedit.loads_json(original, comments=True)

    inserted = edit(original, jsonedit.set_entry(("servers", "awf"), ENTRY))
    assert comments(inserted) == comments(original)
    assert jsonedit.loads_json(inserted, comments=True) == {
        **before,
        "servers": {**before.get("servers", {}), "awf": ENTRY},
    }
    assert '\t\t\t"command": "/opt/awf/bin/awf-mcp",\n' in inserted  # the file's tabs
    assert edit(inserted, jsonedit.set_entry(("servers", "awf"), ENTRY)) is inserted  # a second write: no-op

    changed = {**ENTRY, "args": ["serve"]}
    replaced = edit(inserted, jsonedit.set_entry(("servers", "awf"), changed))
    assert comments(replaced) == comments(original)
    assert jsonedit.loads_json(replaced, comments=True)["servers"]["awf"] == changed
    assert replaced == inserted.replace(
        '"args": [\n\t\t\t\t"serve",\n\t\t\t\t"--root",\n\t\t\t\t"/work/repo"\n\t\t\t]',
        '"args": [\n\t\t\t\t"serve"\n\t\t\t]',
    )

    assert edit(replaced, without_awf) == original


def test_an_entry_inserted_among_others_keeps_their_style() -> None:
    original = (DATA / "mcp.json").read_text()
    inserted = edit(original, jsonedit.set_entry(("servers", "awf"), ENTRY))
    assert inserted == original.replace(
        '\t\t\t"cwd": "${workspaceFolder}/test/mcp"\n\t\t}\n',
        '\t\t\t"cwd": "${workspaceFolder}/test/mcp"\n\t\t},\n\t\t"awf": {\n'
        '\t\t\t"type": "stdio",\n\t\t\t"command": "/opt/awf/bin/awf-mcp",\n\t\t\t"args": [\n'
        '\t\t\t\t"serve",\n\t\t\t\t"--root",\n\t\t\t\t"/work/repo"\n\t\t\t]\n\t\t}\n',
    )
    # A value on one line is replaced on one line.
    moved = edit(original, jsonedit.set_entry(("servers", "vscode-playwright-mcp"), {"args": ["x", "y"]}))
    assert moved == original.replace('["run", "start-stdio"]', '["x", "y"]')


def test_list_items_are_appended_and_removed_around_comments_and_trailing_commas() -> None:
    original = (DATA / "extensions.json").read_text()
    added = edit(original, jsonedit.add_to_list(("recommendations",), ["awf.awf-mcp"]))
    assert added == original.replace(
        '"ms-vscode-remote.remote-containers"\n', '"ms-vscode-remote.remote-containers",\n\t\t"awf.awf-mcp"\n'
    )
    assert edit(added, jsonedit.remove_from_list(("recommendations",), ["awf.awf-mcp"])) == original
    gone = edit(original, jsonedit.remove_from_list(("recommendations",), ["editorconfig.editorconfig"]))
    assert gone == original.replace('\t\t"editorconfig.editorconfig",\n', "")

    launch = (DATA / "launch.json").read_text()
    data = jsonedit.loads_json(launch, comments=True)

    def drop_shared(wanted: jsonedit.JsonObject, path: Path) -> None:
        wanted["compounds"][0]["configurations"].remove("Attach to Shared Process")

    # The last item of a list with a trailing comma: the comma style stays.
    dropped = edit(launch, drop_shared)
    assert dropped == launch.replace('\t\t\t\t"Attach to Shared Process",\n', "")
    expected = copy.deepcopy(data)
    drop_shared(expected, WHERE)
    assert jsonedit.loads_json(dropped, comments=True) == expected


def test_removing_every_member_keeps_the_comments_inside() -> None:
    text = '{\n  "keep": 1,\n  "servers": {\n    // mine\n    "awf": {"command": "x"},\n  },\n}\n'
    assert edit(text, lambda data, path: data["servers"].pop("awf")) == (
        '{\n  "keep": 1,\n  "servers": {\n    // mine\n  },\n}\n'
    )
    assert (
        edit('{\n  "keep": 1,\n  "servers": {\n    "awf": {}\n  }\n}\n', without_awf) == '{\n  "keep": 1\n}\n'
    )
    assert edit('{"a": 1, "servers": {"awf": {}}}', without_awf) == '{"a": 1}'
    assert edit('{"servers": {"awf": {}}, "a": 1}', without_awf) == '{"a": 1}'


@pytest.mark.parametrize(
    ("text", "update", "expected"),
    [
        ("{}", {"a": 1}, '{\n  "a": 1\n}'),
        ('{"x": 1}', {"a": [1]}, '{"x": 1, "a": [1]}'),
        ('{\n  "x": 1 // one\n}', {"a": 2}, '{\n  "x": 1, // one\n  "a": 2\n}'),
        ('{\n  "x": 1, // one\n}', {"a": 2}, '{\n  "x": 1, // one\n  "a": 2,\n}'),
        ("{ /* empty */ }", {"a": 2}, '{\n  "a": 2 /* empty */ }'),
    ],
)
def test_members_are_inserted_in_the_style_of_their_object(
    text: str, update: dict[str, Any], expected: str
) -> None:
    def add(data: jsonedit.JsonObject, path: Path) -> None:
        data.update(update)

    assert edit(text, add) == expected


def test_text_that_cannot_be_spliced_is_left_to_the_caller() -> None:
    assert jsonc.splice("{", {}, {"a": 1}) is None
    assert jsonc.splice('{"a": 1}', {"a": 1}, {"a": 1}) == '{"a": 1}'
