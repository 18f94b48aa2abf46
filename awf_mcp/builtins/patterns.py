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

from awf_mcp.builtins.limits import MAX_BRACE_DEPTH, MAX_BRACE_EXPANSIONS, MAX_EXPANDED_CHARS
from awf_mcp.ports import ToolError, visible_text

_MAGIC = frozenset("*?[\\")


def has_magic(segment: str) -> bool:
    """True when ``segment`` holds a wildcard, a class or an escape."""
    return any(char in _MAGIC for char in segment)


_Sequence = list["str | list[_Sequence]"]
"""A parsed pattern: literal text and alternations (each a list of alternative sequences)."""


def _brace_groups(pattern: str) -> dict[int, tuple[int, list[int]]]:
    """Each expanding ``{``'s index -> its closing ``}`` and top-level commas, in one pass.

    A brace that never closes, or closes without a top-level comma, is literal.
    """
    groups: dict[int, tuple[int, list[int]]] = {}
    open_braces: list[tuple[int, list[int]]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            open_braces.append((index, []))
            if len(open_braces) > MAX_BRACE_DEPTH:
                raise ToolError(f"pattern nests braces more than {MAX_BRACE_DEPTH} deep")
        elif char == "," and open_braces:
            open_braces[-1][1].append(index)
        elif char == "}" and open_braces:
            opening, commas = open_braces.pop()
            if commas:
                groups[opening] = (index, commas)
        index += 1
    return groups


def _parse(pattern: str, start: int, end: int, groups: dict[int, tuple[int, list[int]]]) -> _Sequence:
    parts: _Sequence = []
    literal_from = index = start
    while index < end:
        if pattern[index] == "\\":
            index += 2
            continue
        group = groups.get(index)
        if group is None:
            index += 1
            continue
        close, commas = group
        if literal_from < index:
            parts.append(pattern[literal_from:index])
        bounds = [index, *commas, close]
        parts.append([_parse(pattern, bounds[i] + 1, bounds[i + 1], groups) for i in range(len(bounds) - 1)])
        index = literal_from = close + 1
    if literal_from < end:
        parts.append(pattern[literal_from:end])
    return parts


def _count(sequence: _Sequence, cap: int) -> int:
    """How many strings ``sequence`` expands to, stopping at ``cap + 1``."""
    total = 1
    for part in sequence:
        if isinstance(part, list):
            total *= min(sum(_count(option, cap) for option in part), cap + 1)
            if total > cap:
                return cap + 1
    return total


def _expand(sequence: _Sequence) -> list[str]:
    results = [""]
    for part in sequence:
        if isinstance(part, str):
            results = [prefix + part for prefix in results]
        else:
            options = [text for option in part for text in _expand(option)]
            results = [prefix + option for prefix in results for option in options]
    return results


def expand_braces(pattern: str) -> list[str]:
    """Every alternative of ``pattern``'s ``{a,b}`` groups, in order, without duplicates.

    The cost is bounded before any work: the pattern is parsed in one pass, the number of
    alternatives counted, and a pattern over :data:`MAX_BRACE_EXPANSIONS` alternatives (or
    :data:`MAX_EXPANDED_CHARS` characters in all) is refused before one is built.
    """
    groups = _brace_groups(pattern)
    if not groups:
        return [pattern]
    parsed = _parse(pattern, 0, len(pattern), groups)
    count = _count(parsed, MAX_BRACE_EXPANSIONS)
    if count > MAX_BRACE_EXPANSIONS:
        raise ToolError(f"pattern {pattern[:200]!r} expands to more than {MAX_BRACE_EXPANSIONS} alternatives")
    if count * len(pattern) > MAX_EXPANDED_CHARS:
        raise ToolError(
            f"pattern of {len(pattern):,} characters with {count} alternatives is too large to expand "
            f"(limit {MAX_EXPANDED_CHARS:,} characters in all); shorten it"
        )
    return list(dict.fromkeys(_expand(parsed)))


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
