"""What Edit says: where a missed ``old`` nearly matched and why, and what a successful edit changed.

Contract
--------
* :func:`explain_miss` is called only when ``old`` does not occur in the file. It finds
  the closest place and names the one difference that explains it, so that the next
  try succeeds: CRLF line endings, tabs against spaces, indentation, trailing
  whitespace, or one line that differs (both versions shown). It always gives the
  1-based line number and the file's text there, numbered as Read and Grep number
  lines. Its cost is linear in the file: candidate places come from exact matches of
  a stripped line of ``old``, else from the most similar line.
* :func:`describe_change` shows each replaced place (up to :data:`MAX_SHOWN`) as a small
  diff with its line number and a line of context, within :data:`MAX_SNIPPET_BYTES`.
"""

from __future__ import annotations

import difflib

from awf_mcp import budget

MAX_SHOWN = 3
"""Replaced places a success message shows."""

MAX_SNIPPET_BYTES = 2_000
"""The most a success message's diff takes."""

_SHOW_LINES = 8


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{first + index}\t{line}" for index, line in enumerate(lines))


def _quote(line: str) -> str:
    return repr(line if len(line) <= 120 else line[:117] + "...")


def _difference(found: list[str], wanted: list[str]) -> str | None:
    """The one kind of difference between ``found`` (the file) and ``wanted`` (old), if one explains it."""
    if found == wanted:
        return None
    if [line.rstrip() for line in found] == [line.rstrip() for line in wanted]:
        return "trailing whitespace differs"
    if [line.expandtabs(4) for line in found] == [line.expandtabs(4) for line in wanted] or [
        line.replace("\t", " " * 8) for line in found
    ] == [line.replace("\t", " " * 8) for line in wanted]:
        uses = "tabs" if any("\t" in line for line in found) else "spaces"
        return f"tabs against spaces: the file indents with {uses} here"
    if [line.strip() for line in found] == [line.strip() for line in wanted]:
        pairs = [(f, w) for f, w in zip(found, wanted, strict=True) if f.strip()]
        f, w = pairs[0] if pairs else (found[0], wanted[0])
        have = len(f) - len(f.lstrip())
        give = len(w) - len(w.lstrip())
        return (
            f"indentation differs: the file's line starts with {have} whitespace characters, "
            f"old's with {give}"
        )
    differing = [index for index, (f, w) in enumerate(zip(found, wanted, strict=True)) if f != w]
    if len(differing) == 1:
        index = differing[0]
        return (
            f"one line differs (line {index + 1} of old): the file has {_quote(found[index])}, "
            f"old has {_quote(wanted[index])}"
        )
    return None


def explain_miss(text: str, old: str) -> str:
    """Why ``old`` is not in ``text``: the closest place, its line, and what differs."""
    if "\r\n" in text and "\n" in old and "\r\n" not in old and old.replace("\n", "\r\n") in text:
        line = text[: text.index(old.replace("\n", "\r\n"))].count("\n") + 1
        return (
            f"the file uses CRLF line endings: old matches at line {line} once its line ends are \\r\\n; "
            "include the \\r in old"
        )
    lines = text.split("\n")
    wanted = old.split("\n")
    anchor_index = next((i for i, line in enumerate(wanted) if line.strip()), 0)
    anchor = wanted[anchor_index].strip()
    starts = [i - anchor_index for i, line in enumerate(lines) if anchor and line.strip() == anchor]
    if not starts and anchor:
        close = difflib.get_close_matches(anchor, [line.strip() for line in lines], n=1, cutoff=0.6)
        if close:
            starts = [i - anchor_index for i, line in enumerate(lines) if line.strip() == close[0]][:5]
    best: tuple[int, str | None] | None = None
    for start in starts[:50]:
        if start < 0 or start + len(wanted) > len(lines):
            continue
        window = lines[start : start + len(wanted)]
        reason = _difference([line.removesuffix("\r") for line in window], wanted)
        if reason is not None:
            best = (start, reason)
            break
        if best is None:
            best = (start, None)
    if best is None:
        return "nothing in the file resembles it; Read the file and copy the text exactly"
    start, reason = best
    shown = lines[start : start + min(len(wanted), _SHOW_LINES)]
    where = f"the closest match starts at line {start + 1}"
    why = f": {reason}" if reason else " but differs in more than one line"
    return f"{where}{why}. The file there reads:\n{_numbered(shown, start + 1)}"


def describe_change(text: str, old: str, new: str, limit: int = MAX_SHOWN) -> str:
    """A small diff of the first ``limit`` places where every ``old`` is replaced by ``new`` in ``text``.

    Each place shows the whole lines it touches, before (``-``) and after (``+``) the edit,
    under ``@@ line N @@`` with the line above it as context; occurrences sharing a line
    are one place.
    """
    pieces: list[str] = []
    position = text.find(old)
    while position >= 0 and len(pieces) < limit:
        line_start = text.rfind("\n", 0, position) + 1
        line_end = _line_end(text, position + len(old))
        count = 1
        following = text.find(old, position + len(old))
        while 0 <= following < line_end:  # more occurrences on the lines already taken
            line_end = _line_end(text, following + len(old))
            count += 1
            following = text.find(old, following + len(old))
        before = text[line_start:line_end]
        after = before.replace(old, new)
        number = text.count("\n", 0, line_start) + 1
        context = []
        if line_start:
            context = [" " + text[text.rfind("\n", 0, line_start - 1) + 1 : line_start - 1]]
        removed = [f"-{item}" for item in before.split("\n")]
        added = [f"+{item}" for item in after.split("\n")]
        pieces.append("\n".join([f"@@ line {number} @@", *context, *removed, *added]))
        position = following
    return budget.head_lines("\n".join(pieces), MAX_SNIPPET_BYTES)


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end
