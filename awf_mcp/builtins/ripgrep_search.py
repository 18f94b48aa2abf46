"""Grep's directory search and Glob's file listing on ``rg``, with the pure-Python engine's results.

This module decides which ``rg`` runs a search takes, with which options, and
when they stop; the rest lies beside it: whether ``rg`` may search a tree and
the ignore rules it gets (:mod:`~awf_mcp.builtins.ripgrep_scope`), Grep's lines
made of its output (:mod:`~awf_mcp.builtins.ripgrep_matches`), Glob's tree
dealt out and its listings merged (:mod:`~awf_mcp.builtins.ripgrep_newest`),
and running ``rg`` itself (:mod:`~awf_mcp.builtins.ripgrep`).

Contract
--------
* :func:`grep_tree` searches a resolved directory and adds Grep's output lines
  to a :class:`~awf_mcp.builtins.listing.BoundedLines`, formatted exactly as the
  pure-Python engine formats them (see
  :func:`~awf_mcp.builtins.ripgrep_matches.add_lines`). Files come in the same
  order (depth first, names sorted: what ``rg --sort=path`` gives, or a
  parallel run's output put in that order, see :func:`grep_tree`). When the
  output is full (``OutputFull``) or the call is cancelled, ``rg`` is killed at
  once.
* :func:`newest_files` lists the regular files below a resolved directory
  that match a set of globs (hidden ones included, ``.git`` skipped, symbolic
  links neither followed nor listed, ignore files not applied), newest first,
  handing over only the newest and counting the rest.
* Every path ``rg`` returns is checked before it is used: it must lie below the
  searched directory, inside the roots, with no symbolic link among its
  directories; then each file is opened again through the sandbox (Glob:
  each one it returns, :class:`_FileStats`; Grep: each one it shows, keeping
  only the lines that file holds, see
  :class:`~awf_mcp.builtins.ripgrep_matches.MatchVerifier`). ``rg`` walks by
  path, not by descriptor; see docs/security.md.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Callable, Sequence

from awf_mcp.builtins.listing import BoundedLines
from awf_mcp.builtins.patterns import ripgrep_glob
from awf_mcp.builtins.ripgrep import WALK_OPTIONS, RipgrepRun, failed, rust_regex
from awf_mcp.builtins.ripgrep_matches import MatchVerifier, add_lines, in_path_order, match_items, shown_names
from awf_mcp.builtins.ripgrep_newest import FoundFiles, Listing, Split, deal_out, take_newest
from awf_mcp.builtins.ripgrep_scope import ignore_rules_file, listed_path
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.ports import ToolError, current_call


def _open_start(sandbox: Sandbox, start: str) -> int:
    """A descriptor of ``start`` opened through the sandbox: ``rg`` starts in that very directory."""
    return sandbox.open_dir(start)


PARALLEL_COLLECT_BYTES = 4 * 1024 * 1024
"""Output of a parallel ``rg`` run kept for sorting; past it, the search is redone in path order."""


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
    :data:`~awf_mcp.builtins.limits.GREP_MAX_LINE_BYTES` (the pure-Python
    engine does not search those).
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
    verifier = MatchVerifier(sandbox)
    shown = shown_names(sandbox, target, accept, verifier)
    separator = b"\0" if mode == "files_with_matches" else b"\n"
    with contextlib.ExitStack() as stack:
        stack.callback(verifier.close)
        if gitignore and ancestor_ignores:
            arguments.append(f"--ignore-file={stack.enter_context(ignore_rules_file(ancestor_ignores)).name}")
        arguments += ["--regexp", rust_regex(pattern), "--", "."]

        def start(*extra: str) -> RipgrepRun:
            return RipgrepRun(binary, [*extra, *arguments], cancelled, cwd=_open_start(sandbox, target))

        with start() as run:
            collected = in_path_order(match_items(run.records(separator), mode), PARALLEL_COLLECT_BYTES)
            if collected is not None and run.returncode == 2 and not collected and run.errors():
                raise failed(run)
        if collected is not None:
            return add_lines(collected, mode, before or after, shown, verifier, output)
        with start("--sort=path") as run:
            items = match_items(run.records(separator), mode)
            long_lines = add_lines(items, mode, before or after, shown, verifier, output)
            if run.returncode == 2 and not output.lines and run.errors():
                raise failed(run)
        return long_lines


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
    path must stay below the start directory
    (:func:`~awf_mcp.builtins.ripgrep_scope.listed_path`) and be allowed by the
    call; the file's own check follows.
    """

    _MAX_OPEN = 256

    def __init__(self, sandbox: Sandbox, start: str) -> None:
        self._sandbox = sandbox
        self._prefix = start.rstrip("/") + "/"
        self._directories: dict[str, int | None] = {}
        self._denied = current_call().path_denied

    def real(self, raw: bytes) -> str | None:
        """The real path of ``./rel`` as ``rg`` printed it, or ``None`` when it is not acceptable."""
        real = listed_path(self._prefix, raw)
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
        """``real`` relative to the start directory."""
        return real[len(self._prefix) :]

    def close(self) -> None:
        """Close the directories kept open."""
        for fd in self._directories.values():
            if fd is not None:
                os.close(fd)
        self._directories.clear()


_MAX_DEPTH = 200
"""``--max-depth`` of :data:`~awf_mcp.builtins.ripgrep.WALK_OPTIONS`, counted from the start directory."""


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
    ``rg``, so the stats run in parallel (:func:`~awf_mcp.builtins.ripgrep_newest.deal_out`,
    within :data:`SPLIT_MAX_ENTRIES` and :data:`SPLIT_MAX_DIRECTORIES`). The
    listings are merged lazily (:func:`~awf_mcp.builtins.ripgrep_newest.take_newest`): the
    first ``keep``, plus every later one as new as the last of those (ties are
    broken by path by the caller), come back as ``(relative, real, mtime)``,
    validated and stated through the sandbox (:class:`_FileStats`); the rest
    are only counted, so the cost in Python does not grow with the number of
    matches.
    """
    arguments = [*WALK_OPTIONS, "--files", "--null", "--no-ignore", "--sortr=modified"]
    arguments += [f"--glob=/{ripgrep_glob(glob)}" for glob in globs]
    arguments.append("--glob=!.git")  # again after them: of the globs matching a path, the last decides
    split: Split | None = None
    if max_depth != 1:  # max_depth 1: only the start directory's own files, one small run
        split = deal_out(
            sandbox,
            start,
            _parallel_runs(),
            max_depth=max_depth,
            max_entries=SPLIT_MAX_ENTRIES,
            max_directories=SPLIT_MAX_DIRECTORIES,
        )
    stats = _FileStats(sandbox, start)
    with contextlib.ExitStack() as stack:
        stack.callback(stats.close)
        listings: list[Listing | FoundFiles] = []
        if split is None:
            groups = [([] if max_depth is None else [f"--max-depth={max_depth}"], ["."])]
        else:
            depth = [f"--max-depth={(_MAX_DEPTH if max_depth is None else max_depth) - split.depth}"]
            groups = [(depth, ["./" + name for name in group]) for group in split.groups]
            listings.append(FoundFiles(stats.checked, [name for name in split.files if matches(name)]))
        runs = [
            stack.enter_context(
                RipgrepRun(
                    binary, [*arguments, *extra, "--", *paths], cancelled, cwd=_open_start(sandbox, start)
                )
            )
            for extra, paths in groups
        ]
        listings += [Listing(stats.checked, run.batches(b"\0")) for run in runs]
        taken, total = take_newest(listings, keep)
        for run in runs:
            if run.returncode == 2 and run.errors():
                raise failed(run)
    return [(stats.relative(real), real, mtime) for mtime, real in taken], total
