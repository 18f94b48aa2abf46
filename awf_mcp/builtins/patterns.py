"""Glob patterns for Glob and for Grep's ``glob`` filter: braces, ``**``, classes.

Contract
--------
* :func:`expand_braces` turns ``a/{b,c}/*.{ts,tsx}`` into its alternatives
  (nested braces allowed, at most :data:`MAX_BRACE_EXPANSIONS`); a brace
  without a top-level comma, or unmatched, is literal.
* :func:`glob_regex` translates one brace-free, ``/``-separated pattern to a
  regular expression matching a whole relative path: ``*`` and ``?`` never
  match ``/``, a ``**`` segment matches any number of directories (zero
  included), ``[abc]``/``[!abc]`` are character classes, ``\\x`` is a literal
  ``x`` (the Glob tool refuses backslashes in its pattern, as in any path
  argument; Grep's ``glob`` filter accepts them). ``*`` also matches names
  that start with a dot.
* :class:`GlobMatcher` compiles a set of alternatives with RE2 (imported on
  first use), so matching is linear in the path length whatever the pattern.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from awf_mcp.builtins.limits import MAX_BRACE_EXPANSIONS
from awf_mcp.ports import ToolError, visible_text

_MAGIC = frozenset("*?[\\")


def has_magic(segment: str) -> bool:
    """True when ``segment`` holds a wildcard, a class or an escape."""
    return any(char in _MAGIC for char in segment)


def _matching_brace(pattern: str, start: int) -> tuple[int, list[int]] | None:
    """The index of the ``}`` closing ``pattern[start]`` and its top-level commas."""
    depth = 0
    commas: list[int] = []
    index = start
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                return index, commas
        elif char == "," and depth == 1:
            commas.append(index)
        index += 1
    return None


def expand_braces(pattern: str) -> list[str]:
    """Every alternative of ``pattern``'s ``{a,b}`` groups, in order, without duplicates."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        current = pending.pop(0)
        index = 0
        expanded = False
        while index < len(current):
            if current[index] == "\\":
                index += 2
                continue
            if current[index] == "{":
                found = _matching_brace(current, index)
                if found is not None and found[1]:
                    close, commas = found
                    bounds = [index, *commas, close]
                    head, tail = current[:index], current[close + 1 :]
                    options = [current[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
                    pending[:0] = [head + option + tail for option in options]
                    expanded = True
                    break
            index += 1
        if not expanded and current not in results:
            results.append(current)
        if len(results) + len(pending) > MAX_BRACE_EXPANSIONS:
            raise ToolError(f"pattern {pattern!r} expands to more than {MAX_BRACE_EXPANSIONS} alternatives")
    return results


def _class(segment: str, start: int) -> tuple[str, int] | None:
    """Translate the class opening at ``segment[start]``; ``None`` when it never closes."""
    index = start + 1
    negate = index < len(segment) and segment[index] in "!^"
    if negate:
        index += 1
    body: list[str] = []
    first = True
    while index < len(segment):
        char = segment[index]
        if char == "]" and not first:
            prefix = "[^/" if negate else "["
            return prefix + "".join(body) + "]", index + 1
        if char == "\\" and index + 1 < len(segment):
            index += 1
            char = segment[index]
        body.append("\\" + char if char in "[]^\\" else char)
        first = False
        index += 1
    return None


def _segment_regex(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "*":
            while index + 1 < len(segment) and segment[index + 1] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            translated = _class(segment, index)
            if translated is not None:
                out.append(translated[0])
                index = translated[1]
                continue
            out.append(re.escape(char))
        elif char == "\\" and index + 1 < len(segment):
            index += 1
            out.append(re.escape(segment[index]))
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def glob_regex(pattern: str) -> str:
    """A regular expression (RE2 syntax, unanchored) for brace-free ``pattern``."""
    segments = [segment for segment in pattern.split("/") if segment not in ("", ".")]
    out = ""
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            out += ".*" if last else "(?:[^/]*/)*"
            continue
        out += _segment_regex(segment) + ("" if last else "/")
    return out


class GlobMatcher:
    """Full-path matching against one or more brace-free glob patterns."""

    def __init__(self, patterns: Sequence[str]) -> None:
        import re2

        options = re2.Options()
        options.log_errors = False
        body = "|".join(f"(?:{glob_regex(pattern)})" for pattern in patterns)
        try:
            self._regex: Any = re2.compile(f"^(?:{body})$", options)
        except re2.error as exc:
            raise ToolError(f"invalid glob pattern {', '.join(patterns)!r}: {exc}") from None

    def matches(self, path: str) -> bool:
        """True when relative ``path`` (``/``-separated) matches one of the patterns.

        A name that is not UTF-8 is matched in the form every tool shows it (``caf\\xe9.txt``).
        """
        try:
            return self._regex.search(path) is not None
        except UnicodeEncodeError:
            return self._regex.search(visible_text(path)) is not None
