"""The two search engines give the same answers: one shared corpus, run on ripgrep and on pure Python.

The corpus is a tree holding what differs between the engines by default
(hidden files, ``.git``, ``.gitignore`` at several depths with negations,
``.ignore``/``.rgignore``, binary and UTF-16 files, CRLF, symbolic links in
and out, a name that is not UTF-8 and one with a newline, names that sort
differently by path and by component) and a list of Grep and Glob calls over
it (patterns in RE2 syntax that Rust's regex reads differently, every output
mode, context, ``head_limit``, ``glob`` filters, ``include_ignored``,
sub-directories below a ``.gitignore``). Every call must give the same text,
and the same error, on both engines. The escape corpus
(tests/data/escape_corpus.json) runs against both engines too.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.builtins import BuiltinTools, Sandbox, ripgrep_search
from awf_mcp.builtins.ripgrep import ENGINE_VARIABLE, MAX_RECORD_BYTES, RipgrepRun, ripgrep_binary, rust_regex
from awf_mcp.builtins.ripgrep_scope import _rebase_rule, usable_for_tree
from awf_mcp.ports import ToolError
from tests.helpers.escapes import EscapeWorld, build_world, escape_paths, glob_pattern_calls, leaks
from tests.helpers.providers import call_outcome

TREE: dict[str, bytes] = {
    "src/app.py": b"def main():\n    return 'hello'\n# TODO fix\n",
    "src/lib/util.py": (
        b"x = 123  # TODO numbers\ncaf\xc3\xa9 na\xc3\xafve TODO\nfoo_bar42 = a && b\n\tTODO tab\n"
        b"TODOTODO\nword\xc3\xa9 done\nALLCAPS TODO\n"
    ),
    "src/lib/.gitignore": b"generated.py\n",
    "src/lib/generated.py": b"TODO generated\n",
    "a-b/x.txt": b"TODO a-b\n",
    "a/x.txt": b"TODO a\n",
    "A.txt": b"TODO upper\n",
    "b.txt": b"todo lower\nToDo mixed\n",
    ".hidden/secret.txt": b"TODO hidden\n",
    ".git/config": b"TODO in git\n",
    ".gitignore": b"*.log\nbuild/\n!keep.log\n/sub/skip/\nsub/only.txt\n/top.txt\n**/gen/\n# comment\n\n",
    "top.txt": b"TODO top\n",
    "sub/top.txt": b"TODO sub top\n",
    "sub/skip/s.txt": b"TODO skipped\n",
    "sub/only.txt": b"TODO only\n",
    "sub/gen/g.txt": b"TODO gen\n",
    "sub/deeper/skip/s.txt": b"TODO not skipped\n",
    "wild/.gitignore": b"/w*/x.txt\n",
    "wild/in/x.txt": b"TODO wild\n",
    ".ignore": b"src/\n",
    ".rgignore": b"a/\n",
    "build/out.txt": b"TODO ignored build\n",
    "app.log": b"TODO log\n",
    "keep.log": b"TODO keep\n",
    "sub/.gitignore": b"local.txt\n",
    "sub/local.txt": b"TODO local\n",
    "sub/other.txt": b"TODO other\n",
    "sub/deeper/.gitignore": b"!local.txt\n",
    "sub/deeper/local.txt": b"TODO re-included\n",
    "bin.dat": b"TODO\x00\x01binary",
    "utf16.txt": "TODO utf16\n".encode("utf-16"),
    "crlf.txt": b"TODO one\r\nTODO two\r\nplain\r\n",
    "nonl.txt": b"last TODO",
    "empty.txt": b"",
    "ctx.txt": b"".join(b"line %d%s\n" % (n, b" TODO" if n in (3, 4, 9, 15) else b"") for n in range(1, 20)),
    os.fsdecode(b"caf\xe9.txt"): b"TODO latin1 name\n",
    "caf\u00e9-utf8.txt": b"TODO utf-8 name\n",
    "new\nline.txt": b"TODO newline name\n",
    "deep/" + "/".join(["d"] * 12) + "/bottom.txt": b"TODO deep\n",
}

GREP_CALLS: list[dict[str, Any]] = [
    {"pattern": "TODO"},
    {"pattern": "TODO", "output_mode": "files_with_matches"},
    {"pattern": "TODO", "output_mode": "count"},
    {"pattern": "todo", "case_insensitive": True},
    {"pattern": "(?i)todo", "output_mode": "count"},
    {"pattern": r"\bmain\b"},
    {"pattern": r"\d+"},
    {"pattern": r"\w+\W"},
    {"pattern": r"\s{4}return"},
    {"pattern": r"\D\d"},
    {"pattern": r"[\d_]+"},
    {"pattern": r"[^\w\s]+"},
    {"pattern": "naïve"},
    {"pattern": r"\pL+ve"},
    {"pattern": r"[^\x00-\x7F]"},
    {"pattern": "caf."},
    {"pattern": "^def"},
    {"pattern": "fix$"},
    {"pattern": "TODO$"},
    {"pattern": r"[[:upper:]]{4,}"},
    {"pattern": r"\QTODO\E fix"},
    {"pattern": r"\x54ODO tab"},
    {"pattern": r"\124ODO", "output_mode": "count"},
    {"pattern": "[a&&b]"},
    {"pattern": "a [&&]& b"},
    {"pattern": "[a-c--]"},
    {"pattern": "[[]"},
    {"pattern": "a|zzz"},
    {"pattern": ""},
    {"pattern": "(TODO){2}"},
    {"pattern": "TODO tab|\\n"},
    {"pattern": "[^\\n]TODO"},
    {"pattern": "\\n", "output_mode": "count"},
    {"pattern": "TODO", "context": 1, "path": "ctx.txt"},
    {"pattern": "TODO", "context": 2},
    {"pattern": "TODO", "before_context": 2, "after_context": 0},
    {"pattern": "TODO", "after_context": 3, "path": "."},
    {"pattern": "TODO", "head_limit": 3},
    {"pattern": "TODO", "head_limit": 2, "output_mode": "files_with_matches"},
    {"pattern": "TODO", "glob": "*.py"},
    {"pattern": "TODO", "glob": "src/**"},
    {"pattern": "TODO", "glob": "!*.txt", "output_mode": "files_with_matches"},
    {"pattern": "TODO", "glob": "*.{py,log}", "output_mode": "count"},
    {"pattern": "TODO", "glob": "caf*"},
    {"pattern": "TODO", "include_ignored": True, "output_mode": "files_with_matches"},
    {"pattern": "TODO", "path": "sub"},
    {"pattern": "TODO", "path": "sub/deeper"},
    {"pattern": "TODO", "path": "src/lib", "output_mode": "count"},
    {"pattern": "TODO", "path": "src/app.py"},
    {"pattern": "TODO", "path": "bin.dat"},
    {"pattern": "TODO", "path": "deep"},
    {"pattern": "TODO", "path": "wild/in"},
    {"pattern": "TODO", "path": "sub/deeper", "output_mode": "files_with_matches"},
    {"pattern": "nothing-matches-this"},
    {"pattern": "(unclosed"},
    {"pattern": "(?=lookahead)"},
    {"pattern": r"\1"},
]

GLOB_CALLS: list[dict[str, Any]] = [
    {"pattern": "**/*"},
    {"pattern": "*"},
    {"pattern": "**/*.txt"},
    {"pattern": "src/**/*.py"},
    {"pattern": "**/.gitignore"},
    {"pattern": ".hidden/*"},
    {"pattern": "{src,sub}/**/*"},
    {"pattern": "{sub,sub/deeper}/*.txt"},
    {"pattern": "**/local.txt"},
    {"pattern": "*/"},
    {"pattern": "**/x.txt"},
    {"pattern": "caf*"},
    {"pattern": "*.{log,dat}"},
    {"pattern": "[ab]*.txt"},
    {"pattern": "deep/**/bottom.txt"},
    {"pattern": "deep/*/*/bottom.txt"},
    {"pattern": "*.txt", "cwd": "sub"},
    {"pattern": "link*"},
    {"pattern": "[z-a]"},
    {"pattern": "none/*"},
]


@pytest.fixture
def corpus_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    for rel, content in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_bytes(b"TODO outside SECRET\n")
    (root / "link.txt").symlink_to("src/app.py")
    (root / "linkdir").symlink_to("src")
    (root / "link_out.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (root / "link_out_dir").symlink_to(tmp_path / "outside")
    for index, path in enumerate(sorted(p for p in root.rglob("*") if not p.is_symlink())):
        os.utime(path, (1_700_000_000 + index, 1_700_000_000 + index))
    return root


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A function switching the search engine: ``use("ripgrep")`` or ``use("python")``."""

    def use(engine: str) -> None:
        monkeypatch.setenv(ENGINE_VARIABLE, "python" if engine == "python" else "auto")
        ripgrep_binary.cache_clear()
        assert (ripgrep_binary() is None) == (engine == "python"), "the ripgrep dependency is not installed"

    yield use
    ripgrep_binary.cache_clear()


@pytest.mark.anyio
async def test_both_engines_answer_the_shared_corpus_alike(
    corpus_root: Path, engines: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = BuiltinTools(Sandbox([str(corpus_root)]))
    calls = [("Grep", call) for call in GREP_CALLS] + [("Glob", call) for call in GLOB_CALLS]
    answers: dict[str, list[tuple[bool, str]]] = {}
    variants = ("ripgrep", "ripgrep, Glob in one run", "ripgrep, Glob in three runs", "ripgrep in path order")
    for engine in ("python", *variants):
        engines(engine.split()[0].rstrip(","))
        # Glob's listing: one rg over the start directory, or its subdirectories dealt into three runs
        runs = 1 if "one run" in engine else 3
        monkeypatch.setattr(ripgrep_search, "_parallel_runs", lambda runs=runs: runs)
        if engine == "ripgrep in path order":  # no parallel pass: rg --sort=path, read as it comes
            monkeypatch.setattr(ripgrep_search, "PARALLEL_COLLECT_BYTES", 0)
        answers[engine] = [await call_outcome(tools, name, arguments) for name, arguments in calls]
    for engine in variants:
        differences = [
            (name, arguments, python, rg)
            for (name, arguments), python, rg in zip(calls, answers["python"], answers[engine], strict=True)
            if python != rg
        ]
        assert differences == [], engine
    texts = {
        f"{name} {arguments}": text
        for (name, arguments), (_, text) in zip(calls, answers["ripgrep"], strict=True)
    }
    everything = texts["Grep {'pattern': 'TODO', 'output_mode': 'files_with_matches'}"].split("\n")
    assert everything == [
        ".hidden/secret.txt",
        "A.txt",
        "a/x.txt",
        "a-b/x.txt",
        "caf\u00e9-utf8.txt",
        "caf\\xe9.txt",
        "crlf.txt",
        "ctx.txt",
        "deep/d/d/d/d/d/d/d/d/d/d/d/d/bottom.txt",
        "keep.log",
        "new\\x0aline.txt",
        "nonl.txt",
        "src/app.py",
        "src/lib/util.py",
        "sub/deeper/local.txt",
        "sub/deeper/skip/s.txt",
        "sub/other.txt",
        "sub/top.txt",
        "wild/in/x.txt",
    ]
    assert "crlf.txt:1:TODO one" in texts["Grep {'pattern': 'TODO'}"].split("\n")
    assert "SECRET" not in "".join(texts.values())
    assert texts["Glob {'pattern': 'link*'}"] == "No files match 'link*'."
    assert texts["Grep {'pattern': 'a [&&]& b'}"] == "src/lib/util.py:3:foo_bar42 = a && b"


def test_rust_regex_keeps_re2_meaning() -> None:
    assert rust_regex(r"\d+\w\s\b") == r"[0-9]+[0-9A-Za-z_][\t\n\x0C\r ](?-u:\b)"
    assert rust_regex(r"[\d_]") == r"[0-9_]"
    assert rust_regex(r"[^\W]") == r"[^[^0-9A-Za-z_]]"
    assert rust_regex(r"\Qa.b\E+") == r"a\.b+"
    assert rust_regex(r"\101") == r"\x{41}"
    assert rust_regex("[a&&b~~c]") == r"[a\&\&b\~\~c]"
    assert rust_regex("[a--b]") == r"[a-\-b]"
    assert rust_regex("[[]") == r"[\[]"
    assert rust_regex("[]a]") == r"[\]a]"
    assert rust_regex("[[:alpha:]x]") == "[[:alpha:]x]"
    assert rust_regex(r"\p{Greek}\pL") == r"\p{Greek}\pL"
    with pytest.raises(ToolError, match=r"\\C"):
        rust_regex(r"a\C")


@pytest.fixture
def world(tmp_path: Path) -> EscapeWorld:
    return build_world(tmp_path)


@pytest.mark.anyio
@pytest.mark.parametrize("engine", ["python", "ripgrep"])
async def test_the_escape_corpus_finds_nothing_outside_on_either_engine(
    world: EscapeWorld, engines: Any, engine: str
) -> None:
    engines(engine)
    tools = BuiltinTools(Sandbox([str(world.root)]))
    for path in escape_paths(world):
        for arguments in glob_pattern_calls(path):
            refused, message = await call_outcome(tools, "Glob", arguments)
            assert not leaks(world, message), (arguments, message)
            assert refused or "secret" not in message, (arguments, message)
        refused, message = await call_outcome(tools, "Grep", {"pattern": "SECRET", "path": path})
        assert refused and not leaks(world, message), (path, message)
    for arguments in (
        {"pattern": "SECRET", "include_ignored": True},
        {"pattern": "SECRET", "output_mode": "files_with_matches", "include_ignored": True},
        {"pattern": ".", "output_mode": "count", "include_ignored": True},
    ):
        refused, message = await call_outcome(tools, "Grep", arguments)
        assert not refused and not leaks(world, message) and "SECRET" not in message, message
    refused, listed = await call_outcome(tools, "Glob", {"pattern": "**/*"})
    assert not refused and "secret" not in listed and "sub/inside.txt" in listed


def test_ancestor_gitignores_are_rebased_for_ripgrep_or_left_to_python(
    corpus_root: Path, engines: Any
) -> None:
    engines("ripgrep")
    sandbox = Sandbox([str(corpus_root)])
    root = str(corpus_root)
    assert usable_for_tree(sandbox, root, gitignore=True) == (ripgrep_binary(), [])
    engine = usable_for_tree(sandbox, f"{root}/sub/deeper", gitignore=True)
    assert engine is not None
    assert engine[1] == ["*.log", "build/", "!keep.log", "**/gen/", "local.txt"]
    assert usable_for_tree(sandbox, f"{root}/sub", gitignore=True) == (
        ripgrep_binary(),
        ["*.log", "build/", "!keep.log", "/skip/", "/only.txt", "**/gen/"],
    )
    assert usable_for_tree(sandbox, f"{root}/wild/in", gitignore=True) is None  # '/w*/x.txt' names the path
    assert usable_for_tree(sandbox, f"{root}/wild/in", gitignore=False) == (ripgrep_binary(), [])
    assert _rebase_rule("/a/b/c", ["a"]) == "/b/c"
    assert _rebase_rule("!a/b/", ["a"]) == "!/b/"
    assert _rebase_rule("/x/b", ["a"]) == ""
    assert _rebase_rule("/a", ["a", "b"]) is None
    engines("python")
    assert usable_for_tree(sandbox, root, gitignore=True) is None


def _exchange(first: Path, second: Path) -> None:
    """Swap two names atomically (``renameat2(RENAME_EXCHANGE)``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, bytes(first), at_fdcwd, bytes(second), rename_exchange) != 0:
        raise OSError(ctypes.get_errno(), "renameat2")


@pytest.mark.anyio
@pytest.mark.parametrize("engine", ["python", "ripgrep"])
async def test_a_directory_swapped_for_a_link_mid_search_leaks_nothing(
    tmp_path: Path, engines: Any, engine: str
) -> None:
    engines(engine)
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    outside.mkdir()
    for index in range(40):
        (root / "d" / f"f{index:02d}.txt").write_text("INSIDE words\n" * 20)
        (outside / f"f{index:02d}.txt").write_text("SECRET words\n" * 20)
        (outside / f"secret{index:02d}.txt").write_text("SECRET\n")
    (root / "swap").symlink_to(outside)
    stop = threading.Event()
    swaps = 0

    def swapper() -> None:
        nonlocal swaps
        while not stop.is_set():
            _exchange(root / "d", root / "swap")
            swaps += 1

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    tools = BuiltinTools(Sandbox([str(root)]))
    seen: set[str] = set()
    try:
        for _ in range(60):
            for arguments in (
                {"pattern": "words"},
                {"pattern": "words", "output_mode": "count"},
                {"pattern": "SECRET", "output_mode": "files_with_matches"},
            ):
                _refused, text = await call_outcome(tools, "Grep", arguments)
                assert "SECRET" not in text, (arguments, text[:300])
                seen.update(line.split(":")[0] for line in text.split("\n"))
            _refused, listed = await call_outcome(tools, "Glob", {"pattern": "**/*.txt"})
            assert "secret" not in listed, listed[:300]
    finally:
        stop.set()
        thread.join()
    assert swaps > 100
    assert any(name.startswith("d/f") for name in seen), "the race never let a search see the directory"


def test_ripgrep_output_is_split_into_records_across_reads_and_cut_when_too_long(tmp_path: Path) -> None:
    # RipgrepRun reads the pipe 256 KiB at a time: records spanning reads are joined, one longer
    # than MAX_RECORD_BYTES is cut with the bytes cut off counted, a last one without separator kept.
    long_size = MAX_RECORD_BYTES + 300_000
    script = (
        "import sys; out = sys.stdout.buffer; "
        "out.write(b'a\\0' + b'b' * 300000 + b'\\0'); "
        f"out.write(b'L' * {long_size} + b'\\0'); "
        "out.write(b''.join(b'%d\\0' % n for n in range(50000))); out.write(b'tail')"
    )
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    with RipgrepRun(sys.executable, ["-c", script], threading.Event(), cwd=fd) as run:
        records = list(run.records(b"\0"))
    assert records[0] == (b"a", 0)
    assert records[1] == (b"b" * 300_000, 0)
    assert records[2] == (b"L" * MAX_RECORD_BYTES, long_size - MAX_RECORD_BYTES)
    assert records[3:-1] == [(b"%d" % n, 0) for n in range(50_000)]
    assert records[-1] == (b"tail", 0)
    assert run.returncode == 0
