"""Read, Write and Edit called directly, plus the provider's definitions and registration hook."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.budget import MAX_BUDGET
from awf_mcp.builtins import BuiltinTools, Sandbox, awf_mcp_register_tools
from awf_mcp.builtins.limits import BINARY_SNIFF_BYTES, LINE_SHOW_CHARS, MAX_FILE_BYTES, READ_DEFAULT_LINES
from awf_mcp.ports import PluginContext, ToolError, ToolProvider, ToolResult
from tests.helpers.providers import call_with_budget

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 40
GIF = b"GIF89a" + b"\x00" * 40
WEBP = b"RIFF\x20\x00\x00\x00WEBPVP8 " + b"\x00" * 40


async def text_of(tools: BuiltinTools, name: str, **arguments: Any) -> str:
    result = await tools.call_tool(name, arguments)
    assert isinstance(result, ToolResult)
    assert not result.is_error, result.content
    return result.content[0].text


def leftovers(directory: Path) -> list[str]:
    return [p.name for p in directory.rglob("*") if p.name.endswith(".tmp")]


# --- provider ---------------------------------------------------------------------------------------


def test_definitions_are_sorted_strict_schemas_with_annotations(root: Path) -> None:
    definitions = BuiltinTools(Sandbox([str(root)])).list_tools()
    names = ["Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"]
    assert [d.name for d in definitions] == names
    expected_args = {
        "Read": {"path", "offset", "limit", "line_numbers", "column"},
        "Write": {"path", "content"},
        "Edit": {"path", "old", "new", "replace_all"},
        "Bash": {"command", "cwd", "timeout_seconds", "run_in_background"},
        "BashOutput": {"job_id"},
        "KillShell": {"job_id"},
        "Glob": {"pattern", "cwd", "offset"},
        "Grep": {"pattern", "path", "glob", "output_mode", "case_insensitive", "offset"},
    }
    for definition in definitions:
        schema = definition.input_schema
        assert definition.source == "builtin"
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert expected_args[definition.name] <= set(schema["properties"])
        assert set(schema["required"]) <= set(schema["properties"])
        assert all(prop.get("description") for prop in schema["properties"].values())
        assert definition.annotations is not None and definition.annotations.title
        assert len(definition.description) > 100
    by_name = {d.name: d.annotations for d in definitions}
    for name in ("Read", "Glob", "Grep"):
        annotations = by_name[name]
        assert annotations is not None
        assert (annotations.read_only, annotations.destructive, annotations.idempotent) == (True, False, True)
        assert annotations.open_world is False
    output, kill = by_name["BashOutput"], by_name["KillShell"]
    assert output is not None and output.read_only is True and output.destructive is False
    assert kill is not None and kill.read_only is False and kill.destructive is True
    write, edit, bash = by_name["Write"], by_name["Edit"], by_name["Bash"]
    assert write is not None and (write.read_only, write.destructive, write.idempotent) == (False, True, True)
    assert edit is not None and (edit.destructive, edit.idempotent) == (True, False)
    assert bash is not None and (bash.destructive, bash.open_world) == (True, True)


def test_hook_registers_one_provider(root: Path) -> None:
    context = PluginContext(name="builtin", roots=(str(root),))
    awf_mcp_register_tools(plugin=context)
    assert len(context.registered) == 1
    provider = context.registered[0]
    assert isinstance(provider, BuiltinTools) and isinstance(provider, ToolProvider)
    assert provider.sandbox.roots == (str(root.resolve()),)


def test_import_and_listing_stay_cheap() -> None:
    code = (
        "import sys; from awf_mcp.builtins import BuiltinTools, Sandbox; "
        "BuiltinTools(Sandbox(['.'])).list_tools(); "
        "heavy = {'re2', 'pathspec', 'mcp', 'typer', 'rich'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.anyio
async def test_unknown_tool_and_bad_arguments(tools: BuiltinTools) -> None:
    with pytest.raises(ToolError, match="unknown"):
        await tools.call_tool("Nope", {})
    with pytest.raises(ToolError, match="required"):
        await tools.call_tool("Read", {})
    with pytest.raises(ToolError, match="integer"):
        await tools.call_tool("Read", {"path": "x", "offset": "3"})
    with pytest.raises(ToolError, match="at least 1"):
        await tools.call_tool("Read", {"path": "x", "limit": 0})


# --- Read -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_read_returns_text_as_is(tools: BuiltinTools, root: Path) -> None:
    (root / "a.txt").write_text("one\ntwo\r\nthree")
    assert await text_of(tools, "Read", path="a.txt") == "one\ntwo\r\nthree"
    assert await text_of(tools, "Read", path=str(root / "a.txt")) == "one\ntwo\r\nthree"


@pytest.mark.anyio
async def test_read_pages_with_offset_and_limit(tools: BuiltinTools, root: Path) -> None:
    (root / "n.txt").write_text("".join(f"line {i}\n" for i in range(10)))
    page = await text_of(tools, "Read", path="n.txt", offset=2, limit=3)
    assert page.startswith("line 2\nline 3\nline 4\n\n[")
    assert "offset=5" in page
    assert await text_of(tools, "Read", path="n.txt", offset=7) == "line 7\nline 8\nline 9\n"
    with pytest.raises(ToolError, match="past the end"):
        await tools.call_tool("Read", {"path": "n.txt", "offset": 11})


@pytest.mark.anyio
async def test_read_default_limit(tools: BuiltinTools, root: Path) -> None:
    (root / "long.txt").write_text("x\n" * (READ_DEFAULT_LINES + 5))
    text = await text_of(tools, "Read", path="long.txt")
    assert text.count("x\n") == READ_DEFAULT_LINES
    assert f"offset={READ_DEFAULT_LINES}" in text


@pytest.mark.anyio
async def test_read_pages_fit_the_budget_in_whole_lines(tools: BuiltinTools, root: Path) -> None:
    lines = [f"{n:05d} " + "w" * 184 + "\n" for n in range(3000)]
    (root / "wide.txt").write_text("".join(lines))
    text = await call_with_budget(tools, "Read", 40_000, path="wide.txt")
    assert len(text.encode()) <= 40_000
    body, note = text.rsplit("\n\n", 1)
    shown = body.count("\n") + 1
    assert body + "\n" == "".join(lines[:shown])
    assert note.startswith("[awf-mcp: showing lines 1-") and f"offset={shown}" in note
    following = await call_with_budget(tools, "Read", 40_000, path="wide.txt", offset=shown)
    assert following.startswith(lines[shown])


@pytest.mark.anyio
async def test_read_budget_exactly_met_one_byte_over_and_multibyte(tools: BuiltinTools, root: Path) -> None:
    from awf_mcp.builtins.reading import NOTE_ROOM

    (root / "four.txt").write_text("é1\né2\né3\né4\n")
    exact = NOTE_ROOM + len("é1\né2\né3\né4\n".encode())
    assert await call_with_budget(tools, "Read", exact, path="four.txt") == "é1\né2\né3\né4\n"
    cut = await call_with_budget(tools, "Read", exact - 1, path="four.txt")
    assert cut.startswith("é1\né2\né3\n\n[awf-mcp: showing lines 1-3") and "offset=3" in cut


@pytest.mark.anyio
async def test_read_numbers_lines_as_grep_does(tools: BuiltinTools, root: Path) -> None:
    (root / "n.txt").write_text("alpha\nbeta\ngamma\n")
    grep = await text_of(tools, "Grep", pattern="gamma")
    number = int(grep.split(":")[1])
    text = await text_of(tools, "Read", path="n.txt", offset=number - 1, line_numbers=True)
    assert text == f"{number}\tgamma\n"


@pytest.mark.anyio
async def test_a_one_line_file_over_the_budget_is_read_whole_by_column(
    tools: BuiltinTools, root: Path
) -> None:
    minified = "".join(f"var v{n}='é';" for n in range(40_000))
    (root / "app.min.js").write_text(minified + "\nsecond line\n")
    first = await call_with_budget(tools, "Read", 10_000, path="app.min.js")
    assert first.startswith(minified[:LINE_SHOW_CHARS] + " [awf-mcp: line 1 goes on")
    assert "Read with offset=0 column=2000" in first and "second line" in first
    pieces, column = [], 0
    while True:
        page = await call_with_budget(tools, "Read", 10_000, path="app.min.js", offset=0, column=column)
        assert len(page.encode()) <= 10_000
        body, note = page.rsplit("\n\n", 1)
        pieces.append(body)
        if "end of line 1" in note:
            assert "offset=1" in note
            break
        column = int(note.split("column=")[1].split()[0])
    assert "".join(pieces) == minified


@pytest.mark.anyio
async def test_a_latin1_file_stays_within_the_budget(tools: BuiltinTools, root: Path) -> None:
    (root / "latin1.txt").write_bytes(("caf\xe9 " * 10).encode("latin-1") * 80_000)
    text = await call_with_budget(tools, "Read", 40_000, path="latin1.txt")
    assert len(text.encode()) <= 40_000 and "\ufffd" in text


@pytest.mark.anyio
async def test_read_binary_and_empty(tools: BuiltinTools, root: Path) -> None:
    (root / "blob.bin").write_bytes(b"abc\x00def" * 10)
    assert "binary file, 70 bytes" in await text_of(tools, "Read", path="blob.bin")
    (root / "empty").write_bytes(b"")
    assert await text_of(tools, "Read", path="empty") == "(empty file)"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("raw", "mime"), [(PNG, "image/png"), (JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")]
)
async def test_read_images(tools: BuiltinTools, root: Path, raw: bytes, mime: str) -> None:
    import base64

    (root / "picture").write_bytes(raw)
    result = await tools.call_tool("Read", {"path": "picture"})
    assert isinstance(result, ToolResult) and not result.is_error
    (item,) = result.content
    assert item.type == "image" and item.mime_type == mime
    assert base64.b64decode(item.data) == raw


@pytest.mark.anyio
async def test_read_refuses_huge_images_directories_fifos_missing(tools: BuiltinTools, root: Path) -> None:
    (root / "huge.png").write_bytes(PNG + b"\x00" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="image"):
        await tools.call_tool("Read", {"path": "huge.png"})
    (root / "dir").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await tools.call_tool("Read", {"path": "dir"})
    os.mkfifo(root / "fifo")
    with pytest.raises(ToolError, match="not a regular file"):
        await tools.call_tool("Read", {"path": "fifo"})
    with pytest.raises(ToolError, match="does not exist"):
        await tools.call_tool("Read", {"path": "missing.txt"})


# --- Write ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_creates_parents_then_overwrites(tools: BuiltinTools, root: Path) -> None:
    assert (
        await text_of(tools, "Write", path="a/b/c.txt", content="héllo") == "OK: created a/b/c.txt (6 bytes)"
    )
    assert (root / "a" / "b" / "c.txt").read_text() == "héllo"
    assert await text_of(tools, "Write", path="a/b/c.txt", content="") == "OK: overwrote a/b/c.txt (0 bytes)"
    assert (root / "a" / "b" / "c.txt").read_bytes() == b""
    assert leftovers(root) == []


@pytest.mark.anyio
async def test_write_preserves_mode(tools: BuiltinTools, root: Path) -> None:
    target = root / "script.sh"
    target.write_text("old")
    target.chmod(0o750)
    await text_of(tools, "Write", path="script.sh", content="new")
    assert stat.S_IMODE(target.stat().st_mode) == 0o750
    assert target.read_text() == "new"


@pytest.mark.anyio
async def test_write_refuses_big_content_and_directories(tools: BuiltinTools, root: Path) -> None:
    with pytest.raises(ToolError, match="at most 5 MiB"):
        await tools.call_tool("Write", {"path": "big", "content": "x" * (MAX_FILE_BYTES + 1)})
    assert not (root / "big").exists()
    (root / "d").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await tools.call_tool("Write", {"path": "d", "content": "x"})
    (root / "file").write_text("x")
    with pytest.raises(ToolError, match="not a directory"):
        await tools.call_tool("Write", {"path": "file/child", "content": "x"})


@pytest.mark.anyio
@pytest.mark.parametrize("failing", ["replace", "fsync"])
async def test_write_failure_keeps_original_and_leaves_no_temp(
    tools: BuiltinTools, root: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    target = root / "keep.txt"
    target.write_text("original")

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(5, "simulated I/O error")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(ToolError, match="simulated"):
        await tools.call_tool("Write", {"path": "keep.txt", "content": "replacement"})
    with pytest.raises(ToolError, match="simulated"):
        await tools.call_tool("Write", {"path": "fresh.txt", "content": "new"})
    monkeypatch.undo()
    assert target.read_text() == "original"
    assert not (root / "fresh.txt").exists()
    assert sorted(p.name for p in root.iterdir()) == ["keep.txt"]


# --- Edit -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_edit_replaces_one_occurrence(tools: BuiltinTools, root: Path) -> None:
    (root / "e.py").write_text("a = 1\nb = 2\n")
    assert await text_of(tools, "Edit", path="e.py", old="b = 2", new="b = 3") == (
        "OK: replaced 1 occurrence in e.py\n@@ line 2 @@\n a = 1\n-b = 2\n+b = 3"
    )
    assert (root / "e.py").read_text() == "a = 1\nb = 3\n"


@pytest.mark.anyio
async def test_edit_ambiguous_needs_replace_all(tools: BuiltinTools, root: Path) -> None:
    (root / "e.txt").write_text("x x x")
    with pytest.raises(ToolError, match="occurs 3 times"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "x", "new": "y"})
    assert (root / "e.txt").read_text() == "x x x"
    text = await text_of(tools, "Edit", path="e.txt", old="x", new="y", replace_all=True)
    assert text == "OK: replaced 3 occurrences in e.txt\n@@ line 1 @@\n-x x x\n+y y y"
    assert (root / "e.txt").read_text() == "y y y"


@pytest.mark.anyio
async def test_expected_replacements_must_match_or_nothing_changes(tools: BuiltinTools, root: Path) -> None:
    (root / "e.txt").write_text("x\nx\nx\n")
    with pytest.raises(ToolError, match=r"occurs 3 times in 'e\.txt', but expected_replacements is 2"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "x", "new": "y", "expected_replacements": 2})
    assert (root / "e.txt").read_text() == "x\nx\nx\n"
    text = await text_of(tools, "Edit", path="e.txt", old="x", new="y", expected_replacements=3)
    assert text.startswith("OK: replaced 3 occurrences in e.txt\n@@ line 1 @@\n-x\n+y\n@@ line 2 @@")
    assert (root / "e.txt").read_text() == "y\ny\ny\n"


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("content", "old", "reason"),
    [
        ("a\r\nb\r\n", "a\nb", "the file uses CRLF line endings: old matches at line 1"),
        (
            "x\ndef f():\n\treturn 1\n",
            "def f():\n    return 1",
            "tabs against spaces: the file indents with tabs",
        ),
        ("x\n    if a:\n        go()\n", "if a:\n    go()", "indentation differs"),
        ("x\ny = 1   \nz = 2\n", "y = 1\nz = 2", "trailing whitespace differs"),
        (
            "x\nalpha = 1\nbeta = 2\ngamma = 3\n",
            "alpha = 1\nbeta = 20\ngamma = 3",
            "one line differs (line 2 of old): the file has 'beta = 2', old has 'beta = 20'",
        ),
    ],
)
async def test_a_near_miss_says_where_and_what_differs(
    tools: BuiltinTools, root: Path, content: str, old: str, reason: str
) -> None:
    (root / "m.txt").write_bytes(content.encode())
    with pytest.raises(ToolError) as caught:
        await tools.call_tool("Edit", {"path": "m.txt", "old": old, "new": "zzz"})
    message = str(caught.value)
    assert reason in message, message
    if "CRLF" not in reason:
        assert "the closest match starts at line 2" in message and "\n2\t" in message
    assert (root / "m.txt").read_bytes() == content.encode()


@pytest.mark.anyio
async def test_grep_read_and_edit_agree_on_line_numbers(tools: BuiltinTools, root: Path) -> None:
    (root / "r.py").write_text("".join(f"value_{n} = {n}\n" for n in range(1, 50)))
    hit = await text_of(tools, "Grep", pattern="value_37 ")
    number = int(hit.split(":")[1])
    assert number == 37
    read = await text_of(tools, "Read", path="r.py", offset=number - 1, limit=1, line_numbers=True)
    assert read.startswith(f"{number}\tvalue_37 = 37")
    edited = await text_of(tools, "Edit", path="r.py", old="value_37 = 37", new="value_37 = 370")
    assert f"@@ line {number} @@" in edited


@pytest.mark.anyio
async def test_edit_refusals(tools: BuiltinTools, root: Path) -> None:
    (root / "e.txt").write_text("line one\r\nline two\r\n")
    with pytest.raises(ToolError, match=r"not found.*CRLF"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "one\nline", "new": "z"})
    with pytest.raises(ToolError, match="identical"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "one", "new": "one"})
    with pytest.raises(ToolError, match="empty"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "", "new": "z"})
    with pytest.raises(ToolError, match="does not exist"):
        await tools.call_tool("Edit", {"path": "nope.txt", "old": "a", "new": "b"})
    (root / "big.txt").write_bytes(b"a" * (MAX_FILE_BYTES + 1))
    with pytest.raises(ToolError, match="refuses files over 5 MiB"):
        await tools.call_tool("Edit", {"path": "big.txt", "old": "a", "new": "b"})
    (root / "near.txt").write_bytes(b"ab" * (MAX_FILE_BYTES // 2 - 10))
    with pytest.raises(ToolError, match="would be"):
        await tools.call_tool("Edit", {"path": "near.txt", "old": "b", "new": "bb", "replace_all": True})
    assert (root / "e.txt").read_bytes() == b"line one\r\nline two\r\n"


@pytest.mark.anyio
async def test_edit_keeps_undecodable_bytes_and_mode(tools: BuiltinTools, root: Path) -> None:
    target = root / "latin.txt"
    target.write_bytes(b"caf\xe9 = 1\nname = old\n")
    target.chmod(0o604)
    await text_of(tools, "Edit", path="latin.txt", old="old", new="new")
    assert target.read_bytes() == b"caf\xe9 = 1\nname = new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o604


@pytest.mark.anyio
async def test_edit_failure_is_atomic(
    tools: BuiltinTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = root / "e.txt"
    target.write_text("before")

    def boom(*args: Any, **kwargs: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(ToolError, match="No space"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "before", "new": "after"})
    monkeypatch.undo()
    assert target.read_text() == "before"
    assert [p.name for p in root.iterdir()] == ["e.txt"]


# --- ownership, special bits, xattrs, hard links, concurrency, odd targets --------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("tool", ["Write", "Edit"])
async def test_writes_keep_owner_group_and_xattrs_and_clear_setuid(
    tools: BuiltinTools, root: Path, tool: str
) -> None:
    if os.geteuid() != 0:
        pytest.fail("this test gives a file to uid 1000: run it as root (as CI does)")
    target = root / "owned.sh"
    target.write_text("echo old\n")
    os.chown(target, 1000, 1000)
    target.chmod(0o6750)
    os.setxattr(target, "user.origin", b"kept")
    arguments = {"content": "echo new\n"} if tool == "Write" else {"old": "old", "new": "new"}
    await text_of(tools, tool, path="owned.sh", **arguments)
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (1000, 1000)
    assert stat.S_IMODE(info.st_mode) == 0o750
    assert os.getxattr(target, "user.origin") == b"kept"
    assert target.read_text() == "echo new\n"


@pytest.mark.anyio
async def test_edit_of_a_hard_linked_file_changes_every_name(tools: BuiltinTools, root: Path) -> None:
    first = root / "first.txt"
    first.write_text("alpha beta\n")
    os.link(first, root / "second.txt")
    await text_of(tools, "Edit", path="first.txt", old="beta", new="gamma")
    assert (root / "second.txt").read_text() == "alpha gamma\n"
    assert first.stat().st_ino == (root / "second.txt").stat().st_ino
    await text_of(tools, "Write", path="second.txt", content="short\n")
    assert first.read_text() == "short\n"


@pytest.mark.anyio
async def test_concurrent_edits_of_one_file_all_land(tools: BuiltinTools, root: Path) -> None:
    import anyio

    target = root / "shared.txt"
    target.write_text("".join(f"row {n:04d} " + "y" * 60 + "\n" for n in range(3000)))
    outcomes: list[str] = []

    async def edit(n: int) -> None:
        outcomes.append(
            await text_of(tools, "Edit", path="shared.txt", old=f"row {n:04d} ", new=f"ROW {n:04d} ")
        )

    async with anyio.create_task_group() as group:
        for n in range(0, 3000, 100):
            group.start_soon(edit, n)
    assert len(outcomes) == 30 and all(o.startswith("OK: replaced 1 occurrence") for o in outcomes)
    text = target.read_text()
    assert all(f"ROW {n:04d} " in text for n in range(0, 3000, 100))


@pytest.mark.anyio
async def test_writing_the_root_or_a_socket_says_what_it_is(tools: BuiltinTools, root: Path) -> None:
    import socket

    with pytest.raises(ToolError) as caught:
        await tools.call_tool("Write", {"path": ".", "content": "x"})
    assert "is the root directory, not a file" in str(caught.value)
    assert "outside" not in str(caught.value)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(root / "agent.sock"))
    try:
        for tool, extra in (("Read", {}), ("Edit", {"old": "a", "new": "b"}), ("Write", {"content": "x"})):
            with pytest.raises(ToolError) as caught:
                await tools.call_tool(tool, {"path": "agent.sock", **extra})
            assert "'agent.sock' is a socket, not a regular file" in str(caught.value), tool
    finally:
        listener.close()


@pytest.mark.anyio
async def test_read_result_is_bounded_in_wire_bytes(tools: BuiltinTools, root: Path) -> None:
    """Even the largest budget of control characters (six bytes each in JSON) fits a frame."""
    import json

    (root / "controls.txt").write_bytes((b"\x01\x02\x03\xff" * 30 + b"\n") * 50_000)
    text = await call_with_budget(tools, "Read", MAX_BUDGET, path="controls.txt", limit=1_000_000)
    assert len(json.dumps(text, ensure_ascii=False).encode()) <= 6 * 1024 * 1024 + 200
    assert "more follow: call Read with offset=" in text
    following = int(text.rsplit("offset=", 1)[1].split()[0])
    assert text.count("\n") >= following > 1000


@pytest.mark.anyio
async def test_writes_drop_file_capabilities(tools: BuiltinTools, root: Path) -> None:
    target = root / "tool"
    target.write_bytes(b"#!/bin/sh\n")
    # VFS_CAP_REVISION_2 granting CAP_NET_RAW (bit 13), permitted and effective.
    capability = bytes.fromhex("01000002" + "00200000" + "00000000" + "00000000" + "00000000")
    os.setxattr(target, "security.capability", capability)
    await text_of(tools, "Write", path="tool", content="#!/bin/sh\necho new\n")
    assert "security.capability" not in os.listxattr(target)


@pytest.mark.anyio
@pytest.mark.parametrize("long_at", [0, 1, 2, 999])
async def test_read_cuts_exactly_the_lines_past_the_show_limit(
    tools: BuiltinTools, root: Path, long_at: int
) -> None:
    # Lines of LINE_SHOW_CHARS bytes are shown whole; one byte more and the line is cut,
    # wherever it lies among the short ones (the scan jumps from line start to line start).
    lines = ["s" * (index % 70) if index % 3 else "e" * LINE_SHOW_CHARS for index in range(1000)]
    lines[long_at] = "L" * (LINE_SHOW_CHARS + 1)
    (root / "mixed.txt").write_text("\n".join(lines) + "\n")
    text = await call_with_budget(tools, "Read", MAX_BUDGET, path="mixed.txt", limit=2000)
    shown = text.split("\n")
    assert shown[long_at].startswith("L" * LINE_SHOW_CHARS + " [awf-mcp: line")
    assert [line for index, line in enumerate(shown[:1000]) if index != long_at] == [
        line for index, line in enumerate(lines) if index != long_at
    ]
    exact = "\n".join("e" * LINE_SHOW_CHARS for _ in range(50))
    (root / "exact.txt").write_text(exact)
    assert await call_with_budget(tools, "Read", MAX_BUDGET, path="exact.txt") == exact


def test_the_long_line_scan_agrees_with_its_definition() -> None:
    import random
    import re

    from awf_mcp.builtins.reading import _has_long_line

    longer = re.compile(rb"[^\n]{%d}" % (LINE_SHOW_CHARS + 1))
    sizes = [0, 1, LINE_SHOW_CHARS - 1, LINE_SHOW_CHARS, LINE_SHOW_CHARS + 1, 3 * LINE_SHOW_CHARS]
    chooser = random.Random(14)
    for _ in range(2000):
        parts = [b"x" * chooser.choice(sizes) for _ in range(chooser.randint(0, 6))]
        window = b"\n".join(parts) + chooser.choice([b"", b"\n", b"\r\n"])
        assert _has_long_line(window) == (longer.search(window) is not None), [len(p) for p in parts]


@pytest.mark.anyio
@pytest.mark.parametrize("nul_at", [0, 4096, 6000, BINARY_SNIFF_BYTES - 1])
@pytest.mark.parametrize("size", [20_000, 2 * 1024 * 1024])
async def test_read_sniffs_all_of_the_first_bytes_for_nul(
    tools: BuiltinTools, root: Path, nul_at: int, size: int
) -> None:
    # A NUL anywhere in the first BINARY_SNIFF_BYTES marks the file binary, whether it is read at
    # once (small) or through a stream (large), and on a file system whose blocks are 4 KiB.
    data = bytearray(b"text line\n" * (size // 10))
    data[nul_at] = 0
    (root / "blob").write_bytes(bytes(data))
    binary = f"'blob': binary file, {len(data):,} bytes (not shown)"
    assert await text_of(tools, "Read", path="blob") == binary
    data[nul_at] = ord("x")
    data[BINARY_SNIFF_BYTES] = 0  # one byte further on: text
    (root / "blob").write_bytes(bytes(data))
    first = "xext line\n" if nul_at == 0 else "text line\n"
    assert (await text_of(tools, "Read", path="blob", limit=2)).startswith(first)


@pytest.mark.anyio
@pytest.mark.parametrize("lines", [READ_DEFAULT_LINES - 1, READ_DEFAULT_LINES, READ_DEFAULT_LINES + 1])
@pytest.mark.parametrize("ending", ["\n", "", "\n\n"])
async def test_read_stops_at_the_limit_or_the_end_of_the_file(
    tools: BuiltinTools, root: Path, lines: int, ending: str
) -> None:
    body = "\n".join(f"{n:05d} some text" for n in range(lines)) + ending
    (root / "n.txt").write_text(body)
    every = body.splitlines(keepends=True)
    text = await call_with_budget(tools, "Read", MAX_BUDGET, path="n.txt")
    if len(every) <= READ_DEFAULT_LINES:
        assert text == body
    else:
        shown = "".join(every[:READ_DEFAULT_LINES])
        assert text == (
            f"{shown}\n[awf-mcp: showing lines 1-{READ_DEFAULT_LINES} (limit={READ_DEFAULT_LINES}); "
            f"more follow: call Read with offset={READ_DEFAULT_LINES} to continue]"
        )


@pytest.mark.anyio
async def test_a_large_file_read_from_its_start_pages_as_a_small_one(tools: BuiltinTools, root: Path) -> None:
    # Up to a mebibyte a file is read at once; a larger one through a stream: the same page.
    line = "y" * 99 + "\n"
    for count in (10_000, 30_000):
        (root / "big.txt").write_text(line * count)
        text = await call_with_budget(tools, "Read", MAX_BUDGET, path="big.txt", limit=5_000)
        assert text == line * 5_000 + "\n[awf-mcp: showing lines 1-5000 (limit=5000); more follow: " + (
            "call Read with offset=5000 to continue]"
        )


def test_the_line_end_search_agrees_with_its_definition() -> None:
    import random

    from awf_mcp.builtins import reading

    chooser = random.Random(2000)
    reach = reading._MASKED_SEARCH_BYTES
    for _ in range(60):
        width = chooser.choice([0, 1, 3, 40, 200, reach // 50])  # bytes per newline, about
        size = chooser.choice([0, 1, 100, reach - 1, reach, reach + 1, 2 * reach])
        cut = 256 // (width + 1)  # random bytes below it become newlines
        data = chooser.randbytes(size).translate(bytes(10 if byte < cut else 122 for byte in range(256)))
        lines = data.count(b"\n")
        ends = [len(part) for part in data.split(b"\n")[:-1]]
        for index in range(1, len(ends)):
            ends[index] += ends[index - 1] + 1
        for count in {1, 2, lines - 1, lines, lines + 1, chooser.randint(1, lines + 2), 8192, 8193}:
            if count >= 1:
                expected = ends[count - 1] + 1 if len(ends) >= count else len(data)
                assert reading._end_of_line(data, count) == expected, (len(data), lines, count)
