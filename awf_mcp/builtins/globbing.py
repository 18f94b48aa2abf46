"""The Glob tool: files matching a glob pattern, newest first.

Contract
--------
* ``pattern`` is relative to ``cwd`` (default: the first root). An absolute
  pattern is allowed only without ``cwd``, and only where its fixed leading
  directories resolve inside a root; a ``..`` after a wildcard is refused.
* Files (and symbolic links to files inside the roots) are matched; a pattern
  ending in ``/`` matches directories instead. ``.git`` is skipped; symbolic
  links to directories are not followed.
* Results are one path a line, relative to the first root (absolute when in
  another root), sorted by modification time, newest first (ties by path). A page
  holds at most :data:`GLOB_MAX_RESULTS` paths and the call's output budget; a note
  says how many matched and the ``offset`` of the next page.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from awf_mcp import budget
from awf_mcp.builtins.args import optional_int, required_string, string_argument
from awf_mcp.builtins.limits import GLOB_MAX_RESULTS
from awf_mcp.builtins.patterns import GlobMatcher, expand_braces, has_magic
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.builtins.walk import walk
from awf_mcp.ports import ToolError, ToolResult, current_call, visible_text

NOTE_ROOM = 200
"""Bytes of the budget kept for the final note."""


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


def glob_files(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Glob tool."""
    pattern = required_string(arguments, "pattern")
    cwd = string_argument(arguments, "cwd", required=False)
    offset = optional_int(arguments, "offset", minimum=0) or 0
    sandbox.check_argument(pattern, "pattern")
    if pattern.startswith("/") and cwd is not None:
        raise ToolError(
            f"pattern {pattern!r} is absolute while cwd is set: drop cwd, or make the pattern relative to it"
        )
    base = sandbox.resolve_dir(cwd, "cwd")
    dirs_only = pattern.endswith("/")
    cancelled = current_call().cancelled
    found: dict[str, float] = {}
    for alternative in expand_braces(pattern):
        split = _split(sandbox, alternative, base)
        if split is None:
            continue
        start, rest = split
        matcher = GlobMatcher(["/".join(rest)])
        depth = None if "**" in rest else len(rest)
        for entry in walk(sandbox, start, max_depth=depth, cancelled=cancelled):
            is_dir = entry.kind == "dir" or (entry.target is not None and os.path.isdir(entry.target))
            if is_dir != dirs_only or not matcher.matches(entry.rel):
                continue
            shown = sandbox.display(entry.real)
            if shown not in found:
                found[shown] = entry.mtime()
    if not found:
        return ToolResult.text(f"No files match {pattern!r}.")
    ordered = sorted(found, key=lambda path: (-found[path], path))
    return ToolResult.text(_page(ordered, offset, budget.current_budget() - NOTE_ROOM))


def _page(ordered: list[str], offset: int, room: int) -> str:
    """Paths from ``offset``, at most :data:`GLOB_MAX_RESULTS` and ``room`` bytes, and the note."""
    lines: list[str] = []
    for path in ordered[offset : offset + GLOB_MAX_RESULTS]:
        shown = visible_text(path)
        room -= budget.size(shown) + 1
        if room < 0:
            break
        lines.append(shown)
    if not lines:
        return f"No files past offset {offset:,}: {len(ordered):,} matched."
    left = len(ordered) - offset - len(lines)
    if left > 0:
        lines.append(
            budget.note(
                f"showing matches {offset + 1:,}-{offset + len(lines):,} of {len(ordered):,}, newest first; "
                f"pass offset={offset + len(lines)} for the next {min(left, GLOB_MAX_RESULTS):,}"
            )
        )
    return "\n".join(lines)
