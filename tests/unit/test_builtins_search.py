"""Glob and Grep called directly: matching, ordering, caps, .gitignore, context, modes."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.builtins import BuiltinTools, Sandbox
from awf_mcp.builtins.limits import GLOB_MAX_RESULTS, GREP_MAX_LINE_BYTES, LINE_SHOW_CHARS
from awf_mcp.builtins.patterns import expand_braces
from awf_mcp.ports import CallContext, ToolError, ToolResult, bind_call_context, unbind_call_context
from tests.helpers.providers import call_with_budget


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


async def lines_of(tools: BuiltinTools, name: str, **arguments: Any) -> list[str]:
    result = await tools.call_tool(name, arguments)
    assert isinstance(result, ToolResult) and not result.is_error, result.content
    return result.content[0].text.split("\n")


async def grep_with_budget(tools: BuiltinTools, budget: int, **arguments: Any) -> str:
    return await call_with_budget(tools, "Grep", budget, **arguments)


# --- patterns ---------------------------------------------------------------------------------------


def test_brace_expansion() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b{c,d}}/x") == ["a/x", "bc/x", "bd/x"]
    assert expand_braces("{solo}") == ["{solo}"]
    assert expand_braces("{unclosed,") == ["{unclosed,"]
    with pytest.raises(ToolError, match="more than"):
        expand_braces("{a,b,c,d}" * 6)


# --- Glob -------------------------------------------------------------------------------------------


def test_a_pathological_brace_pattern_is_refused_before_any_expansion() -> None:
    """A 3.8 KB pattern once took minutes of expansion; the cost is now known up front."""
    import time

    hostile = "{a,b}" * 9 + "/" + "/".join(["{" * 250] * 15)
    started = time.process_time()
    with pytest.raises(ToolError, match="nests braces more than 32 deep"):
        expand_braces(hostile)
    with pytest.raises(ToolError, match="more than 1000 alternatives"):
        expand_braces("{a,b}" * 11)
    with pytest.raises(ToolError, match="too large to expand"):
        expand_braces("{a,b}" * 9 + "x" * 1000)
    assert time.process_time() - started < 1.0


@pytest.mark.anyio
async def test_glob_double_star_and_braces(tools: BuiltinTools, root: Path) -> None:
    make(
        root, {"a.py": "", "src/b.py": "", "src/deep/c.py": "", "src/d.ts": "", "src/e.tsx": "", "x.txt": ""}
    )
    assert sorted(await lines_of(tools, "Glob", pattern="**/*.py")) == ["a.py", "src/b.py", "src/deep/c.py"]
    assert sorted(await lines_of(tools, "Glob", pattern="src/*.{ts,tsx}")) == ["src/d.ts", "src/e.tsx"]
    assert await lines_of(tools, "Glob", pattern="*.py") == ["a.py"]
    assert sorted(await lines_of(tools, "Glob", pattern="*.py", cwd="src")) == ["src/b.py"]
    assert await lines_of(tools, "Glob", pattern="src/deep/c.py") == ["src/deep/c.py"]
    assert await lines_of(tools, "Glob", pattern="src/*/") == ["src/deep"]
    assert await lines_of(tools, "Glob", pattern=str(root / "src" / "*.ts")) == ["src/d.ts"]


@pytest.mark.anyio
async def test_glob_sorts_newest_first(tools: BuiltinTools, root: Path) -> None:
    make(root, {"old.txt": "", "mid.txt": "", "new.txt": ""})
    now = time.time()
    for offset, name in enumerate(["old.txt", "mid.txt", "new.txt"]):
        os.utime(root / name, (now - 100 + offset * 10, now - 100 + offset * 10))
    assert await lines_of(tools, "Glob", pattern="*.txt") == ["new.txt", "mid.txt", "old.txt"]


@pytest.mark.anyio
async def test_glob_pages_by_count_and_by_budget(tools: BuiltinTools, root: Path) -> None:
    (root / "many").mkdir()
    for index in range(GLOB_MAX_RESULTS + 5):
        (root / "many" / f"f{index:05d}").touch()
    lines = (await call_with_budget(tools, "Glob", 1_000_000, pattern="many/*")).split("\n")
    assert len(lines) == GLOB_MAX_RESULTS + 1
    assert "showing matches 1-1,000 of 1,005" in lines[-1] and "offset=1000 for the next 5" in lines[-1]
    rest = (await call_with_budget(tools, "Glob", 1_000_000, pattern="many/*", offset=1000)).split("\n")
    assert len(rest) == 5 and not set(rest) & set(lines)
    small = await call_with_budget(tools, "Glob", 1_000, pattern="many/*")
    assert len(small.encode()) <= 1_000 and "pass offset=" in small.split("\n")[-1]
    assert (
        await call_with_budget(tools, "Glob", 1_000, pattern="many/*", offset=2000)
        == "No files past offset 2,000: 1,005 matched."
    )


@pytest.mark.anyio
async def test_glob_skips_git_and_refuses_bad_patterns(tools: BuiltinTools, root: Path) -> None:
    make(root, {".git/config": "", ".github/ci.yml": "", "sub/f": ""})
    assert sorted(await lines_of(tools, "Glob", pattern="**/*")) == [".github/ci.yml", "sub/f"]
    with pytest.raises(ToolError, match="absolute while cwd is set"):
        await tools.call_tool("Glob", {"pattern": str(root / "*"), "cwd": "sub"})
    with pytest.raises(ToolError, match="before the first wildcard"):
        await tools.call_tool("Glob", {"pattern": "*/../../*"})
    with pytest.raises(ToolError, match="does not exist"):
        await tools.call_tool("Glob", {"pattern": "*", "cwd": "missing"})
    result = await tools.call_tool("Glob", {"pattern": "*.nothing"})
    assert result.content[0].text == "No files match '*.nothing'."


@pytest.mark.anyio
async def test_glob_lists_links_inside_and_shows_other_roots_absolute(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    make(first, {"real.txt": ""})
    make(second, {"other.txt": ""})
    (first / "alias.txt").symlink_to("real.txt")
    tools = BuiltinTools(Sandbox([str(first), str(second)]))
    assert sorted(await lines_of(tools, "Glob", pattern="*.txt")) == ["alias.txt", "real.txt"]
    assert await lines_of(tools, "Glob", pattern="*.txt", cwd=str(second)) == [str(second / "other.txt")]


# --- Grep -------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_grep_modes(tools: BuiltinTools, root: Path) -> None:
    make(root, {"a.txt": "apple\nbanana\napple pie\n", "b/c.txt": "cherry\napple\n", "d.txt": "none\n"})
    assert await lines_of(tools, "Grep", pattern="apple") == [
        "a.txt:1:apple",
        "a.txt:3:apple pie",
        "b/c.txt:2:apple",
    ]
    assert await lines_of(tools, "Grep", pattern="apple", output_mode="files_with_matches") == [
        "a.txt",
        "b/c.txt",
    ]
    assert await lines_of(tools, "Grep", pattern="apple", output_mode="count") == ["a.txt:2", "b/c.txt:1"]
    assert await lines_of(tools, "Grep", pattern="APPLE", case_insensitive=True, path="b") == [
        "b/c.txt:2:apple"
    ]
    assert await lines_of(tools, "Grep", pattern="^apple$", path="a.txt") == ["a.txt:1:apple"]
    none = await lines_of(tools, "Grep", pattern="zebra")
    assert none[0].startswith("No matches found")


@pytest.mark.anyio
async def test_grep_context_and_separators(tools: BuiltinTools, root: Path) -> None:
    make(root, {"f.txt": "".join(f"l{i}\n" for i in range(1, 13))})
    lines = await lines_of(tools, "Grep", pattern="^l(3|10)$", context=1)
    assert lines == [
        "f.txt-2-l2",
        "f.txt:3:l3",
        "f.txt-4-l4",
        "--",
        "f.txt-9-l9",
        "f.txt:10:l10",
        "f.txt-11-l11",
    ]
    lines = await lines_of(tools, "Grep", pattern="^l3$", before_context=2, after_context=0)
    assert lines == ["f.txt-1-l1", "f.txt-2-l2", "f.txt:3:l3"]
    lines = await lines_of(tools, "Grep", pattern="^l[34]$", context=1)
    assert lines == ["f.txt-2-l2", "f.txt:3:l3", "f.txt:4:l4", "f.txt-5-l5"]


@pytest.mark.anyio
async def test_grep_head_limit_pages_with_offset(tools: BuiltinTools, root: Path) -> None:
    make(root, {"many.txt": "hit\n" * 20})
    lines = await lines_of(tools, "Grep", pattern="hit", head_limit=3)
    assert lines[:3] == ["many.txt:1:hit", "many.txt:2:hit", "many.txt:3:hit"]
    assert lines[3] == "[head_limit=3 reached; more results exist: pass offset=3 for the next page]"
    assert len(lines) == 4
    lines = await lines_of(tools, "Grep", pattern="hit", head_limit=3, offset=3)
    assert lines[:3] == ["many.txt:4:hit", "many.txt:5:hit", "many.txt:6:hit"]
    lines = await lines_of(tools, "Grep", pattern="hit", offset=18)
    assert lines == ["many.txt:19:hit", "many.txt:20:hit"]
    lines = await lines_of(tools, "Grep", pattern="hit", offset=50)
    assert lines == ["No matches found past offset 50 (searched 1 files)."]
    make(root, {"second.txt": "hit\n"})
    lines = await lines_of(tools, "Grep", pattern="hit", output_mode="files_with_matches", head_limit=1)
    assert lines == [
        "many.txt",
        "[head_limit=1 reached; more results exist: pass offset=1 for the next page]",
    ]


@pytest.mark.anyio
async def test_grep_output_fits_the_budget_and_the_note_pages_on(tools: BuiltinTools, root: Path) -> None:
    make(root, {"many.txt": "".join(f"hit {n}\n" for n in range(5000))})
    text = await grep_with_budget(tools, 2000, pattern="hit")
    assert len(text.encode()) <= 2000
    *shown, note = text.split("\n")
    assert shown[0] == "many.txt:1:hit 0" and note.startswith("[awf-mcp: ")
    next_offset = len(shown)
    assert f"{5000 - next_offset:,} more output lines not shown" in note
    assert f"offset={next_offset}" in note
    following = await grep_with_budget(tools, 2000, pattern="hit", offset=next_offset)
    assert following.split("\n")[0] == f"many.txt:{next_offset + 1}:hit {next_offset}"


@pytest.mark.anyio
async def test_grep_budget_exactly_met_and_one_byte_over(tools: BuiltinTools, root: Path) -> None:
    from awf_mcp.builtins.grepping import NOTE_ROOM

    make(root, {"f.txt": "hit\n" * 4})
    line = "f.txt:1:hit\n"
    exact = NOTE_ROOM + 4 * len(line)
    assert "[awf-mcp" not in await grep_with_budget(tools, exact, pattern="hit")
    cut = await grep_with_budget(tools, exact - 1, pattern="hit")
    assert cut.count("f.txt:") == 3 and "1 more output lines not shown" in cut


@pytest.mark.anyio
async def test_grep_cuts_a_huge_line_and_keeps_multibyte_text_whole(tools: BuiltinTools, root: Path) -> None:
    make(root, {"min.js": "é" * (LINE_SHOW_CHARS + 500) + " needle\n"})
    text = await grep_with_budget(tools, 100_000, pattern="needle")
    assert text.startswith("min.js:1:" + "é" * LINE_SHOW_CHARS + " [... 507 more characters]")


@pytest.mark.anyio
async def test_grep_honours_gitignore(tools: BuiltinTools, root: Path) -> None:
    make(
        root,
        {
            ".gitignore": "*.log\nbuild/\n",
            "app.log": "needle\n",
            "build/out.txt": "needle\n",
            "src/main.txt": "needle\n",
            "src/.gitignore": "gen_*\n!gen_keep.txt\n",
            "src/gen_a.txt": "needle\n",
            "src/gen_keep.txt": "needle\n",
            "src/nested/trace.log": "needle\n",
            "src/nested/x.txt": "needle\n",
            ".git/HEAD": "needle\n",
        },
    )
    found = await lines_of(tools, "Grep", pattern="needle", output_mode="files_with_matches")
    assert found == ["src/gen_keep.txt", "src/main.txt", "src/nested/x.txt"]
    scoped = await lines_of(
        tools, "Grep", pattern="needle", output_mode="files_with_matches", path="src/nested"
    )
    assert scoped == ["src/nested/x.txt"]
    everything = await lines_of(
        tools, "Grep", pattern="needle", output_mode="files_with_matches", include_ignored=True
    )
    assert ".git/HEAD" not in everything
    assert {"app.log", "build/out.txt", "src/gen_a.txt", "src/nested/trace.log"} <= set(everything)


@pytest.mark.anyio
async def test_grep_glob_filter(tools: BuiltinTools, root: Path) -> None:
    make(root, {"a.ts": "x\n", "b.tsx": "x\n", "c.js": "x\n", "lib/d.ts": "x\n", "lib/e.min.js": "x\n"})
    ts = await lines_of(tools, "Grep", pattern="x", glob="**/*.{ts,tsx}", output_mode="files_with_matches")
    assert ts == ["a.ts", "b.tsx", "lib/d.ts"]
    by_name = await lines_of(tools, "Grep", pattern="x", glob="*.js", output_mode="files_with_matches")
    assert by_name == ["c.js", "lib/e.min.js"]
    excluded = await lines_of(tools, "Grep", pattern="x", glob="!*.min.js", output_mode="files_with_matches")
    assert "lib/e.min.js" not in excluded and "c.js" in excluded


@pytest.mark.anyio
async def test_grep_skips_binary_and_long_lines(tools: BuiltinTools, root: Path) -> None:
    make(
        root,
        {
            "bin.dat": b"needle\x00\x01",
            "text.txt": "needle\n",
            "wide.txt": "needle" * (GREP_MAX_LINE_BYTES // 5) + "\nneedle\n",
        },
    )
    lines = await lines_of(tools, "Grep", pattern="needle")
    assert lines[:2] == ["text.txt:1:needle", "wide.txt:2:needle"]
    assert "1 line(s) longer than 1 MiB were not searched" in lines[-1]
    single = await lines_of(tools, "Grep", pattern="needle", path="bin.dat")
    assert single == ["'bin.dat' is a binary file; Grep does not search binary files"]


@pytest.mark.anyio
async def test_grep_invalid_regex_is_a_clear_error(tools: BuiltinTools) -> None:
    with pytest.raises(ToolError, match=r"invalid regular expression '\(\?<=a\)b'.*RE2"):
        await tools.call_tool("Grep", {"pattern": "(?<=a)b"})
    with pytest.raises(ToolError, match="output_mode"):
        await tools.call_tool("Grep", {"pattern": "a", "output_mode": "lines"})


@pytest.mark.anyio
async def test_grep_catastrophic_pattern_is_linear(tools: BuiltinTools, root: Path) -> None:
    make(root, {"evil.txt": "a" * 100_000 + "b\n" + "a" * 50 + "\n"})
    started = time.monotonic()
    lines = await lines_of(tools, "Grep", pattern="(a+)+$", output_mode="count")
    assert time.monotonic() - started < 10
    assert lines == ["evil.txt:1"]


@pytest.mark.anyio
async def test_grep_prefilter_keeps_anchored_patterns(tools: BuiltinTools, root: Path) -> None:
    make(root, {"f.txt": "first\nsecond\n"})
    assert await lines_of(tools, "Grep", pattern=r"\Asecond") == ["f.txt:2:second"]
    assert await lines_of(tools, "Grep", pattern="(?i)^SECOND$") == ["f.txt:2:second"]


@pytest.mark.anyio
async def test_grep_reports_progress_and_stops_when_cancelled(tools: BuiltinTools, root: Path) -> None:
    make(root, {f"d/f{index:04d}.txt": "x\n" for index in range(250)})
    reports: list[tuple[float, float | None, str | None]] = []

    def record(progress: float, total: float | None = None, message: str | None = None) -> None:
        reports.append((progress, total, message))

    context = CallContext(tool_name="Grep", report_progress=record)
    token = bind_call_context(context)
    try:
        await tools.call_tool("Grep", {"pattern": "x", "output_mode": "count"})
        assert [report[0] for report in reports] == [100, 200]
        cancelled = CallContext(tool_name="Grep", cancelled=threading.Event())
        cancelled.cancelled.set()
        unbind_call_context(token)
        token = bind_call_context(cancelled)
        with pytest.raises(ToolError, match="cancelled"):
            await tools.call_tool("Grep", {"pattern": "x"})
    finally:
        unbind_call_context(token)


def test_grep_reads_a_file_that_grew_after_fstat_line_by_line(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size is checked, then the file grows (another writer): memory stays bounded."""
    import tracemalloc

    from awf_mcp.builtins import grepping

    big = root / "growing.log"
    with open(big, "wb") as handle:
        handle.write((b"x" * 1023 + b"\n") * (24 * 1024) + b"needle\n")
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((info.st_mode, *info[1:6], 1024, *info[7:]))

    monkeypatch.setattr(grepping.os, "fstat", stale_fstat)
    regex, prefilter = grepping.compile_pattern("needle", False)
    search = grepping._Search(
        regex, prefilter, "content", 0, 0, grepping._Output(offset=0, limit=None, room=10_000)
    )
    tracemalloc.start()
    grepping._search_fd(os.open(big, os.O_RDONLY), "growing.log", search, explicit=True)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert search.output.lines == [f"growing.log:{24 * 1024 + 1}:needle"]
    assert peak < 12 * 1024 * 1024, f"peak {peak / 2**20:.0f} MiB"
