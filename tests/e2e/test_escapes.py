"""The escape corpus end to end: a real SDK client against ``awf-mcp serve``, every path argument.

Every entry of tests/data/escape_corpus.json is fed to every path-taking
argument of every built-in (Read path, Write path, Edit path, Bash cwd, Glob
cwd, Grep path), and as Glob's pattern. Each call must come back refused (an
``isError`` result; for the Glob pattern, a refusal or a listing of nothing
from outside), no result may show the planted secret, a system file or the
Bash probe's output, and afterwards the whole temporary tree (root, outside
directory, look-alike sibling) must be byte-for-byte what it was, with nothing
created in /dev/shm or the filesystem root and /etc/passwd unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.helpers.escapes import (
    GLOB_PATTERN_FORMS,
    PATH_ARGUMENTS,
    build_world,
    escape_paths,
    glob_pattern_calls,
    leaks,
    refused_calls,
)
from tests.helpers.harness import mcp_session, report, snapshot, text_of

pytestmark = pytest.mark.e2e

NO_PLUGINS = {"AWF_MCP_NO_PLUGINS": "1"}
PLANTED_ELSEWHERE = (Path("/dev/shm/awf-escape.txt"), Path("/escaped-marker"), Path("/etc/escaped-marker"))


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.anyio
async def test_every_escape_is_refused_end_to_end(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    world = build_world(tmp_path)
    corpus = escape_paths(world)
    before = snapshot(world.base)
    passwd = digest(Path("/etc/passwd"))
    accepted: list[tuple[str, str, str, str]] = []
    leaked: list[tuple[str, str, str, str]] = []
    calls = 0
    async with mcp_session("--root", str(world.root), cwd=world.root, env=NO_PLUGINS) as session:
        for path in corpus:
            for tool, argument, arguments in refused_calls(path):
                result = await session.call_tool(tool, arguments)
                calls += 1
                message = text_of(result)
                if not result.is_error:
                    accepted.append((tool, argument, path[:80], message[:200]))
                if leaks(world, message):
                    leaked.append((tool, argument, path[:80], message[:200]))
            for arguments in glob_pattern_calls(path):
                result = await session.call_tool("Glob", arguments)
                calls += 1
                message = text_of(result)
                if leaks(world, message) or (not result.is_error and "secret" in message):
                    leaked.append(("Glob", "pattern", arguments["pattern"][:80], message[:200]))
        assert text_of(await session.call_tool("Read", {"path": "sub/inside.txt"})) == "inside\n"
    assert accepted == []
    assert leaked == []
    assert snapshot(world.base) == before
    assert digest(Path("/etc/passwd")) == passwd
    assert [path for path in PLANTED_ELSEWHERE if path.exists()] == []
    report(
        request.config,
        f"escape corpus: {len(corpus)} paths x {len(PATH_ARGUMENTS)} path arguments "
        f"+ {len(corpus)} x {len(GLOB_PATTERN_FORMS)} Glob patterns = {calls} calls through "
        "awf-mcp serve, all refused",
    )
