"""The Read tool: a page of a text file, an image, or a one-line note for a binary file.

Contract
--------
* Text comes back exactly as stored (decoded as UTF-8, undecodable bytes
  replaced), without line numbers, starting at 0-based line ``offset`` and
  holding at most ``limit`` lines (default :data:`READ_DEFAULT_LINES`), at
  most :data:`MAX_FILE_BYTES` of the file, and text of at most
  :data:`READ_RESULT_BYTES` once encoded for the wire (UTF-8 and JSON escapes
  counted, measured while the page is built; the note adds under 200 bytes).
  When more of the file remains, a note after a blank line says which lines
  were shown and the ``offset`` to continue from.
* Skipping to ``offset`` stops as soon as the call is cancelled or times out.
* PNG, JPEG, GIF and WebP files (recognised by their magic bytes) come back as
  one image content item, up to :data:`MAX_IMAGE_BYTES`.
* Any other file with a NUL byte in its first :data:`BINARY_SNIFF_BYTES` is
  reported as ``binary file, N bytes`` rather than dumped.
"""

from __future__ import annotations

import codecs
import io
import json
from collections.abc import Mapping
from typing import Any

from awf_mcp.builtins.args import int_argument, required_string
from awf_mcp.builtins.fileio import check_cancelled, open_regular, skip_line
from awf_mcp.builtins.limits import (
    BINARY_SNIFF_BYTES,
    MAX_FILE_BYTES,
    MAX_IMAGE_BYTES,
    MIB,
    READ_DEFAULT_LINES,
    READ_RESULT_BYTES,
)
from awf_mcp.builtins.sandbox import Sandbox, quote_path
from awf_mcp.ports import ToolContent, ToolError, ToolResult, image_mime_type


def read_file(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Read tool."""
    shown = required_string(arguments, "path")
    real = sandbox.resolve(shown)
    offset = int_argument(arguments, "offset", 0, minimum=0)
    limit = int_argument(arguments, "limit", READ_DEFAULT_LINES, minimum=1)
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
        return _read_page(stream, shown, offset, limit, info.st_size)


def _read_page(stream: io.BufferedReader, shown: str, offset: int, limit: int, size: int) -> ToolResult:
    for skipped in range(offset):
        if not skip_line(stream):
            raise ToolError(
                f"offset {offset} is past the end of {quote_path(shown)}, which has {skipped} lines"
            )
    # One read and C-level searches rather than a readline() per line: this is the hot path of
    # the most frequent call. At most MAX_FILE_BYTES + 1 bytes are held.
    data = _read_window(stream, size - stream.tell())
    end = _end_of_line(data, limit)
    oversized_line = False
    left_over = False
    if end > MAX_FILE_BYTES:
        left_over = True
        end = data.rfind(b"\n", 0, MAX_FILE_BYTES) + 1
        if end == 0:  # the first line alone is longer than the limit: show its start
            end = MAX_FILE_BYTES
            oversized_line = True
    fitted = _fit_to_wire(data, end, READ_RESULT_BYTES)
    if fitted < end:
        left_over = True
        end = data.rfind(b"\n", 0, fitted) + 1
        oversized_line = end == 0
        if oversized_line:  # the first line alone does not fit: show its start
            end = fitted
    more = left_over or end < len(data) or bool(stream.peek(1))
    text = data[:end].decode("utf-8", "replace")
    if not more:
        if not end:
            return ToolResult.text("(empty file)" if offset == 0 else f"(no lines after offset {offset})")
        return ToolResult.text(text)
    shown_lines = (
        1 if oversized_line else data.count(b"\n", 0, end) + (0 if data[end - 1 : end] == b"\n" else 1)
    )
    following = offset + shown_lines
    if oversized_line:
        note = (
            f"[line {following} is longer than {MAX_FILE_BYTES // MIB} MiB on the wire: only its start is "
            f"shown; call Read with offset={following} to continue after it]"
        )
    else:
        note = (
            f"[showing lines {offset + 1}-{following} (at most {MAX_FILE_BYTES // MIB} MiB per call); "
            f"more follow: call Read with offset={following} to continue]"
        )
    separator = "" if text.endswith("\n") else "\n"
    return ToolResult.text(f"{text}{separator}\n{note}")


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


def _end_of_line(data: bytes, count: int) -> int:
    """The offset just past line ``count`` of ``data`` (``len(data)`` when it has fewer lines)."""
    newlines = data.count(b"\n")
    if newlines < count:
        return len(data)
    if newlines == count:
        return data.rindex(b"\n") + 1
    return len(data) - len(data.split(b"\n", count)[-1])


_FIT_CHUNK = 64 * 1024


def _wire_size(text: str) -> int:
    """Bytes ``text`` takes as a JSON string on the wire (without its quotes)."""
    return len(json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")) - 2


def _fit_to_wire(data: bytes, end: int, budget: int) -> int:
    """The largest ``cut <= end`` whose decoded ``data[:cut]`` takes at most ``budget`` wire bytes.

    One pass in chunks, then a search inside the chunk that crosses the budget:
    never more than a chunk of decoded text is held at a time.
    """
    if end <= budget // 6:  # no byte can cost more than 6 on the wire
        return end
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    used = 0
    for start in range(0, end, _FIT_CHUNK):
        check_cancelled()
        stop = min(start + _FIT_CHUNK, end)
        state = decoder.getstate()
        cost = _wire_size(decoder.decode(data[start:stop], final=stop == end))
        if used + cost <= budget:
            used += cost
            continue
        low, high = start, stop  # data[:low] fits, data[:high] does not
        while high - low > 1:
            middle = (low + high) // 2
            decoder.setstate(state)
            if used + _wire_size(decoder.decode(data[start:middle], final=True)) <= budget:
                low = middle
            else:
                high = middle
        return low
    return end
