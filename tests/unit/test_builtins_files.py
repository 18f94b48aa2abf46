"""Read, Write and Edit called directly, plus the provider's definitions and registration hook."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.builtins import BuiltinTools, awf_mcp_register_tools
from awf_mcp.builtins.limits import MAX_FILE_BYTES, READ_DEFAULT_LINES
from awf_mcp.ports import PluginContext, ToolError, ToolProvider, ToolResult

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


def test_definitions_are_sorted_strict_schemas_with_annotations(tools: BuiltinTools) -> None:
    definitions = tools.list_tools()
    assert [d.name for d in definitions] == ["Bash", "Edit", "Glob", "Grep", "Read", "Write"]
    expected_args = {
        "Read": {"path", "offset", "limit"},
        "Write": {"path", "content"},
        "Edit": {"path", "old", "new", "replace_all"},
        "Bash": {"command", "cwd", "timeout_seconds"},
        "Glob": {"pattern", "cwd"},
        "Grep": {"pattern", "path", "glob", "output_mode", "case_insensitive"},
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
async def test_read_caps_at_five_mib(tools: BuiltinTools, root: Path) -> None:
    line = "y" * 1023 + "\n"
    (root / "big.txt").write_text(line * (6 * 1024))
    text = await text_of(tools, "Read", path="big.txt", limit=100_000)
    assert len(text.encode()) < MAX_FILE_BYTES + 1000
    assert "offset=5120" in text
    (root / "oneline.txt").write_text("z" * (MAX_FILE_BYTES + 10))
    text = await text_of(tools, "Read", path="oneline.txt")
    assert "longer than 5 MiB" in text and "offset=1" in text


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
        "OK: replaced 1 occurrence in e.py"
    )
    assert (root / "e.py").read_text() == "a = 1\nb = 3\n"


@pytest.mark.anyio
async def test_edit_ambiguous_needs_replace_all(tools: BuiltinTools, root: Path) -> None:
    (root / "e.txt").write_text("x x x")
    with pytest.raises(ToolError, match="occurs 3 times"):
        await tools.call_tool("Edit", {"path": "e.txt", "old": "x", "new": "y"})
    assert (root / "e.txt").read_text() == "x x x"
    text = await text_of(tools, "Edit", path="e.txt", old="x", new="y", replace_all=True)
    assert text == "OK: replaced 3 occurrences in e.txt"
    assert (root / "e.txt").read_text() == "y y y"


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
    import json

    (root / "controls.txt").write_bytes((b"\x01\x02\x03\xff" * 30 + b"\n") * 50_000)
    result = await tools.call_tool("Read", {"path": "controls.txt", "limit": 1_000_000})
    text = result.content[0].text
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
