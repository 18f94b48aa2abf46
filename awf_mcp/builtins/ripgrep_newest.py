"""Glob's listing in parallel: the tree dealt out to several ``rg`` runs, their listings merged newest first.

Contract
--------
* :func:`deal_out` lists, through the sandbox, the first levels below the
  start directory and deals their directories into one group per run (paths
  relative to the start directory), with the regular files found above them.
  It reads at most a bounded number of entries per level and gives ``None``
  when one run over the whole start directory is better.
* :class:`Listing` (one ``rg --sortr=modified`` run's output) and
  :class:`FoundFiles` (the files :func:`deal_out` found) are newest-first
  listings of ``(mtime, real)``; each file is validated and stated by a
  ``checked`` function given to them (``None`` leaves a file out), and only as
  it is taken.
* :func:`take_newest` merges listings lazily, taking the newest ``keep`` files
  plus every later one as new as the last of those (cut back to the first
  ``keep`` by path each time they reach twice as many; the caller breaks the
  remaining ties by path), and counts every file of every listing without a
  step in Python per file not taken, so the cost does not grow with the
  number of matches.
"""

from __future__ import annotations

import heapq
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.ports import ToolError

_SPLIT_LEVELS = 3
"""How many levels below the start directory Glob looks for enough directories to deal out."""

Checked = Callable[[bytes], tuple[float, str] | None]
"""``(mtime, real)`` of a regular file ``./rel`` below the start directory, or ``None`` to leave it out."""


class Split(NamedTuple):
    """The tree dealt out: ``groups`` of directories ``depth`` levels down, and the files above them."""

    groups: list[list[str]]
    files: list[str]
    depth: int


def deal_out(
    sandbox: Sandbox,
    start: str,
    runs: int,
    *,
    max_depth: int | None,
    max_entries: int,
    max_directories: int,
) -> Split | None:
    """The directories below ``start`` dealt into ``runs`` groups, and the regular files above them.

    Directories are taken one level down (with ``max_depth``), else as many
    levels down (at most :data:`_SPLIT_LEVELS`) as it takes to find four per
    run, as long as each level holds more of them, so that one big
    subdirectory does not leave a run alone with all the work. Paths are
    relative to ``start``. ``None`` when one run over ``.`` is better: a single
    run wanted, fewer than two directories, more than ``max_directories`` (too
    many to pass as arguments), or a start directory of more than
    ``max_entries`` entries (a level further down that has more is not used).
    ``.git`` and symbolic links are left out, as the walk leaves them out; a
    directory that cannot be opened is left out, as ``rg`` leaves it out.
    """
    if runs < 2:
        return None
    level, files, depth = [""], [], 0
    while level and depth < (1 if max_depth is not None else _SPLIT_LEVELS):
        below: list[str] = []
        below_files: list[str] = []
        for directory in level:
            if len(below) + len(below_files) > max_entries:
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
                        if len(below) + len(below_files) > max_entries:
                            break
            finally:
                os.close(fd)
        if len(below) + len(below_files) > max_entries:
            if not depth:
                return None  # a big flat directory: rg stats it faster than Python would
            break
        if depth and not len(level) < len(below) <= max_directories:
            break  # no more directories to deal out down there: the level above is dealt out
        level, depth = below, depth + 1
        files += below_files
        if len(level) >= 4 * runs:
            break
    if not 2 <= len(level) <= max_directories:
        return None
    level.sort()
    groups = [level[index::runs] for index in range(runs) if level[index::runs]]
    return Split([[name.rstrip("/") for name in group] for group in groups], files, depth)


class Listing:
    """One newest-first listing as ``(mtime, real)`` of the acceptable files, counting them.

    Files are validated and stated only as they are taken; :meth:`count_all`
    counts the ones never taken without a step in Python per file.
    """

    def __init__(self, checked: Checked, batches: Iterator[tuple[list[bytes], dict[int, int]]]) -> None:
        self._checked = checked
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
            found = None if index in self._cut else self._checked(self._batch[index])
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


class FoundFiles:
    """Files found while dealing out the tree, as a listing: ``(mtime, real)`` newest first, counted."""

    def __init__(self, checked: Checked, names: Sequence[str]) -> None:
        found = []
        for name in names:
            verdict = checked(b"./" + os.fsencode(name))
            if verdict is not None:
                found.append(verdict)
        found.sort(key=lambda item: -item[0])
        self._found = found

    def __iter__(self) -> Iterator[tuple[float, str]]:
        return iter(self._found)

    def count_all(self) -> int:
        """How many files were found (all of them checked)."""
        return len(self._found)


def take_newest(listings: Iterable[Listing | FoundFiles], keep: int) -> tuple[list[tuple[float, str]], int]:
    """The newest ``(mtime, real)`` of ``listings`` merged (see the contract), and how many they hold."""
    listings = list(listings)
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
    return taken, sum(listing.count_all() for listing in listings)
