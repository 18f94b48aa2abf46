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
import functools
import io
import os
from collections.abc import Callable, Mapping
from typing import Any

from awf_mcp import budget
from awf_mcp.builtins.args import bool_argument, int_argument, optional_int, required_string
from awf_mcp.builtins.fileio import (
    check_cancelled,
    open_plain_regular,
    open_regular,
    read_at_most,
    skip_line,
)
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

_WHOLE_READ_BYTES = MIB
"""A file up to this size read from its start is read at once with ``os.read``, not through a stream."""

_MASKED_SEARCH_BYTES = 256 * 1024
"""How far :func:`_end_of_line` looks for a line's end with ``memchr`` before counting every newline."""

_BYTES_PER_MASKED_LINE = 32
"""Masking newlines pays while at most one is masked per this many bytes (see :func:`_end_of_line`)."""


def read_file(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Read tool."""
    shown = required_string(arguments, "path")
    plain = open_plain_regular(sandbox, shown)  # usually; else resolved, then opened, as below
    try:
        real = sandbox.resolve(shown) if plain is None else plain[0]
        offset = int_argument(arguments, "offset", 0, minimum=0)
        limit = int_argument(arguments, "limit", READ_DEFAULT_LINES, minimum=1)
        column = optional_int(arguments, "column", minimum=0)
        page = _Page(shown, offset, limit, bool_argument(arguments, "line_numbers"))
    except BaseException:
        if plain is not None:
            os.close(plain[1])
        raise
    fd, info = open_regular(sandbox, real, shown) if plain is None else plain[1:]
    try:
        if offset == 0 and column is None and info.st_size <= _WHOLE_READ_BYTES:
            # The most frequent call: a small file from its start, read with os.read (a buffered
            # stream costs an fstat, an ioctl, two lseeks and a copy more). Images take the
            # stream's way below.
            data, complete = _read_window(functools.partial(read_at_most, fd), info.st_size)
            head = data[:BINARY_SNIFF_BYTES]
            if image_mime_type(head) is None:
                if b"\x00" in head:
                    return _binary(shown, info.st_size)
                return _read_page(data, complete, page)
            os.lseek(fd, 0, os.SEEK_SET)
        # A buffer of at least BINARY_SNIFF_BYTES: peek() returns at most one buffer, which
        # by default is the file system's block size (4 KiB on ext4).
        buffer_size = max(BINARY_SNIFF_BYTES, io.DEFAULT_BUFFER_SIZE)
        with io.BufferedReader(io.FileIO(fd, "r", closefd=False), buffer_size) as stream:
            return _read_stream(stream, page, column, info.st_size)
    finally:
        os.close(fd)


def _read_stream(
    stream: io.BufferedReader[io.FileIO], page: _Page, column: int | None, size: int
) -> ToolResult:
    """Read's answer for the file open as ``stream``, at its start."""
    head = stream.peek(BINARY_SNIFF_BYTES)[:BINARY_SNIFF_BYTES]
    mime = image_mime_type(head)
    if mime is not None:
        if size > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{quote_path(page.shown)} is a {mime} image of {size:,} bytes; "
                f"images over {MAX_IMAGE_BYTES // MIB} MiB are not returned"
            )
        raw = stream.read(MAX_IMAGE_BYTES + 1)
        if len(raw) > MAX_IMAGE_BYTES:
            raise ToolError(
                f"{quote_path(page.shown)} grew past {MAX_IMAGE_BYTES // MIB} MiB while being read"
            )
        return ToolResult(content=[ToolContent.of_image(raw, mime)])
    if b"\x00" in head:
        return _binary(page.shown, size)
    _skip_lines(stream, page.shown, page.offset)
    if column is not None:
        return _read_line_from(stream, page, column)
    data, complete = _read_window(stream.read, size - stream.tell())
    return _read_page(data, complete, page)


def _binary(shown: str, size: int) -> ToolResult:
    return ToolResult.text(f"{quote_path(shown)}: binary file, {size:,} bytes (not shown)")


class _Page:
    """What one Read call asked for, and the room its result has."""

    def __init__(self, shown: str, offset: int, limit: int, numbered: bool) -> None:
        self.shown = shown
        self.offset = offset
        self.limit = limit
        self.numbered = numbered
        self.room = max(budget.current_budget() - NOTE_ROOM, 0)


def _skip_lines(stream: io.BufferedReader[io.FileIO], shown: str, offset: int) -> None:
    for skipped in range(offset):
        check_cancelled()
        if not skip_line(stream):
            raise ToolError(
                f"offset {offset} is past the end of {quote_path(shown)}, which has {skipped} lines"
            )


def _read_page(data: bytes, complete: bool, page: _Page) -> ToolResult:
    """The page of ``data`` (read up to the end of the file when ``complete``) that ``page`` asks for.

    C-level searches rather than a step per line: this is the hot path of the most frequent
    call. The newlines are counted only when a note must say how many lines were shown.
    """
    end = _end_of_line(data, page.limit)
    held_back = end > MAX_FILE_BYTES
    if held_back:  # never more than MAX_FILE_BYTES: whole lines, or the start of one huge line
        end = data.rfind(b"\n", 0, MAX_FILE_BYTES) + 1 or MAX_FILE_BYTES
    window = data[:end]
    text = None
    if not page.numbered and len(window) <= page.room and not _has_long_line(window):
        text = window.decode("utf-8", "replace")
        if budget.size(text) > page.room:
            text = None
    shown_lines: int | None = None
    if text is not None:
        cut_short = False
        if not held_back and end < len(data):  # the window ends with line ``limit``
            shown_lines = page.limit
    else:
        text, shown_lines, cut_short = _fit_lines(window, page)
        end = _line_starts(window, shown_lines)
    more = cut_short or held_back or end < len(data) or not complete
    if not more:
        if not text:
            return ToolResult.text(
                "(empty file)" if page.offset == 0 else f"(no lines after offset {page.offset})"
            )
        return ToolResult.text(text)
    if shown_lines is None:
        shown_lines = window.count(b"\n") + (0 if window.endswith(b"\n") or not window else 1)
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
    rfind = window.rfind
    while end - start > LINE_SHOW_CHARS:
        newline = rfind(b"\n", start, start + reach)
        if newline < 0:
            return True
        start = newline + 1
    return False


def _line_starts(window: bytes, lines: int) -> int:
    """The offset just past the first ``lines`` lines of ``window``."""
    return _end_of_line(window, lines) if lines else 0


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


def _read_line_from(stream: io.BufferedReader[io.FileIO], page: _Page, column: int) -> ToolResult:
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


def _read_window(read: Callable[[int], bytes], expected: int) -> tuple[bytes, bool]:
    """Up to ``MAX_FILE_BYTES + 1`` bytes through ``read``, and whether they reach the end of the file.

    ``read(n)`` returns ``n`` bytes, fewer only at the end of the file. ``expected`` (what
    ``fstat`` said is left) sizes the read: asking for the exact size spares allocating (and
    faulting in) a 5 MiB buffer per call for a small file; a file that grew since ``fstat`` is
    read on, up to the same bound.
    """
    want = min(max(expected, 0), MAX_FILE_BYTES) + 1
    data = read(want)
    if len(data) < want:
        return data, True
    if want > MAX_FILE_BYTES:
        return data, False
    more = read(MAX_FILE_BYTES + 1 - want)
    return data + more, len(more) < MAX_FILE_BYTES + 1 - want


def _end_of_line(data: bytes, count: int) -> int:
    """The offset just past line ``count`` (at least 1) of ``data``; ``len(data)`` when it has fewer.

    ``bytes.count`` and ``split`` look at one byte at a time (about 0.5 ns a byte here: 70 µs
    for a 150 KB page), while ``find`` uses ``memchr``. So within the first
    :data:`_MASKED_SEARCH_BYTES`, the first ``count - 1`` newlines are masked in a copy by
    ``replace`` (one ``memchr`` per newline, in C) and the next one is found: 15 µs for that
    page. Only when line ``count`` ends further on are all the newlines counted.
    """
    if count <= _MASKED_SEARCH_BYTES // _BYTES_PER_MASKED_LINE:
        head = data[:_MASKED_SEARCH_BYTES]
        newline = head.replace(b"\n", b"\r", count - 1).find(b"\n")
        if newline >= 0:
            return newline + 1
        if len(head) == len(data):
            return len(data)
    newlines = data.count(b"\n")
    if newlines < count:
        return len(data)
    if newlines == count:
        return data.rindex(b"\n") + 1
    return len(data) - len(data.split(b"\n", count)[-1])
