"""Glob patterns for Glob and for Grep's ``glob`` filter: braces, ``**``, classes.

Contract
--------
* :func:`expand_braces` turns ``a/{b,c}/*.{ts,tsx}`` into its alternatives
  (nested braces allowed, at most :data:`MAX_BRACE_DEPTH` deep,
  :data:`MAX_BRACE_EXPANSIONS` alternatives and
  :data:`MAX_BRACE_EXPANDED_CHARS` characters in all); a brace without a top-level
  comma, or unmatched, is literal. The pattern is parsed once and the
  alternatives counted and measured before any is built, so the cost is
  bounded up front: linear in the pattern for a refused one, linear in the
  character cap for an accepted one.
* :func:`glob_regex` translates one brace-free, ``/``-separated pattern to a
  regular expression matching a whole relative path: ``*`` and ``?`` never
  match ``/``, a ``**`` segment matches any number of directories (zero
  included), ``[abc]``/``[!abc]`` are character classes, ``\\x`` is a literal
  ``x`` (the Glob tool refuses backslashes in its pattern, as in any path
  argument; Grep's ``glob`` filter accepts them). ``*`` also matches names
  that start with a dot.
* :class:`GlobMatcher` compiles a set of alternatives with RE2 (imported on
  first use), so matching is linear in the path length whatever the pattern.
  An invalid or too large pattern is a :class:`ToolError` in one sentence
  (:func:`re2_reason` words RE2's own complaint as text, never as bytes).
  Paths are matched as :func:`~awf_mcp.builtins.listing.printable` shows
  them: a byte that is not valid UTF-8 is the four characters ``\\xNN``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Any

from awf_mcp.builtins.limits import MAX_BRACE_DEPTH, MAX_BRACE_EXPANDED_CHARS, MAX_BRACE_EXPANSIONS
from awf_mcp.builtins.listing import printable
from awf_mcp.builtins.walk import Cancelled
from awf_mcp.ports import ToolError

_MAGIC = frozenset("*?[\\")


def has_magic(segment: str) -> bool:
    """True when ``segment`` holds a wildcard, a class or an escape."""
    return any(char in _MAGIC for char in segment)


def _brace_pairs(pattern: str) -> dict[int, tuple[int, list[int]]]:
    """Each expanding ``{`` (matched, with a top-level comma): its ``}`` and its top-level commas.

    One pass with a stack, so the cost is linear in the pattern's length.
    """
    pairs: dict[int, tuple[int, list[int]]] = {}
    stack: list[tuple[int, list[int]]] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            stack.append((index, []))
        elif char == "}" and stack:
            opened, commas = stack.pop()
            if commas:
                pairs[opened] = (index, commas)
        elif char == "," and stack:
            stack[-1][1].append(index)
        index += 1
    return pairs


_Sequence = list[Any]
"""A parsed pattern: literal text (``str``) and groups, each group a list of alternative sequences."""


def _parse(
    pattern: str, pairs: dict[int, tuple[int, list[int]]], start: int, end: int, depth: int
) -> _Sequence:
    if depth > MAX_BRACE_DEPTH:
        raise ToolError(
            f"pattern {_shown(pattern)} nests {{a,b}} groups deeper than {MAX_BRACE_DEPTH} levels; "
            "simplify it"
        )
    sequence: _Sequence = []
    literal = start
    index = start
    while index < end:
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{" and index in pairs:
            close, commas = pairs[index]
            if literal < index:
                sequence.append(pattern[literal:index])
            bounds = [index, *commas, close]
            sequence.append(
                [
                    _parse(pattern, pairs, bounds[i] + 1, bounds[i + 1], depth + 1)
                    for i in range(len(bounds) - 1)
                ]
            )
            index = literal = close + 1
            continue
        index += 1
    if literal < end:
        sequence.append(pattern[literal:end])
    return sequence


def _measure(sequence: _Sequence, cap: int) -> tuple[int, int]:
    """How many alternatives ``sequence`` expands to and their total length, each saturating above ``cap``."""
    count, length = 1, 0
    for part in sequence:
        if isinstance(part, str):
            part_count, part_length = 1, len(part)
        else:
            measured = [_measure(option, cap) for option in part]
            part_count = min(sum(option[0] for option in measured), cap + 1)
            part_length = min(sum(option[1] for option in measured), cap + 1)
        count, length = (
            min(count * part_count, cap + 1),
            min(length * part_count + part_length * count, cap + 1),
        )
    return count, length


def _generate(sequence: _Sequence, cancelled: threading.Event | None) -> list[str]:
    results = [""]
    for part in sequence:
        if cancelled is not None and cancelled.is_set():
            raise Cancelled("the call was cancelled")
        if isinstance(part, str):
            results = [head + part for head in results]
            continue
        options = [text for option in part for text in _generate(option, cancelled)]
        results = [head + option for head in results for option in options]
    return results


def _shown(pattern: str) -> str:
    return repr(pattern if len(pattern) <= 200 else pattern[:150] + "..." + pattern[-40:])


def expand_braces(pattern: str, cancelled: threading.Event | None = None) -> list[str]:
    """Every alternative of ``pattern``'s ``{a,b}`` groups, in order, without duplicates.

    The number of alternatives is counted on the parsed pattern before any is
    built, so a pattern over :data:`MAX_BRACE_EXPANSIONS` costs time linear in
    its length; building stops when ``cancelled`` is set.
    """
    pairs = _brace_pairs(pattern)
    if not pairs:
        return [pattern]
    sequence = _parse(pattern, pairs, 0, len(pattern), 0)
    count, length = _measure(sequence, MAX_BRACE_EXPANDED_CHARS)
    if count > MAX_BRACE_EXPANSIONS:
        raise ToolError(
            f"pattern {_shown(pattern)} expands to more than {MAX_BRACE_EXPANSIONS} alternatives; "
            "use fewer {a,b} groups"
        )
    if length > MAX_BRACE_EXPANDED_CHARS:
        raise ToolError(
            f"pattern {_shown(pattern)} expands to more than {MAX_BRACE_EXPANDED_CHARS:,} characters in all; "
            "use fewer or shorter {a,b} alternatives"
        )
    return list(dict.fromkeys(_generate(sequence, cancelled)))


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


_BYTE_ESCAPE = re.compile(r"\\x[89a-fA-F][0-9a-fA-F]")
"""How a name's undecodable byte is shown (:func:`printable`), and so how a pattern names it."""


def ripgrep_glob(glob: str) -> str:
    """``glob`` for ``rg --glob``, which takes UTF-8 only: each ``\\xNN`` byte escape becomes ``*``.

    The wider glob lets ``rg`` list the file whose name holds the byte; the caller's
    :class:`GlobMatcher` (which matches names as :func:`printable` shows them) decides.
    """
    return _BYTE_ESCAPE.sub("*", glob)


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
        elif char == "\\" and _BYTE_ESCAPE.match(segment, index):
            out.append(re.escape(segment[index : index + 4]))  # a byte shown as \xNN: matched as shown
            index += 4
            continue
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


def re2_reason(exc: Exception) -> str:
    """RE2's complaint in ``exc`` as plain text (the module raises it as bytes)."""
    reason = exc.args[0] if exc.args else exc
    if isinstance(reason, bytes):
        reason = reason.decode("utf-8", "replace")
    text = str(reason)
    if text.startswith("invalid character class range: "):
        low_high = text.removeprefix("invalid character class range: ")
        return f"the character range {low_high} runs backwards (write the lower character first, e.g. a-z)"
    if "pattern too large" in text:
        return "the pattern is too large to compile (too many alternatives or repetitions)"
    return text


class GlobMatcher:
    """Full-path matching against one or more brace-free glob patterns."""

    def __init__(self, patterns: Sequence[str], shown: str | None = None) -> None:
        import re2

        options = re2.Options()
        options.log_errors = False
        options.max_mem = 64 << 20
        body = "|".join(f"(?:{glob_regex(pattern)})" for pattern in patterns)
        described = _shown(shown if shown is not None else ", ".join(patterns))
        try:
            self._regex: Any = re2.compile(f"^(?:{body})$", options)
        except UnicodeEncodeError:
            raise ToolError(
                f"invalid glob pattern {described}: it holds an unpaired surrogate (\\ud800-\\udfff)"
            ) from None
        except re2.error as exc:
            raise ToolError(f"invalid glob pattern {described}: {re2_reason(exc)}") from None

    def matches(self, path: str) -> bool:
        """True when relative ``path`` (``/``-separated) matches, as :func:`printable` shows it."""
        return self._regex.search(printable(path)) is not None
