"""The Read tool: a page of a text file, an image, or a one-line note for a binary file.

Contract
--------
* Text comes back as stored (decoded as UTF-8, undecodable bytes replaced),
  starting at 0-based line ``offset``: Grep's line N is ``offset=N-1``. A page holds
  at most ``limit`` lines (default :data:`READ_DEFAULT_LINES`) and at most the call's
  output budget (:mod:`awf_mcp.budget`), in whole lines. ``line_numbers`` prefixes
  each line with its 1-based number and a tab (``N<TAB>text``), as Grep numbers it.
* A line over :data:`LINE_SHOW_CHARS` characters is cut there, with a marker naming
  the ``column`` to continue from. With ``column`` set, Read returns just that line
  from that 0-based character on, as much as the budget holds, and a note names the
  next ``column``: a file of one huge line (minified code, one-line JSON) is read
  whole, page by page.
* When more of the file remains, one note after a blank line says which lines were
  shown and the ``offset`` to continue from.
* PNG, JPEG, GIF and WebP files (recognised by their magic bytes) come back as
  one image content item, up to :data:`MAX_IMAGE_BYTES`.
* Any other file with a NUL byte in its first :data:`BINARY_SNIFF_BYTES` is
  reported as ``binary file, N bytes`` rather than dumped.
* At most :data:`MAX_FILE_BYTES` are held at once, and a cancelled call stops
  skipping or reading within a megabyte.
"""

from __future__ import annotations

import codecs
import io
from collections.abc import Mapping
from typing import Any

from awf_mcp import budget
from awf_mcp.builtins.args import bool_argument, int_argument, optional_int, required_string
from awf_mcp.builtins.fileio import check_cancelled, open_regular, skip_line
from awf_mcp.builtins.limits import (
    BINARY_SNIFF_BYTES,
    LINE_SHOW_CHARS,
    MAX_FILE_BYTES,
    MAX_IMAGE_BYTES,
    MIB,
    READ_DEFAULT_LINES,
)
from awf_mcp.builtins.sandbox import Sandbox, quote_path
from awf_mcp.ports import ToolContent, ToolError, ToolResult, image_mime_type

NOTE_ROOM = 300
"""Bytes of the budget kept for the final note."""

_READ_CHUNK = MIB


def read_file(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Read tool."""
    shown = required_string(arguments, "path")
    real = sandbox.resolve(shown)
    offset = int_argument(arguments, "offset", 0, minimum=0)
    limit = int_argument(arguments, "limit", READ_DEFAULT_LINES, minimum=1)
    column = optional_int(arguments, "column", minimum=0)
    page = _Page(shown, offset, limit, bool_argument(arguments, "line_numbers"))
    fd, info = open_regular(sandbox, real, shown)
    with open(fd, "rb", closefd=True) as stream:
        head = stream.peek(BINARY_SNIFF_BYTES)[:BINARY_SNIFF_BYTES]
        mime = image_mime_type(head)
        if mime is not None:
            if info.st_size > MAX_IMAGE_BYTES:
                raise ToolError(
                    f"{quote_path(shown)} is a {mime} image of {info.st_size:,} bytes; "
                    f"images over {MAX_IMAGE_BYTES // MIB} MiB are not returned"
                )
            raw = stream.read(MAX_IMAGE_BYTES + 1)
            if len(raw) > MAX_IMAGE_BYTES:
                raise ToolError(
                    f"{quote_path(shown)} grew past {MAX_IMAGE_BYTES // MIB} MiB while being read"
                )
            return ToolResult(content=[ToolContent.of_image(raw, mime)])
        if b"\x00" in head:
            return ToolResult.text(f"{quote_path(shown)}: binary file, {info.st_size:,} bytes (not shown)")
        _skip_lines(stream, shown, offset)
        if column is not None:
            return _read_line_from(stream, page, column)
        return _read_page(stream, page, info.st_size)


class _Page:
    """What one Read call asked for, and the room its result has."""

    def __init__(self, shown: str, offset: int, limit: int, numbered: bool) -> None:
        self.shown = shown
        self.offset = offset
        self.limit = limit
        self.numbered = numbered
        self.room = max(budget.current_budget() - NOTE_ROOM, 0)


def _skip_lines(stream: io.BufferedReader, shown: str, offset: int) -> None:
    for skipped in range(offset):
        check_cancelled()
        if not skip_line(stream):
            raise ToolError(
                f"offset {offset} is past the end of {quote_path(shown)}, which has {skipped} lines"
            )


def _read_page(stream: io.BufferedReader, page: _Page, size: int) -> ToolResult:
    # One read and C-level searches rather than a readline() per line: this is the hot path of
    # the most frequent call. At most MAX_FILE_BYTES + 1 bytes are held.
    data = _read_window(stream, size - stream.tell())
    newlines = data.count(b"\n")  # about 1 ns a byte: counted once
    end = _end_of_line(data, page.limit, newlines)
    held_back = end > MAX_FILE_BYTES
    if held_back:  # never more than MAX_FILE_BYTES: whole lines, or the start of one huge line
        end = data.rfind(b"\n", 0, MAX_FILE_BYTES) + 1 or MAX_FILE_BYTES
    window = data[:end]
    text = None
    if not page.numbered and len(window) <= page.room and not _has_long_line(window):
        text = window.decode("utf-8", "replace")
        if budget.size(text) > page.room:
            text = None
    if text is not None:
        if held_back:
            newlines = window.count(b"\n")
        elif newlines >= page.limit:  # the window ends with line ``limit``
            newlines = page.limit
        shown_lines = newlines + (0 if window.endswith(b"\n") or not window else 1)
        cut_short = False
    else:
        text, shown_lines, cut_short = _fit_lines(window, page)
        end = _line_starts(window, shown_lines)
    more = cut_short or held_back or end < len(data) or bool(stream.peek(1))
    if not more:
        if not text:
            return ToolResult.text(
                "(empty file)" if page.offset == 0 else f"(no lines after offset {page.offset})"
            )
        return ToolResult.text(text)
    following = page.offset + shown_lines
    why = "this client's output budget" if cut_short or len(window) > page.room else f"limit={page.limit}"
    if held_back and not cut_short:
        why = f"{MAX_FILE_BYTES // MIB} MiB per call"
    note = budget.note(
        f"showing lines {page.offset + 1}-{following} ({why}); more follow: "
        f"call Read with offset={following} to continue"
    )
    separator = "" if text.endswith("\n") or not text else "\n"
    return ToolResult.text(f"{text}{separator}\n{note}")


def _has_long_line(window: bytes) -> bool:
    """Whether a line of ``window`` runs past :data:`LINE_SHOW_CHARS` bytes (its newline not counted).

    Jumps from a line start to just past the last newline within the next
    ``LINE_SHOW_CHARS + 1`` bytes, so it takes about one C-level ``rfind`` per
    ``LINE_SHOW_CHARS`` bytes; a regular expression tried at every byte cost
    several milliseconds on a 150 KB file.
    """
    start, end, reach = 0, len(window), LINE_SHOW_CHARS + 1
    while end - start > LINE_SHOW_CHARS:
        newline = window.rfind(b"\n", start, start + reach)
        if newline < 0:
            return True
        start = newline + 1
    return False


def _line_starts(window: bytes, lines: int) -> int:
    """The offset just past the first ``lines`` lines of ``window``."""
    return _end_of_line(window, lines, window.count(b"\n")) if lines else 0


def _fit_lines(window: bytes, page: _Page) -> tuple[str, int, bool]:
    """Whole lines of ``window`` that fit ``page.room``, long ones cut, numbered if asked.

    Returns the text, the number of lines shown, and whether the room ran out first.
    """
    parts: list[str] = []
    room = page.room
    position = 0
    number = page.offset
    while position < len(window):
        newline = window.find(b"\n", position)
        stop = len(window) if newline < 0 else newline + 1
        number += 1
        line = _show_line(window[position:stop], number)
        prefix = f"{number}\t" if page.numbered else ""
        cost = budget.size(line) + len(prefix)
        if cost > room:
            if not parts:  # not even one line: show what fits of it, the marker names the column
                parts.append(prefix + budget.head(line, max(room - len(prefix), 0)))
                return "".join(parts), 1, True
            return "".join(parts), number - 1 - page.offset, True
        parts.append(prefix + line)
        room -= cost
        position = stop
    return "".join(parts), number - page.offset, False


def _show_line(raw: bytes, number: int) -> str:
    """One line as shown: decoded, cut after :data:`LINE_SHOW_CHARS` characters with a marker."""
    ending = "\n" if raw.endswith(b"\n") else ""
    body = raw[: len(raw) - len(ending)]
    if len(body) <= LINE_SHOW_CHARS:
        return body.decode("utf-8", "replace") + ending
    text = body[: LINE_SHOW_CHARS * 4].decode("utf-8", "replace")
    if len(text) <= LINE_SHOW_CHARS and len(body) <= LINE_SHOW_CHARS * 4:
        return text + ending
    kept = text[:LINE_SHOW_CHARS]
    rest = len(body) - len(kept.encode("utf-8", "replace"))
    marker = budget.note(
        f"line {number} goes on for about {rest:,} more bytes: "
        f"Read with offset={number - 1} column={LINE_SHOW_CHARS} for the rest"
    )
    return f"{kept} {marker}{ending}"


def _read_line_from(stream: io.BufferedReader, page: _Page, column: int) -> ToolResult:
    """Line ``page.offset`` from character ``column`` on, as much as the room holds."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    to_skip = column
    kept: list[str] = []
    room = page.room
    ended = False
    while room > 0:
        check_cancelled()
        chunk = stream.readline(_READ_CHUNK)
        ended = not chunk or chunk.endswith(b"\n")
        text = decoder.decode(chunk.removesuffix(b"\n"), final=ended)
        if to_skip:
            skipped = min(to_skip, len(text))
            text = text[skipped:]
            to_skip -= skipped
        piece = budget.head(text, room)
        kept.append(piece)
        room -= budget.size(piece)
        if len(piece) < len(text):
            ended = False
            break
        if ended:
            break
    shown = "".join(kept)
    line = page.offset + 1
    if to_skip and ended:
        return ToolResult.text(f"(line {line} has fewer than {column:,} characters)")
    next_column = column + len(shown)
    if ended:
        note = f"end of line {line}; the next line is at offset={page.offset + 1}"
    else:
        note = f"line {line} goes on: call Read with offset={page.offset} column={next_column} to continue"
    return ToolResult.text(f"{shown}\n\n{budget.note(note)}")


def _read_window(stream: io.BufferedReader, expected: int) -> bytes:
    """Up to ``MAX_FILE_BYTES + 1`` bytes; ``expected`` (what ``fstat`` said is left) sizes the read.

    Asking for the exact size spares allocating (and faulting in) a 5 MiB buffer per call
    for a small file; a file that grew since ``fstat`` is read on, up to the same bound.
    """
    want = min(max(expected, 0), MAX_FILE_BYTES) + 1
    data = stream.read(want)
    if len(data) == want and want <= MAX_FILE_BYTES:
        data += stream.read(MAX_FILE_BYTES + 1 - want)
    return data


def _end_of_line(data: bytes, count: int, newlines: int) -> int:
    """The offset just past line ``count`` of ``data`` (``len(data)`` when it has fewer lines).

    ``newlines`` is ``data.count(b"\\n")``, which the caller has.
    """
    if newlines < count:
        return len(data)
    if newlines == count:
        return data.rindex(b"\n") + 1
    return len(data) - len(data.split(b"\n", count)[-1])
