"""The sandbox: resolution rules, and the escape corpus tried in-process against every path argument.

The corpus is tests/data/escape_corpus.json (shared with tests/e2e/test_escapes.py,
which runs it through a real server). Each escape attempt must be refused (a
ToolError or an ``isError`` result), show nothing from outside, and leave the
directory outside the root, and the root itself, exactly as they were.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from awf_mcp.builtins import BuiltinTools, PathRefused, Sandbox
from awf_mcp.ports import CallContext, ToolError, bind_call_context, unbind_call_context
from tests.helpers.escapes import (
    EscapeWorld,
    build_world,
    escape_paths,
    glob_pattern_calls,
    leaks,
    refused_calls,
)
from tests.helpers.harness import snapshot
from tests.helpers.providers import call_outcome


@pytest.fixture
def world(tmp_path: Path) -> EscapeWorld:
    """A root with symlinks pointing out, and a sibling directory holding a secret."""
    return build_world(tmp_path)


@pytest.mark.anyio
async def test_every_escape_is_refused_by_every_path_argument(world: EscapeWorld) -> None:
    tools = BuiltinTools(Sandbox([str(world.root)]))
    corpus = escape_paths(world)
    assert len(set(corpus)) == len(corpus) >= 60
    before = snapshot(world.base)
    failures = []
    for path in corpus:
        for name, argument, arguments in refused_calls(path):
            refused, message = await call_outcome(tools, name, arguments)
            if not refused or leaks(world, message):
                failures.append((name, argument, path[:60], message[:200]))
    await tools.close()
    assert failures == []
    assert snapshot(world.base) == before


@pytest.mark.anyio
async def test_escapes_as_glob_patterns_never_list_outside(world: EscapeWorld) -> None:
    tools = BuiltinTools(Sandbox([str(world.root)]))
    for path in escape_paths(world):
        for arguments in glob_pattern_calls(path):
            refused, message = await call_outcome(tools, "Glob", arguments)
            assert not leaks(world, message), (arguments, message)
            assert refused or "secret" not in message, (arguments, message)


@pytest.mark.anyio
async def test_refusal_message_names_argument_and_root(world: EscapeWorld) -> None:
    root = world.root
    tools = BuiltinTools(Sandbox([str(root)]))
    with pytest.raises(PathRefused) as caught:
        await tools.call_tool("Read", {"path": "../outside/secret.txt"})
    assert str(caught.value).startswith(f"path '../outside/secret.txt' is outside the root {root}")
    with pytest.raises(PathRefused, match="NUL byte"):
        await tools.call_tool("Read", {"path": "a\x00b"})
    with pytest.raises(PathRefused, match="too long"):
        await tools.call_tool("Read", {"path": "a/" * 2500})


@pytest.mark.anyio
async def test_walks_never_reach_outside_through_links(world: EscapeWorld) -> None:
    tools = BuiltinTools(Sandbox([str(world.root)]))
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


def test_open_file_refuses_a_component_swapped_for_a_link(world: EscapeWorld) -> None:
    root, outside = world.root, world.outside
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


def test_bash_cwd_escape_runs_nothing(world: EscapeWorld) -> None:
    tools = BuiltinTools(Sandbox([str(world.root)]))

    async def main() -> None:
        with pytest.raises(ToolError):
            await tools.call_tool("Bash", {"command": "touch ran", "cwd": "link_out_dir"})

    anyio.run(main)
    assert not (world.outside / "ran").exists()
    assert not (world.root / "ran").exists()


def test_a_link_the_kernel_will_not_read_is_refused_not_raised(tmp_path: Path) -> None:
    """/proc/1/root cannot be read through readlink(2) here; that is a refusal, not a PermissionError."""
    sandbox = Sandbox([str(tmp_path)])
    with pytest.raises(PathRefused):
        sandbox.resolve("/proc/1/root/etc/passwd")
    (tmp_path / "link_to_init_root").symlink_to("/proc/1/root")
    with pytest.raises(PathRefused):
        sandbox.resolve("link_to_init_root/etc/passwd")


def test_quoted_paths_escape_bytes_that_are_not_utf8() -> None:
    from awf_mcp.builtins.sandbox import quote_path

    name = os.fsdecode(b"/x/caf\xe9\n.txt")
    quoted = quote_path(name)
    assert quoted == "'/x/caf\\xe9\\n.txt'"
    quoted.encode("utf-8")
    assert quote_path("\ud800") == "'\\ud800'"


def test_a_trailing_slash_needs_a_directory(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / ".env").write_text("API_KEY=1")
    (root / "dir").mkdir()
    sandbox = Sandbox([str(root)])
    for path in (".env/", ".env/.", ".env/./", ".env/x", ".env/../.env", "newdir/"):
        with pytest.raises(PathRefused):
            sandbox.resolve(path)
    assert sandbox.resolve("dir/") == str(root / "dir")
    assert sandbox.resolve("dir/.") == str(root / "dir")


@pytest.mark.anyio
async def test_trailing_slash_calls_are_refused_and_create_nothing(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / ".env").write_text("API_KEY=1")
    tools = BuiltinTools(Sandbox([str(root)]))
    for name, arguments in (
        ("Read", {"path": ".env/"}),
        ("Read", {"path": ".env/."}),
        ("Edit", {"path": ".env/", "old": "1", "new": "2"}),
        ("Write", {"path": "newdir/", "content": "x"}),
    ):
        refused, message = await call_outcome(tools, name, arguments)
        assert refused and "API_KEY" not in message, (name, arguments, message)
    assert (root / ".env").read_text() == "API_KEY=1"
    assert sorted(p.name for p in root.iterdir()) == [".env"]


@pytest.mark.anyio
async def test_the_path_policy_sees_resolved_paths_and_walked_files(tmp_path: Path) -> None:
    from awf_mcp.ports import CallContext, bind_call_context, unbind_call_context

    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / ".env").write_text("API_KEY=1\n")
    (root / "sub" / "ok.txt").write_text("API_KEY? no\n")
    (root / ".gitignore").write_text(".env\n")
    asked: list[str] = []

    def denied(path: str) -> str | None:
        asked.append(path)
        return "secrets" if path.endswith("/.env") else None

    tools = BuiltinTools(Sandbox([str(root)]))
    token = bind_call_context(CallContext(tool_name="t", path_denied=denied))
    try:
        for name, arguments in (
            ("Read", {"path": "sub/../.env"}),
            ("Grep", {"pattern": "API_KEY", "path": ".env"}),
            ("Bash", {"command": "true", "cwd": ".env"}),
        ):
            refused, message = await call_outcome(tools, name, arguments)
            assert refused and "is denied: secrets" in message, (name, message)
        for arguments in (
            {"pattern": "API_KEY", "glob": ".env"},
            {"pattern": "API_KEY", "include_ignored": True},
        ):
            refused, message = await call_outcome(tools, "Grep", arguments)
            assert "API_KEY=1" not in message, (arguments, message)
        refused, message = await call_outcome(tools, "Glob", {"pattern": "**/*", "include_ignored": True})
        assert ".env" not in message.replace(".gitignore", ""), message
    finally:
        unbind_call_context(token)
    assert str(root / ".env") in asked


def test_a_call_with_client_roots_is_confined_to_them(tmp_path: Path) -> None:
    configured, client = tmp_path / "configured", tmp_path / "client"
    for place in (configured, client):
        place.mkdir()
        (place / "f.txt").write_text(place.name, encoding="utf-8")
    sandbox = Sandbox([str(configured)])
    context = CallContext(tool_name="Read", roots=(str(client.resolve()),))
    token = bind_call_context(context)
    try:
        assert sandbox.resolve("f.txt") == str((client / "f.txt").resolve())
        with pytest.raises(PathRefused, match="outside the root"):
            sandbox.resolve(str(configured / "f.txt"))
        assert context.refused_outside_roots
    finally:
        unbind_call_context(token)
    # Outside that call, the configured roots again.
    assert sandbox.resolve("f.txt") == str((configured / "f.txt").resolve())
    assert sandbox.configured_roots == (str(configured.resolve()),)


@pytest.fixture
def resolves(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The arguments Sandbox.resolve was called with (it still runs)."""
    seen: list[str] = []
    resolve = Sandbox.resolve

    def counted(self: Sandbox, arg: object, *args: object, **kwargs: object) -> str:
        seen.append(str(arg))
        return resolve(self, arg, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Sandbox, "resolve", counted)
    return seen


@pytest.mark.anyio
@pytest.mark.skipif(os.uname().sysname != "Linux", reason="openat2 is Linux's")
async def test_read_opens_a_path_without_links_in_one_step(tmp_path: Path, resolves: list[str]) -> None:
    root = tmp_path / "root"
    (root / "real").mkdir(parents=True)
    (root / "real" / "f.txt").write_text("text\n")
    (root / "alias").symlink_to("real")
    tools = BuiltinTools(Sandbox([str(root)]))
    for plain in ("real/f.txt", "./real//f.txt", str(root / "real" / "f.txt")):
        assert await call_outcome(tools, "Read", {"path": plain}) == (False, "text\n")
    assert resolves == []
    for resolved in ("alias/f.txt", "real/../real/f.txt", "real/f.txt/", "real"):
        await call_outcome(tools, "Read", {"path": resolved})
    assert resolves == ["alias/f.txt", "real/../real/f.txt", "real/f.txt/", "real"]


@pytest.mark.anyio
async def test_a_component_swapped_for_a_link_between_reads_is_refused(world: EscapeWorld) -> None:
    root, outside = world.root, world.outside
    tools = BuiltinTools(Sandbox([str(root)]))
    (root / "swap").mkdir()
    (root / "swap" / "secret.txt").write_text("inside\n")
    assert await call_outcome(tools, "Read", {"path": "swap/secret.txt"}) == (False, "inside\n")
    (root / "swap" / "secret.txt").unlink()
    (root / "swap").rmdir()
    (root / "swap").symlink_to(outside)
    refused, message = await call_outcome(tools, "Read", {"path": "swap/secret.txt"})
    assert refused and "is outside the root" in message, message
    assert not leaks(world, message)
    (root / "swap").unlink()
    (root / "elsewhere").mkdir()
    (root / "elsewhere" / "secret.txt").write_text("moved\n")
    (root / "swap").symlink_to("elsewhere")  # a link inside the root is followed, as always
    assert await call_outcome(tools, "Read", {"path": "swap/secret.txt"}) == (False, "moved\n")


@pytest.mark.anyio
async def test_read_answers_alike_with_and_without_openat2(
    world: EscapeWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    from awf_mcp.builtins import sandbox as sandbox_module

    root = world.root
    (root / "dir").mkdir()
    (root / "dir" / "f.txt").write_text("one\ntwo\n")
    (root / "empty").write_text("")
    os.mkfifo(root / "fifo")
    asked: list[str] = []

    def denied(path: str) -> str | None:
        asked.append(path)
        return "not this one" if path.endswith("/f.txt") else None

    tools = BuiltinTools(Sandbox([str(root)]))
    paths = [
        "dir/f.txt",
        "empty",
        "fifo",
        "dir",
        "missing",
        "dir/f.txt/x",
        "dir/missing",
        *escape_paths(world),
    ]

    async def answers() -> list[tuple[bool, str]]:
        token = bind_call_context(CallContext(tool_name="Read", path_denied=denied))
        try:
            return [await call_outcome(tools, "Read", {"path": path}) for path in paths]
        finally:
            unbind_call_context(token)

    quick = await answers()
    asked_quick, asked[:] = asked[:], []
    monkeypatch.setattr(sandbox_module, "_openat2_missing", True)
    assert await answers() == quick
    assert asked == asked_quick  # the path policy is asked once a call, about the same paths
    assert quick[:3] == [
        (True, "path 'dir/f.txt' is denied: not this one"),
        (False, "(empty file)"),
        (True, "'fifo' is a FIFO (named pipe), not a regular file"),
    ]
