"""Glob and Grep called directly: matching, ordering, caps, .gitignore, context, modes."""

from __future__ import annotations

import os
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.builtins import BuiltinTools, Sandbox, grepping, ripgrep_search
from awf_mcp.builtins.globbing import glob_files
from awf_mcp.builtins.grepping import grep
from awf_mcp.builtins.limits import (
    GLOB_MAX_RESULTS,
    GREP_MAX_LINE_BYTES,
    GREP_MAX_LINES,
    GREP_SHOWN_LINE_BYTES,
    SEARCH_OUTPUT_BYTES,
)
from awf_mcp.builtins.listing import printable
from awf_mcp.builtins.patterns import expand_braces
from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE, ripgrep_binary
from awf_mcp.ports import CallContext, ToolError, ToolResult, bind_call_context, unbind_call_context

ENGINES = ("ripgrep", "python")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Every test here runs on both engines unless it parametrizes ``engine`` itself."""
    own = any(
        mark.args and mark.args[0] == "engine" for mark in metafunc.definition.iter_markers("parametrize")
    )
    if "engine" in metafunc.fixturenames and not own:
        metafunc.parametrize("engine", ENGINES)


@pytest.fixture(autouse=True)
def search_engine(engine: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Grep and Glob on ``engine``; ripgrep must be found (it is a dependency), never skipped."""
    monkeypatch.setenv(ENGINE_VARIABLE, "python" if engine == "python" else "auto")
    ripgrep_binary.cache_clear()
    assert (ripgrep_binary() is None) == (engine == "python"), "the ripgrep dependency is not installed"
    yield engine
    ripgrep_binary.cache_clear()


PYTHON_ONLY = pytest.mark.parametrize("engine", ["python"])
"""For behaviour of the pure-Python engine alone (progress by files searched, the whole-file read)."""


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


# --- patterns ---------------------------------------------------------------------------------------


def test_brace_expansion() -> None:
    assert expand_braces("*.{ts,tsx}") == ["*.ts", "*.tsx"]
    assert expand_braces("{a,b{c,d}}/x") == ["a/x", "bc/x", "bd/x"]
    assert expand_braces("{solo}") == ["{solo}"]
    assert expand_braces("{unclosed,") == ["{unclosed,"]
    with pytest.raises(ToolError, match="more than"):
        expand_braces("{a,b,c,d}" * 6)


# --- Glob -------------------------------------------------------------------------------------------


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
async def test_glob_caps_results(tools: BuiltinTools, root: Path) -> None:
    (root / "many").mkdir()
    for index in range(GLOB_MAX_RESULTS + 5):
        (root / "many" / f"f{index:05d}").touch()
    lines = await lines_of(tools, "Glob", pattern="many/*")
    assert len(lines) == GLOB_MAX_RESULTS + 1
    assert "showing matches 1-1,000 of 1,005" in lines[-1] and "offset=1000" in lines[-1]


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
async def test_glob_lists_no_links_and_shows_other_roots_absolute(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    make(first, {"real.txt": "", "dir/in.txt": ""})
    make(second, {"other.txt": ""})
    (first / "alias.txt").symlink_to("real.txt")
    (first / "linked").symlink_to("dir")
    tools = BuiltinTools(Sandbox([str(first), str(second)]))
    assert sorted(await lines_of(tools, "Glob", pattern="**/*.txt")) == ["dir/in.txt", "real.txt"]
    assert await lines_of(tools, "Glob", pattern="*.txt", cwd=str(second)) == [str(second / "other.txt")]


@pytest.mark.anyio
async def test_glob_shows_files_below_its_start_directory_as_the_first_root_sees_them(tmp_path: Path) -> None:
    # A search that starts below the first root, in a directory whose name is shown escaped,
    # and one that starts in a second root holding the first: each file is shown relative to
    # the first root when it lies inside it, else absolute.
    outer = tmp_path / "outer"
    inner = outer / "inner"
    odd = os.fsdecode(b"caf\xe9\x01")
    make(inner, {f"{odd}/deep/a.txt": "", "b.txt": ""})
    make(outer, {"c.txt": ""})
    tools = BuiltinTools(Sandbox([str(inner), str(outer)]))
    shown = "caf\\xe9\\x01/deep/a.txt"
    assert await lines_of(tools, "Glob", pattern=f"{odd}/**/*.txt") == [shown]
    assert await lines_of(tools, "Glob", pattern=f"{odd}/deep/*.txt") == [shown]
    listed = await lines_of(tools, "Glob", pattern="**/*.txt", cwd=str(outer))
    assert sorted(listed) == sorted([shown, "b.txt", str(outer / "c.txt")])


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
async def test_grep_head_limit_and_line_cap(tools: BuiltinTools, root: Path) -> None:
    make(root, {"many.txt": "hit\n" * (GREP_MAX_LINES + 50)})
    lines = await lines_of(tools, "Grep", pattern="hit", head_limit=3)
    assert lines[:3] == ["many.txt:1:hit", "many.txt:2:hit", "many.txt:3:hit"]
    assert lines[3] == "[head_limit=3 reached; more results exist: pass offset=3 for the next page]"
    assert len(lines) == 4
    lines = await lines_of(tools, "Grep", pattern="hit")
    assert len(lines) == GREP_MAX_LINES + 1
    assert "truncated at 10,000 lines" in lines[-1]
    make(root, {"second.txt": "hit\n"})
    lines = await lines_of(tools, "Grep", pattern="hit", output_mode="files_with_matches", head_limit=1)
    assert lines == [
        "many.txt",
        "[head_limit=1 reached; more results exist: pass offset=1 for the next page]",
    ]


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


@PYTHON_ONLY
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


# --- hostile inputs: names, sizes, cost, cancellation -------------------------------------------------


def test_printable_escapes_undecodable_bytes_and_control_characters() -> None:
    assert printable("plain/café.txt") == "plain/café.txt"
    assert printable(os.fsdecode(b"caf\xe9.txt")) == "caf\\xe9.txt"
    assert printable("two\nlines\r\x1b[31m") == "two\\x0alines\\x0d\\x1b[31m"
    assert printable("evil\u202etxt.exe\u2028") == "evil\\u202etxt.exe\\u2028"
    assert printable("back\\slash") == "back\\slash"
    printable(os.fsdecode(bytes(range(1, 256)))).encode("utf-8")  # always valid UTF-8


@pytest.mark.anyio
async def test_non_utf8_and_control_character_names_are_shown_escaped(
    tools: BuiltinTools, root: Path
) -> None:
    (root / os.fsdecode(b"caf\xe9.txt")).write_text("needle\n")
    (root / "new\nline.txt").write_text("needle\n")
    (root / "ok.txt").write_text("needle\n")
    assert sorted(await lines_of(tools, "Glob", pattern="*")) == [
        "caf\\xe9.txt",
        "new\\x0aline.txt",
        "ok.txt",
    ]
    assert await lines_of(tools, "Glob", pattern="caf*") == ["caf\\xe9.txt"]
    for shown in ("caf\\xe9.txt", "caf\\xe9*", "**/caf\\xe9.txt"):  # a name as Glob shows it finds it
        assert await lines_of(tools, "Glob", pattern=shown) == ["caf\\xe9.txt"], shown
        found = await lines_of(tools, "Grep", pattern="needle", glob=shown, output_mode="files_with_matches")
        assert found == ["caf\\xe9.txt"], shown
    assert await lines_of(tools, "Glob", pattern="cafxe9.txt") == ["No files match 'cafxe9.txt'."]
    grep = sorted(await lines_of(tools, "Grep", pattern="needle"))
    assert grep == ["caf\\xe9.txt:1:needle", "new\\x0aline.txt:1:needle", "ok.txt:1:needle"]
    assert await lines_of(tools, "Grep", pattern="needle", glob="caf*", output_mode="files_with_matches") == [
        "caf\\xe9.txt"
    ]
    for text in (*grep, *await lines_of(tools, "Glob", pattern="*")):
        text.encode("utf-8")


@pytest.mark.anyio
async def test_grep_cuts_long_lines_and_stops_at_the_byte_budget(tools: BuiltinTools, root: Path) -> None:
    line = "needle " + "x" * (GREP_SHOWN_LINE_BYTES * 3)
    (root / "wide.txt").write_text(line + "\n")
    shown = (await lines_of(tools, "Grep", pattern="needle"))[0]
    assert shown.startswith("wide.txt:1:needle xxx")
    assert shown.endswith(f"[... line cut: {len(line) - GREP_SHOWN_LINE_BYTES:,} more bytes]")
    assert len(shown) < GREP_SHOWN_LINE_BYTES + 100
    sandbox = Sandbox([str(root)])
    (root / "many.txt").write_text("needle\n" * 5000)
    result = grep(sandbox, {"pattern": "needle", "path": "many.txt"}, output_bytes=10_000)
    text = result.content[0].text
    assert len(text.encode()) <= 10_000
    *shown_lines, note = text.split("\n")
    assert note.startswith("[awf-mcp: more output not shown (the output budget, 10,000 bytes)")
    assert f"pass offset={len(shown_lines)} for the next page" in note
    following = grep(sandbox, {"pattern": "needle", "path": "many.txt", "offset": len(shown_lines)})
    assert following.content[0].text.startswith(f"many.txt:{len(shown_lines) + 1}:needle")
    make(root, {f"d/file{index:03d}.txt": "needle\n" for index in range(100)})
    listed = grep(
        sandbox, {"pattern": "needle", "path": "d", "output_mode": "files_with_matches"}, output_bytes=400
    )
    assert listed.content[0].text.split("\n")[:2] == ["d/file000.txt", "d/file001.txt"]
    assert "pass offset=" in listed.content[0].text and len(listed.content[0].text) <= 400


@pytest.mark.anyio
async def test_grep_output_of_hard_linked_big_files_stays_within_the_budget(
    tools: BuiltinTools, root: Path
) -> None:
    chunk = ("needle " + "y" * 1000 + "\n") * 2048  # 2 MiB of matching lines
    (root / "big.txt").write_text(chunk)
    for index in range(8):
        os.link(root / "big.txt", root / f"link{index}.txt")
    result = await tools.call_tool("Grep", {"pattern": "needle"})
    text = result.content[0].text
    assert SEARCH_OUTPUT_BYTES // 2 < len(text.encode()) <= SEARCH_OUTPUT_BYTES
    assert "more output not shown" in text.splitlines()[-1]


@pytest.mark.anyio
async def test_glob_output_stays_within_the_budget(root: Path) -> None:
    deep = root / "/".join(["d" * 200] * 4)
    deep.mkdir(parents=True)
    for index in range(40):
        (deep / f"{index:03d}{'n' * 200}").touch()
    result = glob_files(Sandbox([str(root)]), {"pattern": "**/*"}, output_bytes=10_000)
    lines = result.content[0].text.split("\n")
    assert len(result.content[0].text.encode()) <= 10_000
    assert lines[-1].startswith(f"[awf-mcp: showing matches 1-{len(lines) - 1} of 40, newest first")


@pytest.mark.anyio
async def test_glob_keeps_only_the_newest_while_walking(tools: BuiltinTools, root: Path) -> None:
    (root / "many").mkdir()
    now = time.time()
    count = GLOB_MAX_RESULTS * 2 + 321
    for index in range(count):
        path = root / "many" / f"f{index:05d}"
        path.touch()
        os.utime(path, (now - index, now - index))
    lines = await lines_of(tools, "Glob", pattern="many/*")
    assert lines[:-1] == [f"many/f{index:05d}" for index in range(GLOB_MAX_RESULTS)]
    assert lines[-1].startswith(f"[awf-mcp: showing matches 1-1,000 of {count:,}, newest first")


@pytest.mark.anyio
async def test_glob_walks_overlapping_alternatives_once(tools: BuiltinTools, root: Path) -> None:
    make(
        root,
        {"src/a.py": "", "src/deep/b.py": "", "src/deep/more/c.py": "", ".git/x.py": "", "s[x]/d.py": ""},
    )
    assert sorted(
        await lines_of(tools, "Glob", pattern="{src,src/deep,src/deep/more,src/deep/../deep}/*.py")
    ) == [
        "src/a.py",
        "src/deep/b.py",
        "src/deep/more/c.py",
    ]
    assert sorted(await lines_of(tools, "Glob", pattern="{src/**/*.py,src/deep/**/*.py}")) == [
        "src/a.py",
        "src/deep/b.py",
        "src/deep/more/c.py",
    ]
    assert await lines_of(tools, "Glob", pattern="{*/d.py,s[[]x]/d.py}") == ["s[x]/d.py"]
    assert sorted(await lines_of(tools, "Glob", pattern="{src/a.py,.git/*.py}")) == [".git/x.py", "src/a.py"]


def test_brace_expansion_cost_is_bounded_up_front() -> None:
    hostile = "{a,b}" * 9 + "/" + "/".join(["{" * 250] * 15)
    started = time.monotonic()
    with pytest.raises(ToolError, match="65,536 characters in all"):
        expand_braces(hostile)
    alternatives = expand_braces("{a,b}" * 9 + "/" + "{" * 100)
    assert len(alternatives) == 512 and alternatives[0] == "aaaaaaaaa/" + "{" * 100
    with pytest.raises(ToolError, match="more than 1000 alternatives"):
        expand_braces("{a,b}" * 10 + "{" * 4000)
    with pytest.raises(ToolError, match="65,536 characters in all"):
        expand_braces("{a,b}" * 9 + "*" * 4000)
    with pytest.raises(ToolError, match="deeper than 32 levels"):
        expand_braces("{a," * 40 + "b" + "}" * 40)
    assert time.monotonic() - started < 1.0
    assert expand_braces("{a," * 20 + "b" + "}" * 20) == ["a", "b"]
    cancelled = threading.Event()
    cancelled.set()
    with pytest.raises(ToolError, match="cancelled"):
        expand_braces("{a,b}/{c,d}", cancelled)


@pytest.mark.anyio
async def test_hostile_brace_patterns_answer_quickly(tools: BuiltinTools, root: Path) -> None:
    make(root, {"x.txt": "needle\n"})
    hostile = "{a,b}" * 9 + "/" + "/".join(["{" * 250] * 15)
    started = time.monotonic()
    with pytest.raises(ToolError, match="expands to more than 65,536 characters"):
        await tools.call_tool("Glob", {"pattern": hostile})
    with pytest.raises(ToolError, match="expands to more than 65,536 characters"):
        await tools.call_tool("Grep", {"pattern": "needle", "glob": hostile})
    accepted = "*{a,b}" * 9 + "/" + "/".join(["?" * 10] * 10)
    assert (await tools.call_tool("Glob", {"pattern": accepted})).content[0].text.startswith("No files match")
    grep_result = await tools.call_tool("Grep", {"pattern": "needle", "glob": accepted})
    assert grep_result.content[0].text.startswith("No matches found")
    assert time.monotonic() - started < 5.0
    with pytest.raises(ToolError, match="glob is too long"):
        await tools.call_tool("Grep", {"pattern": "needle", "glob": "*" * 5000})


@pytest.mark.anyio
async def test_glob_errors_are_sentences_not_bytes(tools: BuiltinTools) -> None:
    with pytest.raises(ToolError) as error:
        await tools.call_tool("Glob", {"pattern": "[z-a]"})
    message = str(error.value)
    assert "b'" not in message
    assert message == (
        "invalid glob pattern '[z-a]': the character range z-a runs backwards "
        "(write the lower character first, e.g. a-z)"
    )
    with pytest.raises(ToolError, match=r"^invalid glob pattern '\[z-a\]': the character range"):
        await tools.call_tool("Grep", {"pattern": "x", "glob": "[z-a]"})
    with pytest.raises(ToolError, match="unpaired surrogate"):
        await tools.call_tool("Grep", {"pattern": "x", "glob": "\ud800*"})


@PYTHON_ONLY
@pytest.mark.anyio
async def test_grep_reads_a_file_that_grew_after_fstat_within_the_cap(
    tools: BuiltinTools, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = root / "growing.log"
    path.write_bytes(b"start\n" + b"z" * 100 + b"\n")
    with path.open("ab") as grown:
        for _ in range(40):
            grown.write((b"f" * 1023 + b"\n") * 1024)  # 40 MiB in all
        grown.write(b"needle at the end\n")
    real_fstat = os.fstat

    def fstat_before_growth(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        if info.st_ino != path.stat().st_ino:
            return info
        fields = list(info)
        fields[6] = 107  # the size fstat saw before the file grew
        return os.stat_result(fields)

    monkeypatch.setattr(grepping.os, "fstat", fstat_before_growth)
    tracemalloc.start()
    try:
        lines = await lines_of(tools, "Grep", pattern="needle", path="growing.log")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == ["growing.log:40963:needle at the end"]
    assert peak < 12 * 1024 * 1024, peak


def _cancel_after(delay: float) -> CallContext:
    context = CallContext(tool_name="test")
    threading.Timer(delay, context.cancelled.set).start()
    return context


@pytest.mark.anyio
async def test_grep_of_an_endless_sparse_file_stops_when_cancelled(
    tools: BuiltinTools, root: Path, engine: str
) -> None:
    with (root / "sparse.txt").open("wb") as sparse:
        sparse.write(b"needle\n" * 2000)
        sparse.truncate(1 << 40)  # 1 TiB, mostly one endless line of NUL bytes
    calls = [{"pattern": "needle", "path": "sparse.txt"}]  # one file: always the pure-Python engine
    if engine == "python":  # ripgrep sees the NUL bytes in its first buffer and skips the file as binary
        calls.append({"pattern": "needle"})
    for arguments in calls:
        token = bind_call_context(_cancel_after(0.3))
        started = time.monotonic()
        try:
            with anyio.fail_after(20), pytest.raises(ToolError, match="cancelled"):
                await tools.call_tool("Grep", arguments)
        finally:
            unbind_call_context(token)
        assert time.monotonic() - started < 10


@pytest.mark.anyio
async def test_glob_stops_when_cancelled(tools: BuiltinTools, root: Path) -> None:
    make(root, {f"d{index}/f.txt": "" for index in range(50)})
    context = CallContext(tool_name="Glob")
    context.cancelled.set()
    token = bind_call_context(context)
    try:
        with pytest.raises(ToolError, match="cancelled"):
            await tools.call_tool("Glob", {"pattern": "**/*.txt"})
        with pytest.raises(ToolError, match="cancelled"):
            await tools.call_tool("Glob", {"pattern": "{d1,d2}/*.txt"})
    finally:
        unbind_call_context(token)


def make_heavy_tree(root: Path) -> None:
    """About 3 GiB to search through hard links to one 48 MiB text file: seconds for either engine."""
    line = b"".join(b"word%05d " % index for index in range(100)) + b"\n"
    (root / "heavy").mkdir()
    (root / "heavy" / "big.txt").write_bytes(line * (48 * 1024 * 1024 // len(line)))
    for index in range(64):
        os.link(root / "heavy" / "big.txt", root / "heavy" / f"link{index:02d}.txt")


@pytest.mark.anyio
async def test_a_long_grep_stops_at_once_when_cancelled(tools: BuiltinTools, root: Path) -> None:
    make_heavy_tree(root)
    for mode in ("content", "files_with_matches", "count"):
        token = bind_call_context(_cancel_after(0.5))
        started = time.monotonic()
        try:
            with anyio.fail_after(30), pytest.raises(ToolError, match="cancelled"):
                await tools.call_tool("Grep", {"pattern": r"\w{3}\d{3}\s\w{7}\d\W{2}", "output_mode": mode})
        finally:
            unbind_call_context(token)
        assert time.monotonic() - started < 3.0


@pytest.mark.anyio
async def test_glob_breaks_mtime_ties_by_path_past_the_cap(tools: BuiltinTools, root: Path) -> None:
    (root / "same").mkdir()
    names = [f"f{index:05d}" for index in range(GLOB_MAX_RESULTS * 2 + 500)]
    for name in reversed(names):
        (root / "same" / name).touch()
        os.utime(root / "same" / name, (1_700_000_000, 1_700_000_000))
    (root / "same" / "newest").touch()
    lines = await lines_of(tools, "Glob", pattern="same/*")
    assert lines[:-1] == ["same/newest", *[f"same/{name}" for name in names[: GLOB_MAX_RESULTS - 1]]]
    assert lines[-1].startswith(f"[awf-mcp: showing matches 1-1,000 of {len(names) + 1:,}, newest first")


@pytest.mark.anyio
@pytest.mark.parametrize(("runs", "open_directories"), [(1, 256), (2, 256), (3, 2)])
async def test_glob_pages_the_newest_across_directories_and_top_level_files(
    tools: BuiltinTools, root: Path, runs: int, open_directories: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ripgrep lists each group of subdirectories newest first; the groups and the
    # top-level files are merged, and the pages must be the global order (also when
    # the directories kept open for the checks are fewer than those the files lie in).
    monkeypatch.setattr(ripgrep_search, "_parallel_runs", lambda: runs)
    monkeypatch.setattr(ripgrep_search._FileStats, "_MAX_OPEN", open_directories)
    count = GLOB_MAX_RESULTS * 2 + 300
    expected: list[tuple[int, str]] = []
    for index in range(count):
        directory = ("", "a/", "b/", "c/deep/", "d/")[index * 7 % 5]
        rel = f"{directory}f{index:05d}.txt"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x")
        mtime = 1_700_000_000 + (index * 7919) % 1000  # many ties, spread over every directory
        os.utime(path, (mtime, mtime))
        expected.append((-mtime, rel))
    (root / "a" / "skip.md").write_text("x")
    ordered = [rel for _, rel in sorted(expected)]
    first = await lines_of(tools, "Glob", pattern="**/*.txt")
    assert first[:-1] == ordered[:GLOB_MAX_RESULTS]
    assert first[-1].startswith(f"[awf-mcp: showing matches 1-1,000 of {count:,}, newest first")
    second = await lines_of(tools, "Glob", pattern="**/*.txt", offset=GLOB_MAX_RESULTS)
    assert second[:-1] == ordered[GLOB_MAX_RESULTS : 2 * GLOB_MAX_RESULTS]
    last = await lines_of(tools, "Glob", pattern="*/*.txt", offset=0)
    assert last[:-1] == [rel for rel in ordered if rel.count("/") == 1][:GLOB_MAX_RESULTS]


def record_ripgrep_runs(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The directories each rg run Glob starts is given, recorded as the runs start."""
    started: list[list[str]] = []
    real_run = ripgrep_search.RipgrepRun

    def recording_run(binary: str, arguments: list[str], *rest: Any, **options: Any) -> Any:
        started.append(arguments[arguments.index("--") + 1 :])
        return real_run(binary, arguments, *rest, **options)

    monkeypatch.setattr(ripgrep_search, "RipgrepRun", recording_run)
    return started


@pytest.mark.anyio
async def test_glob_deals_out_the_directories_below_one_big_subdirectory(
    tools: BuiltinTools, root: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    # One subdirectory holding everything: its own subdirectories are dealt out,
    # the files above them are listed in Python, and the answer is the same.
    monkeypatch.setattr(ripgrep_search, "_parallel_runs", lambda: 2)
    started = record_ripgrep_runs(monkeypatch)
    expected = []
    names = ["top.txt", "src/mid.txt", "src/a/1.txt", "src/b/2.txt", "src/c/3.txt", "src/c/d/4.txt"]
    names.append("src/e/5.txt")
    for index, rel in enumerate(names):
        make(root, {rel: "x"})
        os.utime(root / rel, (1_700_000_000 + index, 1_700_000_000 + index))
        expected.insert(0, rel)
    (root / "src" / ".git").mkdir()
    make(root, {"src/.git/HEAD.txt": "x"})
    assert await lines_of(tools, "Glob", pattern="**/*.txt") == expected
    if engine == "ripgrep":
        assert sorted(started) == [["./src/a", "./src/c"], ["./src/b", "./src/e"]]


@pytest.mark.anyio
async def test_glob_leaves_a_big_flat_directory_to_one_ripgrep_run(
    tools: BuiltinTools, root: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    # Listing (and stating) thousands of files in Python costs more than rg does: past
    # SPLIT_MAX_ENTRIES entries in the start directory, one rg lists it all; a level further
    # down that is that big is not dealt out (the level above is).
    monkeypatch.setattr(ripgrep_search, "_parallel_runs", lambda: 2)
    monkeypatch.setattr(ripgrep_search, "SPLIT_MAX_ENTRIES", 6)
    started = record_ripgrep_runs(monkeypatch)
    deep = [f"a/d{index}/f.txt" for index in range(7)]
    make(root, dict.fromkeys([*deep, "b/one.txt", "c/two.txt"], "x"))
    listed = await lines_of(tools, "Glob", pattern="**/*.txt")
    assert sorted(listed) == sorted([*deep, "b/one.txt", "c/two.txt"])
    if engine == "ripgrep":  # the level below a, b and c holds 9 entries: a, b and c are dealt out
        assert sorted(started) == [["./a", "./c"], ["./b"]]
    make(root, {f"flat{index}.txt": "x" for index in range(6)})
    started.clear()
    listed = await lines_of(tools, "Glob", pattern="**/*.txt")
    assert len(listed) == 15
    if engine == "ripgrep":  # the start directory holds 9 entries: one run lists it all
        assert started == [["."]]
