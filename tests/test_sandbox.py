"""The sandbox: resolution rules, and an escape corpus tried against every path argument of every tool.

Each escape attempt must be refused (a ToolError or an ``isError`` result) and
leave the directory outside the root, and the root itself, exactly as they were.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.builtins import BuiltinTools, PathRefused, Sandbox
from awf_mcp.ports import ToolError, ToolResult


@pytest.fixture
def world(tmp_path: Path) -> dict[str, Path]:
    """A root with symlinks pointing out, and a sibling directory holding a secret."""
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET\n")
    (root / "sub").mkdir()
    (root / "sub" / "inside.txt").write_text("inside\n")
    (root / "link_out_file").symlink_to(outside / "secret.txt")
    (root / "link_out_dir").symlink_to(outside)
    (root / "sub" / "link_up").symlink_to("../../outside")
    (root / "loop_a").symlink_to("loop_b")
    (root / "loop_b").symlink_to("loop_a")
    (root / "dangling_out").symlink_to(outside / "not-yet")
    (root / "link_to_slash").symlink_to("/")
    return {"root": root, "outside": outside}


def escape_corpus(root: Path, outside: Path) -> list[str]:
    """Distinct ways of naming something outside ``root`` (or of smuggling a path past the checks)."""
    return [
        "../outside/secret.txt",
        "../../../../../../../../etc/passwd",
        str(outside / "secret.txt"),
        "/etc/passwd",
        "//etc//passwd",
        "link_out_file",
        "link_out_dir/secret.txt",
        "link_out_dir/created-through-link.txt",
        "sub/link_up/secret.txt",
        "loop_a",
        "loop_a/child",
        "dangling_out",
        "link_to_slash/etc/passwd",
        f"/proc/self/root{outside}/secret.txt",
        "/proc/self/root/etc/passwd",
        "/proc/self/cwd/../../../../etc/passwd",
        "sub/../../outside/secret.txt",
        "./../outside",
        f"{root}/../outside/secret.txt",
        "does-not-exist/../../outside/new.txt",
        "secret\x00.txt",
        "a/" * 2500,
        "x" * 300,
        "\u2024\u2024/\u2024\u2024/etc/passwd",
        "\u2025/outside/secret.txt",
        "\uff0e\uff0e/outside/secret.txt",
        "..\\..\\etc\\passwd",
        "~/../../etc/passwd",
    ]


def snapshot(*directories: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry below ``directories`` (links not followed), with content or link target."""
    state: dict[str, tuple[str, bytes | str]] = {}
    for directory in directories:
        for dirpath, dirnames, filenames in os.walk(directory):
            for name in dirnames + filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    state[path] = ("link", os.readlink(path))
                elif os.path.isdir(path):
                    state[path] = ("dir", "")
                else:
                    state[path] = ("file", Path(path).read_bytes())
    return state


def attempts(path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every tool call that feeds ``path`` to a path-taking argument."""
    yield "Read", {"path": path}
    yield "Write", {"path": path, "content": "pwned"}
    yield "Edit", {"path": path, "old": "TOP-SECRET", "new": "pwned"}
    yield "Bash", {"command": "touch escaped-marker; echo ran", "cwd": path}
    yield "Glob", {"pattern": "*", "cwd": path}
    yield "Grep", {"pattern": "SECRET", "path": path}


async def outcome(tools: BuiltinTools, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(refused, message) for one call."""
    try:
        result = await tools.call_tool(name, arguments)
    except ToolError as exc:
        return True, str(exc)
    assert isinstance(result, ToolResult)
    return result.is_error, "\n".join(item.text for item in result.content)


@pytest.mark.anyio
async def test_every_escape_is_refused_by_every_path_argument(world: dict[str, Path]) -> None:
    root, outside = world["root"], world["outside"]
    tools = BuiltinTools(Sandbox([str(root)]))
    corpus = escape_corpus(root, outside)
    assert len(set(corpus)) >= 20
    before = snapshot(root, outside)
    failures = []
    for path in corpus:
        for name, arguments in attempts(path):
            refused, message = await outcome(tools, name, arguments)
            if not refused or "TOP-SECRET" in message:
                failures.append((name, path[:60], message[:200]))
    await tools.close()
    assert failures == []
    assert snapshot(root, outside) == before


@pytest.mark.anyio
async def test_escapes_as_glob_patterns_never_list_outside(world: dict[str, Path]) -> None:
    root, outside = world["root"], world["outside"]
    tools = BuiltinTools(Sandbox([str(root)]))
    for path in escape_corpus(root, outside):
        for pattern in (path, path.rstrip("/") + "/*", path.rstrip("/") + "/**"):
            refused, message = await outcome(tools, "Glob", {"pattern": pattern})
            assert refused or message.startswith("No files match"), (pattern, message)
            assert "secret" not in message or refused


@pytest.mark.anyio
async def test_refusal_message_names_argument_and_root(world: dict[str, Path]) -> None:
    root = world["root"]
    tools = BuiltinTools(Sandbox([str(root)]))
    with pytest.raises(PathRefused) as caught:
        await tools.call_tool("Read", {"path": "../outside/secret.txt"})
    assert str(caught.value).startswith(f"path '../outside/secret.txt' is outside the root {root}")
    with pytest.raises(PathRefused, match="NUL byte"):
        await tools.call_tool("Read", {"path": "a\x00b"})
    with pytest.raises(PathRefused, match="too long"):
        await tools.call_tool("Read", {"path": "a/" * 2500})


@pytest.mark.anyio
async def test_walks_never_reach_outside_through_links(world: dict[str, Path]) -> None:
    tools = BuiltinTools(Sandbox([str(world["root"])]))
    listed = await tools.call_tool("Glob", {"pattern": "**/*"})
    text = listed.content[0].text
    assert "secret" not in text
    assert "link_out_file" not in text and "link_out_dir" not in text
    assert "sub/inside.txt" in text
    found = await tools.call_tool("Grep", {"pattern": "SECRET", "include_ignored": True})
    assert "TOP-SECRET" not in found.content[0].text
    assert found.content[0].text.startswith("No matches found")


def test_relative_paths_start_at_the_first_root_not_the_process_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(second)
    sandbox = Sandbox([str(first), str(second)])
    assert sandbox.resolve("a.txt") == str(first / "a.txt")
    assert sandbox.resolve(str(second / "b.txt")) == str(second / "b.txt")
    assert sandbox.display(str(first / "x" / "y")) == "x/y"
    assert sandbox.display(str(second / "b.txt")) == str(second / "b.txt")
    with pytest.raises(PathRefused, match="outside the roots"):
        sandbox.resolve(str(tmp_path / "third"))


def test_links_inside_the_root_and_new_paths_resolve(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "alias").symlink_to("real")
    sandbox = Sandbox([str(root)])
    assert sandbox.resolve("alias/new/deeper.txt") == str(root / "real" / "new" / "deeper.txt")
    assert sandbox.resolve("real/../real/./x") == str(root / "real" / "x")
    assert sandbox.resolve(".") == str(root)
    with pytest.raises(PathRefused, match=r"'\.\.' after"):
        sandbox.resolve("missing/../x")


def test_a_root_that_is_itself_a_link_is_resolved(tmp_path: Path) -> None:
    real = tmp_path / "real-root"
    real.mkdir()
    (tmp_path / "root-link").symlink_to(real)
    sandbox = Sandbox([str(tmp_path / "root-link")])
    assert sandbox.roots == (str(real),)
    assert sandbox.resolve(str(tmp_path / "root-link" / "f")) == str(real / "f")


def test_open_file_refuses_a_component_swapped_for_a_link(world: dict[str, Path]) -> None:
    root, outside = world["root"], world["outside"]
    sandbox = Sandbox([str(root)])
    (root / "swap").mkdir()
    (root / "swap" / "secret.txt").write_text("inside")
    checked = sandbox.resolve("swap/secret.txt")
    (root / "swap" / "secret.txt").unlink()
    (root / "swap").rmdir()
    (root / "swap").symlink_to(outside)
    with pytest.raises(OSError):
        sandbox.open_file(checked)


def test_sandbox_needs_existing_directories(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        Sandbox([])
    with pytest.raises(ValueError):
        Sandbox([str(tmp_path / "missing")])


def test_bash_cwd_escape_runs_nothing(world: dict[str, Path]) -> None:
    tools = BuiltinTools(Sandbox([str(world["root"])]))

    async def main() -> None:
        with pytest.raises(ToolError):
            await tools.call_tool("Bash", {"command": "touch ran", "cwd": "link_out_dir"})

    anyio.run(main)
    assert not (world["outside"] / "ran").exists()
    assert not (world["root"] / "ran").exists()
