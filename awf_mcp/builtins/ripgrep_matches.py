"""``rg``'s Grep output turned into Grep's lines, each path and line checked through the sandbox.

Contract
--------
* :func:`match_items` reads the records of an ``rg --null`` run (a path, a NUL,
  then the rest: ``N:text``/``N-text``, a count, or nothing with
  ``--files-with-matches``) as ``(path, rest, bytes cut off)``; a path holding
  a newline, which ``rg`` prints in pieces, is put back together.
* :func:`in_path_order` puts the items of a parallel run in the order
  ``rg --sort=path`` gives (depth first, names sorted), or gives up once they
  pass a budget of bytes.
* :func:`shown_names` decides, once per file, the name a file is shown under,
  or that it is not shown: its path must lie below the searched directory,
  inside the roots, with no symbolic link among its directories, allowed by
  the call, accepted by the ``glob`` filter, and the file must open again
  through the sandbox (:class:`MatchVerifier`). ``rg`` walks by path, not by
  descriptor; see docs/security.md.
* :func:`add_lines` adds Grep's lines to a
  :class:`~awf_mcp.builtins.listing.BoundedLines`, formatted exactly as the
  pure-Python engine formats them (paths relative to the first root, escaped by
  :func:`~awf_mcp.builtins.listing.printable`; ``--`` only between non-adjacent
  groups of one file; a shown line cut after
  :data:`~awf_mcp.builtins.limits.GREP_SHOWN_LINE_BYTES`), keeping in
  ``content`` mode only the lines the re-opened file holds at that number, and
  counting (not showing) the matching lines over
  :data:`~awf_mcp.builtins.limits.GREP_MAX_LINE_BYTES`, which the pure-Python
  engine does not search. It stops when ``add`` raises ``OutputFull``.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from awf_mcp.builtins.limits import GREP_MAX_LINE_BYTES, GREP_SHOWN_LINE_BYTES
from awf_mcp.builtins.listing import BoundedLines, cut_line, printable
from awf_mcp.builtins.ripgrep import MAX_RECORD_BYTES
from awf_mcp.builtins.ripgrep_scope import listed_path
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.ports import current_call

_LINE_HEAD = re.compile(rb"(\d+)([:-])")

MatchItem = tuple[bytes, bytes, int]
"""One output record of ``rg``: the path, the rest (after the NUL), and the bytes cut off."""


def match_items(records: Iterator[tuple[bytes, int]], mode: str) -> Iterator[MatchItem]:
    """``rg``'s records as items; a path holding a newline, cut in pieces, is put back together."""
    if mode == "files_with_matches":
        for record, dropped in records:
            if not dropped:
                yield record, b"", 0
        return
    carry: bytes | None = None
    for record, dropped in records:
        if b"\0" not in record:
            if record not in (b"--", b""):
                carry = record if carry is None else carry + b"\n" + record
            continue
        if carry is not None:
            record, carry = carry + b"\n" + record, None
        path, _, rest = record.partition(b"\0")
        yield path, rest, dropped


def in_path_order(items: Iterator[MatchItem], budget: int) -> list[MatchItem] | None:
    """All ``items`` in path order (``rg --sort=path``'s), or ``None`` once they pass ``budget`` bytes."""
    by_path: dict[bytes, list[MatchItem]] = {}
    size = 0
    for item in items:
        size += len(item[0]) + len(item[1]) + 64
        if size > budget:
            return None
        by_path.setdefault(item[0], []).append(item)
    return [item for path in sorted(by_path, key=lambda path: path.split(b"/")) for item in by_path[path]]


class _PathCheck:
    """Validates (and renders) the paths ``rg`` prints (``./rel``), caching the verdict per directory."""

    def __init__(self, sandbox: Sandbox, start: str) -> None:
        self._sandbox = sandbox
        self._prefix = start.rstrip("/") + "/"
        self._directories: dict[str, bool] = {}

    def real(self, raw: bytes) -> str | None:
        real = listed_path(self._prefix, raw)
        if real is None:
            return None
        directory = os.path.dirname(real)
        verdict = self._directories.get(directory)
        if verdict is None:
            try:
                verdict = self._sandbox.contains(directory) and os.path.realpath(directory) == directory
            except OSError:  # a component changed while it was being resolved
                verdict = False
            self._directories[directory] = verdict
        if not verdict or current_call().path_denied(real) is not None:
            return None
        return real

    def relative(self, real: str) -> str:
        return real[len(self._prefix) :]


class MatchVerifier:
    """Re-reads through the sandbox the file ``rg`` reported, to confirm what it printed.

    ``rg`` walks by path; a directory swapped for a link to the outside while
    it is inside it could make it print an outside file. Each reported file is
    opened again from its root with ``O_NOFOLLOW`` at every component
    (:meth:`~awf_mcp.builtins.sandbox.Sandbox.open_file`); a file that cannot
    be is dropped, and in ``content`` mode each line is shown only if the file
    opened that way holds it at that number. Lines arrive in increasing order
    per file, so the file is read once, one bounded line at a time.
    """

    def __init__(self, sandbox: Sandbox) -> None:
        self._sandbox = sandbox
        self._stream: Any = None
        self._number = 0
        self._line = b""

    def open(self, real: str) -> bool:
        """Open regular file ``real`` through the sandbox, closing the last one; ``False`` if it cannot."""
        self.close()
        try:
            fd = self._sandbox.open_file(real)
        except OSError:
            return False
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                return False
            os.set_blocking(fd, True)
        except OSError:
            os.close(fd)
            return False
        self._stream = open(fd, "rb", closefd=True)  # noqa: SIM115  (closed in close())
        self._number = 0
        return True

    def holds(self, number: int, text: bytes, *, cut: bool) -> bool:
        """Whether the open file's line ``number`` is ``text`` (starts with it when ``cut``)."""
        if self._stream is None or number < self._number:
            return False
        while self._number < number:
            line = self._stream.readline(MAX_RECORD_BYTES)
            if not line:
                return False
            while not line.endswith(b"\n") and len(line) >= MAX_RECORD_BYTES:
                more = self._stream.readline(MAX_RECORD_BYTES)
                if not more:
                    break
                line = line[:MAX_RECORD_BYTES] + (b"\n" if more.endswith(b"\n") else b"")
            self._line = line.removesuffix(b"\n")
            self._number += 1
        return self._line.startswith(text) if cut else self._line == text

    def close(self) -> None:
        """Close the open file, if any."""
        if self._stream is not None:
            self._stream.close()
            self._stream = None


def shown_names(
    sandbox: Sandbox, target: str, accept: Callable[[str, str], bool], verifier: MatchVerifier
) -> Callable[[bytes], str | None]:
    """The name to show for a path ``rg`` printed below ``target``, or ``None`` (see the contract).

    ``accept`` is the ``glob`` filter, given the path relative to ``target``
    and the base name. Accepting a file opens it in ``verifier``, so the
    verdicts are asked for one file at a time, in output order.
    """
    check = _PathCheck(sandbox, target)
    shown_of: dict[bytes, str | None] = {}

    def shown(raw: bytes) -> str | None:
        if raw not in shown_of:
            real = check.real(raw)
            keep = real is not None and accept(check.relative(real), os.path.basename(real))
            keep = keep and real is not None and verifier.open(real)
            shown_of.clear()  # one file at a time: keep the cache small
            shown_of[raw] = printable(sandbox.display(real)) if keep and real is not None else None
        return shown_of[raw]

    return shown


def add_lines(
    items: Iterable[MatchItem],
    mode: str,
    grouped: int,
    shown: Callable[[bytes], str | None],
    verifier: MatchVerifier,
    output: BoundedLines,
) -> int:
    """Add Grep's lines for ``items`` to ``output``; returns the long lines left out.

    A line is shown only when the file, opened again through the sandbox, holds
    that very line at that number (see :class:`MatchVerifier`).
    """
    long_lines = 0
    current: str | None = None
    last_printed = 0
    for path, rest, dropped in items:
        name = shown(path)
        if name is None:
            continue
        if mode == "files_with_matches":
            output.add(name)
            continue
        if mode == "count":
            output.add(f"{name}:{int(rest)}")
            continue
        head = _LINE_HEAD.match(rest)
        if head is None:
            continue
        number = int(head.group(1))
        if name != current:
            current, last_printed = name, 0
        text = rest[head.end() :]
        if len(text) + dropped > GREP_MAX_LINE_BYTES:
            long_lines += 1
            continue
        if not verifier.holds(number, text, cut=bool(dropped)):
            continue
        if grouped and last_printed and number > last_printed + 1:
            output.add("--")
        if not dropped:
            text = text.removesuffix(b"\r")
        marker = ":" if head.group(2) == b":" else "-"
        output.add(f"{name}{marker}{number}{marker}{cut_line(text, GREP_SHOWN_LINE_BYTES, dropped)}")
        last_printed = number
    return long_lines
