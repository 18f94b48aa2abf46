"""The built-in tools end to end: a real ``awf-mcp serve`` subprocess, driven by the SDK's client.

Plugins are turned off (``AWF_MCP_NO_PLUGINS=1``) so only the built-ins are
served, confined to a per-test root given with ``--root``.
"""

from __future__ import annotations

import base64
import time
import uuid
from pathlib import Path

import anyio
import pytest

from tests.helpers.harness import marked_pids, mcp_session, text_of

pytestmark = pytest.mark.e2e

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40
NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}


@pytest.mark.anyio
async def test_every_builtin_through_a_real_server(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
    (root / "logo.png").write_bytes(PNG)
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
        listed = await session.list_tools()
        names = [tool.name for tool in listed.tools]
        assert names == ["Bash", "BashOutput", "Edit", "Glob", "Grep", "KillShell", "Read", "Write"]
        read_tool = next(tool for tool in listed.tools if tool.name == "Read")
        assert read_tool.annotations is not None and read_tool.annotations.read_only_hint is True

        written = await session.call_tool("Write", {"path": "notes/todo.md", "content": "- ship it\n"})
        assert not written.is_error and text_of(written) == "OK: created notes/todo.md (10 bytes)"

        edited = await session.call_tool("Edit", {"path": "src/app.py", "old": "'hello'", "new": "'bye'"})
        assert not edited.is_error and "replaced 1 occurrence" in text_of(edited)

        read = await session.call_tool("Read", {"path": "src/app.py"})
        assert text_of(read) == "def main():\n    return 'bye'\n"

        image = await session.call_tool("Read", {"path": "logo.png"})
        assert not image.is_error
        (item,) = image.content
        assert item.type == "image" and item.mime_type == "image/png"
        assert base64.b64decode(item.data) == PNG

        globbed = await session.call_tool("Glob", {"pattern": "**/*.{py,md}"})
        assert sorted(text_of(globbed).split("\n")) == ["notes/todo.md", "src/app.py"]

        grepped = await session.call_tool("Grep", {"pattern": "bye", "output_mode": "content"})
        assert text_of(grepped) == "src/app.py:2:    return 'bye'"

        ran = await session.call_tool("Bash", {"command": "cat notes/todo.md; exit 4"})
        assert ran.is_error and text_of(ran) == "exit code 4\n--- stdout ---\n- ship it"


@pytest.mark.anyio
async def test_escape_attempt_is_an_error_result(root: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    (root / "peek").symlink_to(tmp_path / "secret.txt")
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
        for arguments in (
            {"path": "../secret.txt"},
            {"path": "peek"},
            {"path": f"/proc/self/root{tmp_path}/secret.txt"},
        ):
            result = await session.call_tool("Read", arguments)
            assert result.is_error
            assert text_of(result).startswith(f"path '{arguments['path']}' is outside the root {root}")
        written = await session.call_tool("Write", {"path": "../planted.txt", "content": "x"})
        assert written.is_error and not (tmp_path / "planted.txt").exists()


@pytest.mark.anyio
async def test_client_cancellation_kills_the_bash_process_group(root: Path) -> None:
    marker = f"awf-e2e-{uuid.uuid4().hex}"
    command = f"sh -c 'sleep 300; true {marker}' & sleep 300; true {marker}"
    async with mcp_session("--root", str(root), cwd=root, env=NO_PLUGINS) as session:
        with anyio.move_on_after(2):
            await session.call_tool("Bash", {"command": command, "timeout_seconds": 600})
        assert marked_pids(marker), "the command should have been running"
        deadline = time.monotonic() + 10
        while marked_pids(marker) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert marked_pids(marker) == []
        still_serving = await session.call_tool("Bash", {"command": "echo alive"})
        assert "alive" in text_of(still_serving)
