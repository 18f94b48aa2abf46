"""What Glob and Grep return: file names rendered safely, output bounded while it is built.

Contract
--------
* :func:`printable` renders a path or a name taken from the file system as
  valid, single-line text. A byte that is not valid UTF-8 (Python hands it over
  as a ``surrogateescape`` surrogate) becomes ``\\xNN``, as Python's
  ``backslashreplace`` writes it; a control character, a line or paragraph
  separator and a bidirectional mark or override become ``\\xNN``/``\\uNNNN`` too
  (:func:`~awf_mcp.ports.inert_text`), so
  a name can neither break the JSON-RPC stream nor forge an output line. Every
  other character, backslashes included, is kept as it is. A valid UTF-8 name
  without such characters is returned unchanged.
* :class:`BoundedLines` collects output lines under a line cap and a byte
  budget (UTF-8 bytes, newlines counted). The line that would exceed either
  raises :class:`OutputFull` and is not kept, so memory never holds more than
  the budget, whatever a tool is asked for.
* :func:`cut_line` shortens one long line of file content to a byte cap with a
  visible marker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from awf_mcp.ports import inert_text

printable = inert_text
"""``name`` with undecodable bytes and control characters escaped (see the module contract): the same
escapes as everything else awf-mcp shows of text from elsewhere."""


def utf8_size(text: str) -> int:
    """The length of ``text`` in UTF-8 bytes (lone surrogates counted as three)."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-8", "surrogatepass"))


class OutputFull(Exception):
    """Raised by :meth:`BoundedLines.add` once the line cap or the byte budget is reached."""


@dataclass(slots=True)
class BoundedLines:
    """Output lines under ``max_lines`` (``None``: no line cap) and ``max_bytes``, after ``skip``.

    The first ``skip`` lines are counted and dropped: that is how a page at ``offset`` starts.
    """

    max_lines: int | None
    max_bytes: int
    skip: int = 0
    skipped: int = 0
    lines: list[str] = field(default_factory=list)
    size: int = 0
    stopped_by: Literal["lines", "bytes"] | None = None

    @property
    def next_offset(self) -> int:
        """The ``offset`` that starts the page after this one."""
        return self.skip + len(self.lines)

    def add(self, line: str) -> None:
        """Keep ``line``, or raise :class:`OutputFull` when it would break a limit."""
        if self.skipped < self.skip:
            self.skipped += 1
            return
        if self.max_lines is not None and len(self.lines) >= self.max_lines:
            self.stopped_by = "lines"
            raise OutputFull
        grown = self.size + utf8_size(line) + 1
        if grown > self.max_bytes:
            self.stopped_by = "bytes"
            raise OutputFull
        self.size = grown
        self.lines.append(line)


def cut_line(raw: bytes, max_bytes: int, dropped: int = 0) -> str:
    """``raw`` decoded (invalid UTF-8 replaced), cut to about ``max_bytes`` with a marker saying so.

    ``dropped`` counts bytes of the line already cut off before ``raw`` got here.
    """
    if len(raw) <= max_bytes and not dropped:
        return raw.decode("utf-8", "replace")
    text = raw[:max_bytes].decode("utf-8", "replace")
    if text.endswith("\ufffd"):  # most likely a character the cut split in two
        text = text[:-1]
    return f"{text} [... line cut: {len(raw) + dropped - max_bytes:,} more bytes]"
