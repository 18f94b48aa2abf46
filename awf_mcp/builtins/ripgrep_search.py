"""Grep's directory search and Glob's file listing on ``rg``, with the pure-Python engine's results.

Contract
--------
* :func:`usable_for_tree` says whether ripgrep can stand in for the pure-Python
  walk below ``target``: ``rg`` is found, and (when ``.gitignore`` files apply)
  no directory between the root and ``target`` holds one, since ``rg`` is never
  allowed to read ignore files above the searched tree (they may lie outside
  the roots) and so could not honour those.
* :func:`grep_tree` searches a resolved directory and adds Grep's output lines
  to a :class:`~awf_mcp.builtins.listing.BoundedLines`, formatted exactly as the
  pure-Python engine formats them (paths relative to the first root, escaped
  by :func:`~awf_mcp.builtins.listing.printable`; ``--`` only between
  non-adjacent groups of one file). Files come in the same order (depth first,
  names sorted: what ``rg --sort=path`` gives, or a parallel run's output put
  in that order, see :func:`grep_tree`). When the output is full
  (``OutputFull``) or the call is cancelled, ``rg`` is killed at once.
* :func:`newest_files` lists the regular files below a resolved directory
  that match a set of globs (hidden ones included, ``.git`` skipped, symbolic
  links neither followed nor listed, ignore files not applied), newest first,
  handing over only the newest and counting the rest.
* Every path ``rg`` returns is checked before it is used: it must lie below the
  searched directory, inside the roots, with no symbolic link among its
  directories; then each file is opened again through the sandbox (Glob:
  each one it returns; Grep: each one it shows, keeping only the lines that
  file holds, :class:`_Verifier`). ``rg`` walks by path, not
  by descriptor; see docs/security.md.
"""

from __future__ import annotations

import contextlib
import heapq
import os
import re
import stat
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from awf_mcp.builtins.limits import GREP_MAX_LINE_BYTES, GREP_SHOWN_LINE_BYTES
from awf_mcp.builtins.listing import BoundedLines, cut_line, printable
from awf_mcp.builtins.patterns import ripgrep_glob
from awf_mcp.builtins.ripgrep import (
    MAX_RECORD_BYTES,
    WALK_OPTIONS,
    RipgrepRun,
    failed,
    ripgrep_binary,
    rust_regex,
)
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.builtins.walk import gitignore_lines
from awf_mcp.ports import ToolError, current_call

_LINE_HEAD = re.compile(rb"(\d+)([:-])")


_MAGIC = frozenset("*?[\\")


def _rebase_rule(line: str, below: list[str]) -> str | None:
    """Gitignore ``line`` of an ancestor, rewritten for the directory ``below`` it ("" to drop it).

    ``None`` when the rule cannot be rewritten exactly (a wildcard in the part
    of an anchored rule that names ``below``'s path, or a rule that ignores
    ``below`` or one of its parents).
    """
    stripped = line.rstrip("\r")
    if not stripped.strip() or stripped.startswith("#"):
        return ""
    negated = stripped.startswith("!")
    body = stripped[1:] if negated else stripped
    core = body.rstrip("/")
    if "/" not in core or core.lstrip("/").startswith("**/"):
        return stripped  # matches at any depth: the same rule below
    parts = core.lstrip("/").split("/")
    prefix = parts[: len(below)]
    if any(_MAGIC.intersection(part) for part in prefix):
        return None
    if len(parts) <= len(below):
        return None if parts == below[: len(parts)] else ""
    if prefix != below:
        return ""
    rebased = "/" + "/".join(parts[len(below) :]) + ("/" if body.endswith("/") else "")
    return ("!" if negated else "") + rebased


def ancestor_rules(sandbox: Sandbox, target: str) -> list[str] | None:
    """The ``.gitignore`` rules of ``target``'s ancestors up to its root, rebased onto ``target``.

    Shallower files come first, so a deeper rule (later) overrides a shallower
    one as in git. ``None`` when a rule cannot be rebased exactly.
    """
    root = sandbox.root_of(target)
    if target == root:
        return []
    names = target[len(root.rstrip("/")) + 1 :].split("/")
    rules: list[str] = []
    for depth in range(len(names)):
        directory = os.path.join(root, *names[:depth])
        try:
            fd = sandbox.open_dir(directory)
        except ToolError:
            return None
        try:
            lines = gitignore_lines(fd)
        finally:
            os.close(fd)
        for line in lines or ():
            rebased = _rebase_rule(line, names[depth:])
            if rebased is None:
                return None
            if rebased:
                rules.append(rebased)
    return rules


def usable_for_tree(sandbox: Sandbox, target: str, *, gitignore: bool) -> tuple[str, list[str]] | None:
    """``rg`` and the ancestors' rules when ripgrep can search below ``target``, else ``None``.

    ``rg`` never reads ignore files above the searched directory (they may lie
    outside the roots): the ``.gitignore`` files between the root and
    ``target`` are read here, through the sandbox, and handed to ``rg``
    rebased. When one cannot be rebased exactly, the pure-Python engine runs.
    """
    binary = ripgrep_binary()
    if binary is None:
        return None
    if not gitignore:
        return binary, []
    rules = ancestor_rules(sandbox, target)
    return None if rules is None else (binary, rules)


def _listed_path(prefix: str, raw: bytes) -> str | None:
    """The real path of ``./rel`` as ``rg`` printed it below ``prefix``, when it stays below it."""
    relative = os.fsdecode(raw)
    if not relative.startswith("./") or "/../" in relative or "/./" in relative[1:]:
        return None
    return prefix + relative[2:]


class _PathCheck:
    """Validates (and renders) the paths ``rg`` prints (``./rel``), caching the verdict per directory."""

    def __init__(self, sandbox: Sandbox, start: str) -> None:
        self._sandbox = sandbox
        self._prefix = start.rstrip("/") + "/"
        self._directories: dict[str, bool] = {}

    def real(self, raw: bytes) -> str | None:
        real = _listed_path(self._prefix, raw)
        if real is None:
            return None
        directory = os.path.dirname(real)
        verdict = self._directories.get(directory)
        if verdict is None:
            try:
                verdict = self._sandbox.contains(directory) and os.path.realpath(directory) == directory
            except OSError:  # a component changed while it was being resolved
                verdict = False
            self._directories[directory] = verdict
        if not verdict or current_call().path_denied(real) is not None:
            return None
        return real

    def relative(self, real: str) -> str:
        return real[len(self._prefix) :]


def _open_start(sandbox: Sandbox, start: str) -> int:
    """A descriptor of ``start`` opened through the sandbox: ``rg`` starts in that very directory."""
    return sandbox.open_dir(start)


def _rules_file(rules: Sequence[str]) -> Any:
    """A temporary ignore file holding ``rules`` (closed, and so removed, by the caller)."""
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".gitignore")  # noqa: SIM115
    handle.write("\n".join(rules) + "\n")
    handle.flush()
    return handle


PARALLEL_COLLECT_BYTES = 4 * 1024 * 1024
"""Output of a parallel ``rg`` run kept for sorting; past it, the search is redone in path order."""

_Item = tuple[bytes, bytes, int]
"""One output record of ``rg``: the path, the rest (after the NUL), and the bytes cut off."""


def grep_tree(
    binary: str,
    sandbox: Sandbox,
    target: str,
    *,
    pattern: str,
    case_insensitive: bool,
    mode: str,
    before: int,
    after: int,
    gitignore: bool,
    ancestor_ignores: Sequence[str],
    accept: Callable[[str, str], bool],
    output: BoundedLines,
    cancelled: threading.Event,
) -> int:
    """Search directory ``target`` with ``rg``, adding Grep's lines to ``output`` (see the contract).

    ``rg`` first runs on all its threads, and its output is kept (up to
    :data:`PARALLEL_COLLECT_BYTES`) and put in path order here. When there is
    more, it is killed and the search is redone with ``--sort=path``, one
    thread, read as it comes and stopped as soon as ``output`` is full.
    Returns how many matching lines were left out for being longer than
    :data:`GREP_MAX_LINE_BYTES` (the pure-Python engine does not search those).
    """
    arguments = [*WALK_OPTIONS, "--null", "--no-heading", "--with-filename", "--color=never"]
    arguments += ["--encoding=none", "--ignore-case" if case_insensitive else "--case-sensitive"]
    if not gitignore:
        arguments.append("--no-ignore-vcs")
    if mode == "files_with_matches":
        arguments.append("--files-with-matches")
    elif mode == "count":
        arguments.append("--count")
    else:
        arguments += ["--line-number", f"--before-context={before}", f"--after-context={after}"]
    check = _PathCheck(sandbox, target)
    verifier = _Verifier(sandbox)
    shown_of: dict[bytes, str | None] = {}

    def shown(raw: bytes) -> str | None:
        if raw not in shown_of:
            real = check.real(raw)
            keep = real is not None and accept(check.relative(real), os.path.basename(real))
            keep = keep and real is not None and verifier.open(real)
            shown_of.clear()  # one file at a time: keep the cache small
            shown_of[raw] = printable(sandbox.display(real)) if keep and real is not None else None
        return shown_of[raw]

    separator = b"\0" if mode == "files_with_matches" else b"\n"
    with contextlib.ExitStack() as stack:
        stack.callback(verifier.close)
        if gitignore and ancestor_ignores:
            arguments.append(f"--ignore-file={stack.enter_context(_rules_file(ancestor_ignores)).name}")
        arguments += ["--regexp", rust_regex(pattern), "--", "."]

        def start(*extra: str) -> RipgrepRun:
            return RipgrepRun(binary, [*extra, *arguments], cancelled, cwd=_open_start(sandbox, target))

        with start() as run:
            collected = _collect(_items(run.records(separator), mode), PARALLEL_COLLECT_BYTES)
            if collected is not None and run.returncode == 2 and not collected and run.errors():
                raise failed(run)
        if collected is not None:
            return _emit(collected, mode, before or after, shown, verifier, output)
        with start("--sort=path") as run:
            items = _items(run.records(separator), mode)
            long_lines = _emit(items, mode, before or after, shown, verifier, output)
            if run.returncode == 2 and not output.lines and run.errors():
                raise failed(run)
        return long_lines


def _items(records: Iterator[tuple[bytes, int]], mode: str) -> Iterator[_Item]:
    """``rg``'s records as items; a path holding a newline, cut in pieces, is put back together."""
    if mode == "files_with_matches":
        for record, dropped in records:
            if not dropped:
                yield record, b"", 0
        return
    carry: bytes | None = None
    for record, dropped in records:
        if b"\0" not in record:
            if record not in (b"--", b""):
                carry = record if carry is None else carry + b"\n" + record
            continue
        if carry is not None:
            record, carry = carry + b"\n" + record, None
        path, _, rest = record.partition(b"\0")
        yield path, rest, dropped


def _collect(items: Iterator[_Item], budget: int) -> list[_Item] | None:
    """All ``items`` in path order (``rg --sort=path``'s), or ``None`` once they pass ``budget`` bytes."""
    by_path: dict[bytes, list[_Item]] = {}
    size = 0
    for item in items:
        size += len(item[0]) + len(item[1]) + 64
        if size > budget:
            return None
        by_path.setdefault(item[0], []).append(item)
    return [item for path in sorted(by_path, key=lambda path: path.split(b"/")) for item in by_path[path]]


def _emit(
    items: Iterable[_Item],
    mode: str,
    grouped: int,
    shown: Callable[[bytes], str | None],
    verifier: _Verifier,
    output: BoundedLines,
) -> int:
    """Add Grep's lines for ``items`` to ``output``; returns the long lines left out.

    A line is shown only when the file, opened again through the sandbox, holds
    that very line at that number (see :class:`_Verifier`).
    """
    long_lines = 0
    current: str | None = None
    last_printed = 0
    for path, rest, dropped in items:
        name = shown(path)
        if name is None:
            continue
        if mode == "files_with_matches":
            output.add(name)
            continue
        if mode == "count":
            output.add(f"{name}:{int(rest)}")
            continue
        head = _LINE_HEAD.match(rest)
        if head is None:
            continue
        number = int(head.group(1))
        if name != current:
            current, last_printed = name, 0
        text = rest[head.end() :]
        if len(text) + dropped > GREP_MAX_LINE_BYTES:
            long_lines += 1
            continue
        if not verifier.holds(number, text, cut=bool(dropped)):
            continue
        if grouped and last_printed and number > last_printed + 1:
            output.add("--")
        if not dropped:
            text = text.removesuffix(b"\r")
        marker = ":" if head.group(2) == b":" else "-"
        output.add(f"{name}{marker}{number}{marker}{cut_line(text, GREP_SHOWN_LINE_BYTES, dropped)}")
        last_printed = number
    return long_lines


class _Verifier:
    """Re-reads through the sandbox the file ``rg`` reported, to confirm what it printed.

    ``rg`` walks by path; a directory swapped for a link to the outside while
    it is inside it could make it print an outside file. Each reported file is
    opened again from its root with ``O_NOFOLLOW`` at every component
    (:meth:`~awf_mcp.builtins.sandbox.Sandbox.open_file`); a file that cannot
    be is dropped, and in ``content`` mode each line is shown only if the file
    opened that way holds it at that number. Lines arrive in increasing order
    per file, so the file is read once, one bounded line at a time.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._stream: Any = None
        self._number = 0
        self._line = b""

    def open(self, real: str) -> bool:
        self.close()
        try:
            fd = self._sandbox.open_file(real)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                return False
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            return False
        self._stream = open(fd, "rb", closefd=True)  # noqa: SIM115  (closed in close())
        self._number = 0
        return True

    def holds(self, number: int, text: bytes, *, cut: bool) -> bool:
        if self._stream is None or number < self._number:
            return False
        while self._number < number:
            line = self._stream.readline(MAX_RECORD_BYTES)
            if not line:
                return False
            while not line.endswith(b"\n") and len(line) >= MAX_RECORD_BYTES:
                more = self._stream.readline(MAX_RECORD_BYTES)
                if not more:
                    break
                line = line[:MAX_RECORD_BYTES] + (b"\n" if more.endswith(b"\n") else b"")
            self._line = line.removesuffix(b"\n")
            self._number += 1
        return self._line.startswith(text) if cut else self._line == text

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None


SPLIT_MAX_DIRECTORIES = 512
"""Above this many subdirectories to deal out, Glob runs one ``rg`` over all of the start directory."""

SPLIT_MAX_ENTRIES = 4096
"""The most entries of one level Glob lists itself while dealing out a tree (the rest is ``rg``'s to stat)."""


def _parallel_runs() -> int:
    """How many ``rg --sortr=modified`` runs Glob starts at once: one per usable CPU, at most 4."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 4))


class _FileStats:
    """``lstat`` of files below a start directory, through directories opened by the sandbox.

    Each directory is opened once from its root with ``O_NOFOLLOW`` at every
    component (:meth:`~awf_mcp.builtins.sandbox.Sandbox.open_dir`) and the file
    is looked up in it without following a link, so a path ``rg`` printed can
    neither lead outside the roots nor name anything but a regular file. The
    verdicts are the ones :class:`_PathCheck` gives, plus the file's own check.
    """

    _MAX_OPEN = 256

    def __init__(self, sandbox: Sandbox, start: str) -> None:
        self._sandbox = sandbox
        self._prefix = start.rstrip("/") + "/"
        self._directories: dict[str, int | None] = {}
        self._denied = current_call().path_denied

    def real(self, raw: bytes) -> str | None:
        """The real path of ``./rel`` as ``rg`` printed it, or ``None`` when it is not acceptable."""
        real = _listed_path(self._prefix, raw)
        return None if real is None or self._denied(real) is not None else real

    def checked(self, raw: bytes) -> tuple[float, str] | None:
        """``(mtime, real)`` of ``./rel`` as ``rg`` printed it (:meth:`real`, :meth:`mtime`), or ``None``."""
        real = self.real(raw)
        if real is None:
            return None
        mtime = self.mtime(real)
        return None if mtime is None else (mtime, real)

    def mtime(self, real: str) -> float | None:
        """The modification time of regular file ``real``, or ``None`` (not a regular file inside)."""
        directory, name = os.path.split(real)
        if directory not in self._directories:
            if len(self._directories) >= self._MAX_OPEN:  # the oldest goes
                oldest = self._directories.pop(next(iter(self._directories)))
                if oldest is not None:
                    os.close(oldest)
            try:
                self._directories[directory] = self._sandbox.open_dir(directory)
            except ToolError:
                self._directories[directory] = None
        fd = self._directories[directory]
        if fd is None:
            return None
        try:
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            return None
        return info.st_mtime if stat.S_ISREG(info.st_mode) else None

    def relative(self, real: str) -> str:
        return real[len(self._prefix) :]

    def close(self) -> None:
        for fd in self._directories.values():
            if fd is not None:
                os.close(fd)
        self._directories.clear()


_SPLIT_LEVELS = 3
"""How many levels below the start directory Glob looks for enough directories to deal out."""

_MAX_DEPTH = 200
"""``--max-depth`` of :data:`~awf_mcp.builtins.ripgrep.WALK_OPTIONS`, counted from the start directory."""


class _Split(NamedTuple):
    """The tree dealt out: ``groups`` of directories ``depth`` levels down, and the files above them."""

    groups: list[list[str]]
    files: list[str]
    depth: int


def _split_start(sandbox: Sandbox, start: str, runs: int, *, max_depth: int | None) -> _Split | None:
    """The directories below ``start`` dealt into ``runs`` groups, and the regular files above them.

    Directories are taken one level down (with ``max_depth``), else as many
    levels down (at most :data:`_SPLIT_LEVELS`) as it takes to find four per
    run, as long as each level holds more of them, so that one big
    subdirectory does not leave a run alone with all the work. Paths are
    relative to ``start``. ``None`` when one run over ``.`` is better: a single
    run wanted, fewer than two directories, too many to pass as arguments, or
    a start directory of more than :data:`SPLIT_MAX_ENTRIES` entries (a level
    further down that has more is not used). ``.git`` and symbolic links are
    left out, as the walk leaves them out; a directory that cannot be opened is
    left out, as ``rg`` leaves it out.
    """
    if runs < 2:
        return None
    level, files, depth = [""], [], 0
    while level and depth < (1 if max_depth is not None else _SPLIT_LEVELS):
        below: list[str] = []
        below_files: list[str] = []
        for directory in level:
            if len(below) + len(below_files) > SPLIT_MAX_ENTRIES:
                break
            try:
                fd = sandbox.open_dir(os.path.join(start, directory) if directory else start)
            except ToolError:
                if not directory:
                    raise
                continue
            try:
                with os.scandir(fd) as entries:
                    for entry in entries:
                        if entry.name == ".git" or entry.is_symlink():
                            continue
                        if entry.is_dir(follow_symlinks=False):
                            below.append(directory + entry.name + "/")
                        elif entry.is_file(follow_symlinks=False):
                            below_files.append(directory + entry.name)
                        if len(below) + len(below_files) > SPLIT_MAX_ENTRIES:
                            break
            finally:
                os.close(fd)
        if len(below) + len(below_files) > SPLIT_MAX_ENTRIES:
            if not depth:
                return None  # a big flat directory: rg stats it faster than Python would
            break
        if depth and not len(level) < len(below) <= SPLIT_MAX_DIRECTORIES:
            break  # no more directories to deal out down there: the level above is dealt out
        level, depth = below, depth + 1
        files += below_files
        if len(level) >= 4 * runs:
            break
    if not 2 <= len(level) <= SPLIT_MAX_DIRECTORIES:
        return None
    level.sort()
    groups = [level[index::runs] for index in range(runs) if level[index::runs]]
    return _Split([[name.rstrip("/") for name in group] for group in groups], files, depth)


def newest_files(
    binary: str,
    sandbox: Sandbox,
    start: str,
    globs: Sequence[str],
    *,
    keep: int,
    max_depth: int | None,
    matches: Callable[[str], bool],
    cancelled: threading.Event,
) -> tuple[list[tuple[str, str, float]], int]:
    """The newest files below ``start`` matching ``globs``, and how many match in all.

    ``globs`` are relative to ``start`` and anchored there; ``matches`` is the
    same test in Python, for the files directly in ``start`` when the listing is
    split. ``rg`` lists the matching files newest first (``--sortr=modified``,
    which stats every file in one thread): the start directory's
    subdirectories are dealt into one group per CPU and each group gets its own
    ``rg``, so the stats run in parallel. The listings are merged lazily: the
    first ``keep``, plus every later one as new as the last of those (ties are
    broken by path by the caller), come back as ``(relative, real, mtime)``,
    validated and stated through the sandbox (:class:`_FileStats`); the rest
    are only counted, so the cost in Python does not grow with the number of
    matches.
    """
    arguments = [*WALK_OPTIONS, "--files", "--null", "--no-ignore", "--sortr=modified"]
    arguments += [f"--glob=/{ripgrep_glob(glob)}" for glob in globs]
    arguments.append("--glob=!.git")  # again after them: of the globs matching a path, the last decides
    # max_depth 1: only the start directory's own files, one small run
    split = None if max_depth == 1 else _split_start(sandbox, start, _parallel_runs(), max_depth=max_depth)
    stats = _FileStats(sandbox, start)
    with contextlib.ExitStack() as stack:
        stack.callback(stats.close)
        listings: list[_Listing | _Found] = []
        if split is None:
            groups = [([] if max_depth is None else [f"--max-depth={max_depth}"], ["."])]
        else:
            depth = [f"--max-depth={(_MAX_DEPTH if max_depth is None else max_depth) - split.depth}"]
            groups = [(depth, ["./" + name for name in group]) for group in split.groups]
            listings.append(_Found(stats, [name for name in split.files if matches(name)]))
        runs = [
            stack.enter_context(
                RipgrepRun(
                    binary, [*arguments, *extra, "--", *paths], cancelled, cwd=_open_start(sandbox, start)
                )
            )
            for extra, paths in groups
        ]
        listings += [_Listing(stats, run.batches(b"\0")) for run in runs]
        taken: list[tuple[float, str]] = []
        boundary: float | None = None
        for mtime, real in heapq.merge(*listings, key=lambda item: -item[0]):
            if len(taken) >= keep and mtime != boundary:
                break
            taken.append((mtime, real))
            if len(taken) == keep:
                boundary = mtime
            elif len(taken) >= 2 * keep:  # many ties: keep the first by path
                taken.sort(key=lambda item: (-item[0], item[1]))
                del taken[keep:]
        total = sum(listing.count_all() for listing in listings)
        for run in runs:
            if run.returncode == 2 and run.errors():
                raise failed(run)
    return [(stats.relative(real), real, mtime) for mtime, real in taken], total


class _Listing:
    """One newest-first listing as ``(mtime, real)`` of the acceptable files, counting them.

    Files are validated and stated only as they are taken; :meth:`count_all`
    counts the ones never taken without a step in Python per file.
    """

    def __init__(self, stats: _FileStats, batches: Iterator[tuple[list[bytes], dict[int, int]]]) -> None:
        self._stats = stats
        self._batches = batches
        self._batch: list[bytes] = []
        self._cut: dict[int, int] = {}
        self._index = 0
        self.counted = 0

    def __iter__(self) -> Iterator[tuple[float, str]]:
        while True:
            while self._index >= len(self._batch):
                batch = next(self._batches, None)
                if batch is None:
                    return
                (self._batch, self._cut), self._index = batch, 0
            index = self._index
            self._index += 1
            found = None if index in self._cut else self._stats.checked(self._batch[index])
            if found is not None:
                self.counted += 1
                yield found

    def count_all(self) -> int:
        """The files taken plus every one not reached (counted, not checked)."""
        rest = len(self._batch) - self._index
        for batch, _ in self._batches:
            rest += len(batch)
        self._batch, self._index = [], 0
        return self.counted + rest


class _Found:
    """Files found while dealing out the tree, as a listing: ``(mtime, real)`` newest first, counted."""

    def __init__(self, stats: _FileStats, names: Sequence[str]) -> None:
        found = []
        for name in names:
            checked = stats.checked(b"./" + os.fsencode(name))
            if checked is not None:
                found.append(checked)
        found.sort(key=lambda item: -item[0])
        self._found = found

    def __iter__(self) -> Iterator[tuple[float, str]]:
        return iter(self._found)

    def count_all(self) -> int:
        return len(self._found)
