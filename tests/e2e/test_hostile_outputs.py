"""Hostile outputs: names that are not UTF-8, strings no encoder accepts, results over any frame.

Such names arrive with cloned repositories. Every tool shows each undecodable byte as
``\\xNN`` and accepts the name back in that form; a plugin returning lone surrogates gets
them escaped the same way. After each call the server still serves.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.harness import RawServer, mcp_session, text_of

pytestmark = [pytest.mark.e2e]

SHOWN = "caf\\xe9.txt"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"caf\xe9.txt"), "wb") as handle:
        handle.write(b"the needle\n")
    (root / "plain.txt").write_text("nothing here\n")
    os.symlink(b"/nonexistent-\xff/target", os.path.join(os.fsencode(root), b"lnk"))
    return root


@pytest.mark.anyio
async def test_grep_glob_and_read_show_and_take_back_an_undecodable_name(tree: Path) -> None:
    async with mcp_session("--root", str(tree)) as session:
        found = await session.call_tool("Grep", {"pattern": "needle", "output_mode": "files_with_matches"})
        assert text_of(found).strip() == SHOWN
        content = await session.call_tool("Grep", {"pattern": "needle", "output_mode": "content"})
        assert text_of(content).startswith(f"{SHOWN}:1:")
        listed = await session.call_tool("Glob", {"pattern": "*"})
        assert not listed.is_error and set(text_of(listed).split()) >= {SHOWN, "plain.txt"}
        read = await session.call_tool("Read", {"path": SHOWN})
        assert not read.is_error and "the needle" in text_of(read)
        refused = await session.call_tool("Read", {"path": "lnk"})
        assert refused.is_error and "\\xff" in text_of(refused)
        still = await session.call_tool("Read", {"path": "plain.txt"})
        assert "nothing here" in text_of(still)


@pytest.mark.usefixtures("testkit")
def test_no_frame_over_the_message_limit_ever_leaves_the_server(tmp_path: Path) -> None:
    from awf_mcp.wire.framing import MAX_MESSAGE_BYTES

    with RawServer("--no-builtins", "--root", str(tmp_path)) as server:
        server.initialize()
        reply = server.request(
            "tools/call", {"name": "testkit_big_image", "arguments": {"size": 30 * 1024 * 1024}}, timeout=60
        )
        assert reply["result"]["isError"] is True
        assert "over the" in reply["result"]["content"][0]["text"]
        assert len(str(reply)) < MAX_MESSAGE_BYTES
        small = server.request("tools/call", {"name": "testkit_big_image", "arguments": {"size": 1000}})
        assert small["result"]["content"][0]["data"] == "A" * 1000
