"""The Glob tool: files matching a glob pattern, newest first.

Contract
--------
* ``pattern`` is relative to ``cwd`` (default: the first root). An absolute
  pattern is allowed only without ``cwd``, and only where its fixed leading
  directories resolve inside a root; a ``..`` after a wildcard is refused.
* Regular files are matched; a pattern ending in ``/`` matches directories
  instead. ``.git`` is skipped; symbolic links are neither followed nor listed
  (as ``rg --files`` does). Hidden files are listed; ``.gitignore`` does not
  apply.
* The files are listed by ``rg --files`` when ripgrep is found
  (:mod:`awf_mcp.builtins.ripgrep_search`), else by the descriptor-based walk
  (:mod:`awf_mcp.builtins.walk`); the results are the same. Directories
  (a pattern ending in ``/``) always come from the walk.
* Results are one path a line, relative to the first root (absolute when in
  another root), sorted by modification time, newest first (ties by path),
  capped at :data:`GLOB_MAX_RESULTS` paths and at ``output_bytes`` (default
  :data:`SEARCH_OUTPUT_BYTES`) with a note saying how many matched. Only the
  newest paths are kept while walking, so memory does not grow with matches.
* A name that is not valid UTF-8, or holds control characters, is shown (and
  matched) escaped: ``caf\\xe9.txt`` (see :func:`~awf_mcp.builtins.listing.printable`).
* Cost is bounded: braces are counted before expansion, alternatives sharing
  a directory share one walk, and the walk stops at the call's ``cancelled``
  flag (client cancellation or the call timeout).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from awf_mcp.budget import current_budget
from awf_mcp.budget import note as note_text
from awf_mcp.builtins.args import optional_int, required_string, string_argument
from awf_mcp.builtins.limits import GLOB_MAX_RESULTS, MAX_GLOB_OFFSET, SEARCH_OUTPUT_BYTES
from awf_mcp.builtins.listing import BoundedLines, OutputFull, printable
from awf_mcp.builtins.patterns import GlobMatcher, expand_braces, has_magic
from awf_mcp.builtins.ripgrep import ripgrep_binary
from awf_mcp.builtins.ripgrep_search import newest_files
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.builtins.walk import Cancelled, walk
from awf_mcp.ports import ToolError, ToolResult, current_call

_NOTE_RESERVE = 200
"""Bytes of the output budget kept for the closing note."""


def _split(sandbox: Sandbox, alternative: str, base: str) -> tuple[str, list[str]] | None:
    """The resolved directory to walk from and the pattern segments left to match there."""
    anchor = "/" if alternative.startswith("/") else base
    segments = [segment for segment in alternative.split("/") if segment not in ("", ".")]
    if not segments:
        raise ToolError(f"pattern {alternative!r} names no files")
    fixed = 0
    while fixed < len(segments) - 1 and not has_magic(segments[fixed]):
        fixed += 1
    rest = segments[fixed:]
    if ".." in rest:
        raise ToolError(f"pattern {alternative!r} is refused: '..' may only appear before the first wildcard")
    if fixed:
        prefix = "/".join(segments[:fixed])
        start = sandbox.resolve(("/" + prefix) if anchor == "/" else prefix, relative_to=anchor)
    elif anchor == "/":
        start = sandbox.resolve("/")
    else:
        start = anchor
    if not os.path.isdir(start):
        return None
    return start, rest


def _escape_glob(path: str) -> str:
    """``path`` with its glob metacharacters made literal (``\\`` escapes them)."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in path)


def _walk_plan(sandbox: Sandbox, pattern: str, base: str, cancelled: threading.Event) -> dict[str, list[str]]:
    """The directories to walk, each with the patterns to match below it.

    Alternatives sharing a start directory share its walk; one whose start lies
    inside another's is matched during the outer walk, so no directory is
    walked twice and no path is found twice.
    """
    by_start: dict[str, list[str]] = {}
    for alternative in expand_braces(pattern, cancelled):
        if cancelled.is_set():
            raise Cancelled("the call was cancelled")
        split = _split(sandbox, alternative, base)
        if split is not None:
            by_start.setdefault(split[0], []).append("/".join(split[1]))
    plan: dict[str, list[str]] = {}
    for start in sorted(by_start, key=len):
        outer = next((chosen for chosen in plan if start.startswith(chosen.rstrip("/") + "/")), None)
        inside_git = outer is not None and ".git" in start[len(outer) :].split("/")
        if outer is None or inside_git:
            plan[start] = list(by_start[start])
        else:
            prefix = _escape_glob(start[len(outer.rstrip("/")) + 1 :])
            plan[outer].extend(f"{prefix}/{rest}" for rest in by_start[start])
    return plan


def _shown_below(sandbox: Sandbox, start: str) -> Callable[[str, str], str]:
    """How a file below ``start`` is shown, given its path ``rel`` to ``start`` and its ``real`` path.

    The same text as ``printable(sandbox.display(real))``, with the part for
    ``start`` worked out once when ``start`` lies inside the first root
    (:func:`printable` escapes character by character, so it can be).
    """
    shown_start = sandbox.display(start)
    if shown_start == ".":
        return lambda rel, real: printable(rel)
    if not os.path.isabs(shown_start):  # inside the first root, and so is every file below it
        prefix = printable(shown_start) + "/"
        return lambda rel, real: prefix + printable(rel)
    return lambda rel, real: printable(sandbox.display(real))


@dataclass(slots=True)
class _Newest:
    """The ``keep`` newest paths seen so far (ties by path), in memory bounded by ``keep``."""

    keep: int
    matched: int = 0
    items: list[tuple[float, str]] = field(default_factory=list)

    def add(self, mtime: float, shown: str) -> None:
        self.matched += 1
        self.items.append((-mtime, shown))
        if len(self.items) >= 2 * self.keep:
            self.items = sorted(self.items)[: self.keep]

    def ordered(self) -> list[str]:
        return [shown for _, shown in sorted(self.items)[: self.keep]]


def glob_files(
    sandbox: Sandbox, arguments: Mapping[str, Any], *, output_bytes: int | None = None
) -> ToolResult:
    """Run the Glob tool; its text stays within ``output_bytes`` (default: the call's output budget)."""
    if output_bytes is None:
        output_bytes = min(current_budget(outside=SEARCH_OUTPUT_BYTES), SEARCH_OUTPUT_BYTES)
    pattern = required_string(arguments, "pattern")
    cwd = string_argument(arguments, "cwd", required=False)
    offset = optional_int(arguments, "offset", minimum=0, maximum=MAX_GLOB_OFFSET) or 0
    keep = offset + GLOB_MAX_RESULTS
    sandbox.check_argument(pattern, "pattern")
    if pattern.startswith("/") and cwd is not None:
        raise ToolError(
            f"pattern {pattern!r} is absolute while cwd is set: drop cwd, or make the pattern relative to it"
        )
    base = sandbox.resolve_dir(cwd, "cwd")
    dirs_only = pattern.endswith("/")
    cancelled = current_call().cancelled
    newest = _Newest(keep)
    for start, rests in _walk_plan(sandbox, pattern, base, cancelled).items():
        matcher = GlobMatcher(rests, shown=pattern)
        deep = any(segment == "**" for rest in rests for segment in rest.split("/"))
        depth = (
            None if deep else max(len([s for s in rest.split("/") if s not in ("", ".")]) for rest in rests)
        )
        binary = None if dirs_only else ripgrep_binary()
        if binary is not None:
            chosen, total = newest_files(
                binary,
                sandbox,
                start,
                rests,
                keep=keep,
                max_depth=depth,
                matches=matcher.matches,
                cancelled=cancelled,
            )
            show = _shown_below(sandbox, start)
            for rel, real, mtime in chosen:
                if matcher.matches(rel):
                    newest.add(mtime, show(rel, real))
            newest.matched += max(total - len(chosen), 0)
            continue
        for entry in walk(sandbox, start, max_depth=depth, cancelled=cancelled):
            if entry.kind != ("dir" if dirs_only else "file") or not matcher.matches(entry.rel):
                continue
            newest.add(entry.mtime(), printable(sandbox.display(entry.real)))
    if not newest.matched:
        return ToolResult.text(f"No files match {pattern!r}.")
    output = BoundedLines(max_lines=GLOB_MAX_RESULTS, max_bytes=output_bytes - _NOTE_RESERVE, skip=offset)
    with contextlib.suppress(OutputFull):
        for shown in newest.ordered():
            output.add(shown)
    lines = output.lines
    if not lines:
        return ToolResult.text(f"No files past offset {offset:,}: {newest.matched:,} matched.")
    left = newest.matched - output.next_offset
    if left > 0:
        lines.append(
            note_text(
                f"showing matches {offset + 1:,}-{output.next_offset:,} of {newest.matched:,}, newest first; "
                f"pass offset={output.next_offset} for the next {min(left, GLOB_MAX_RESULTS):,}"
            )
        )
    return ToolResult.text("\n".join(lines))
