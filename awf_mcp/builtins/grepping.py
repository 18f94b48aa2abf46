"""The Grep tool: RE2 search over a file or a directory tree.

Contract
--------
* ``pattern`` is RE2 syntax (no lookaround, no backreferences), matched line by
  line in linear time, so no pattern can make a search hang.
* ``path`` is a file or a directory (default: the first root). In a directory,
  ``.git`` and binary files (a NUL byte in the first 8 KiB) are skipped,
  symbolic links are not followed, and ``.gitignore`` files apply unless
  ``include_ignored`` is set. ``glob`` filters file names (a pattern without
  ``/`` matches the base name, one with ``/`` the path below ``path``; a leading
  ``!`` excludes instead).
* ``output_mode``: ``content`` (default) prints ``path:line:text`` for matches
  and, with context, ``path-line-text`` for context lines and ``--`` between
  groups; ``files_with_matches`` prints one path a line; ``count`` prints
  ``path:N``. Paths are relative to the first root. Files come in walk order
  (depth first, names sorted).
* Lines over :data:`GREP_MAX_LINE_BYTES` are not searched (a note counts them); a
  matching line is shown up to :data:`LINE_SHOW_CHARS` characters, the rest cut with a
  marker.
* Output pages: ``offset`` skips that many output lines/entries, ``head_limit`` stops
  after that many, and the call's output budget (:mod:`awf_mcp.budget`) bounds the bytes,
  so memory stays bounded whatever the files hold. When the budget cuts the output, the
  search goes on counting (up to :data:`COUNT_BEYOND` more) and one final note says how
  many were left out and the ``offset`` that shows them; ``head_limit`` stops at once.
* A file is read at most :data:`_WHOLE_FILE_BYTES` at a time, even one growing while
  read, and a cancelled or timed-out call stops within a few thousand lines.
"""

from __future__ import annotations

import io
import os
import stat
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from awf_mcp import budget
from awf_mcp.builtins.args import bool_argument, optional_int, required_string, string_argument
from awf_mcp.builtins.fileio import open_regular, skip_line
from awf_mcp.builtins.limits import (
    BINARY_SNIFF_BYTES,
    GREP_MAX_CONTEXT,
    GREP_MAX_LINE_BYTES,
    LINE_SHOW_CHARS,
    MIB,
)
from awf_mcp.builtins.patterns import GlobMatcher, expand_braces
from awf_mcp.builtins.sandbox import Sandbox, quote_path
from awf_mcp.builtins.walk import walk
from awf_mcp.ports import ToolError, ToolResult, current_call

OUTPUT_MODES = ("content", "files_with_matches", "count")
"""The values ``output_mode`` accepts."""

_WHOLE_FILE_BYTES = 8 * MIB
_PROGRESS_EVERY = 100
_CANCEL_CHECK_EVERY = 4096
COUNT_BEYOND = 100_000
"""Output lines counted (not kept) after the budget is spent, for the note's count."""
NOTE_ROOM = 300
"""Bytes of the budget kept for the final note."""
_UNSAFE_FOR_PREFILTER = ("\\A", "\\z", "(?")


class _Full(Exception):
    """Raised inside the search when the output limit is reached."""


@dataclass(slots=True)
class _Output:
    """One page of output: lines after ``offset``, at most ``limit`` of them and ``room`` bytes."""

    offset: int
    limit: int | None
    room: int
    lines: list[str] = field(default_factory=list)
    produced: int = 0
    omitted: int = 0
    cut_by: str | None = None  # "head_limit" or "budget" once the page is full

    def add(self, line: str) -> None:
        self.produced += 1
        if self.produced <= self.offset:
            return
        if self.cut_by is None and self.limit is not None and len(self.lines) >= self.limit:
            self.cut_by = "head_limit"
        if self.cut_by is None:
            cost = budget.size(line) + 1
            if cost <= self.room:
                self.room -= cost
                self.lines.append(line)
                return
            self.cut_by = "budget"
        self.omitted += 1
        if self.cut_by == "head_limit" or self.omitted > COUNT_BEYOND:
            raise _Full


@dataclass(slots=True)
class _Search:
    regex: Any
    prefilter: Any
    mode: str
    before: int
    after: int
    output: _Output
    long_lines: int = 0
    files: int = 0
    matched_files: int = 0


def compile_pattern(pattern: str, case_insensitive: bool) -> tuple[Any, Any]:
    """The RE2 regex for ``pattern`` and a whole-buffer prefilter (``None`` when unsafe)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not case_insensitive
    encoded = pattern.encode("utf-8", "surrogateescape")
    try:
        regex = re2.compile(encoded, options)
    except re2.error as exc:
        reason = (
            exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        )
        raise ToolError(
            f"invalid regular expression {pattern!r}: {reason} (RE2 syntax: no lookaround, no backreferences)"
        ) from None
    prefilter = None
    if not any(token in pattern for token in _UNSAFE_FOR_PREFILTER):
        try:
            prefilter = re2.compile(b"(?m)" + encoded, options)
        except re2.error:
            prefilter = None
    return regex, prefilter


def _lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """The lines of ``stream`` without terminators; ``None`` for a line too long to search.

    Stops (raising :class:`_Full`) once the call is cancelled: a huge or endless file
    cannot keep an abandoned call reading.
    """
    cancelled = current_call().cancelled
    count = 0
    while True:
        count += 1
        if count % _CANCEL_CHECK_EVERY == 0 and cancelled.is_set():
            raise _Full
        line = stream.readline(GREP_MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > GREP_MAX_LINE_BYTES and not line.endswith(b"\n"):
            skip_line(stream)
            yield None
            continue
        yield line[:-1] if line.endswith(b"\n") else line


def _text(line: bytes | None) -> str:
    if line is None:
        return f"[line longer than {GREP_MAX_LINE_BYTES // MIB} MiB, not searched]"
    text = line.decode("utf-8", "replace").removesuffix("\r")
    if len(text) > LINE_SHOW_CHARS:
        return f"{text[:LINE_SHOW_CHARS]} [... {len(text) - LINE_SHOW_CHARS:,} more characters]"
    return text


def _search_stream(stream: BinaryIO, shown: str, search: _Search) -> None:
    """Search one open file, adding its output to ``search.output``."""
    output = search.output
    window: deque[tuple[int, bytes | None]] = deque(maxlen=search.before or None)
    after_left = 0
    last_printed = 0
    count = 0
    for number, line in enumerate(_lines(stream), start=1):
        if line is None:
            search.long_lines += 1
            matched = False
        else:
            matched = search.regex.search(line) is not None
        if not matched:
            if search.mode != "content":
                continue
            if after_left > 0:
                output.add(f"{shown}-{number}-{_text(line)}")
                last_printed = number
                after_left -= 1
            elif search.before:
                window.append((number, line))
            continue
        count += 1
        if search.mode == "files_with_matches":
            output.add(shown)
            break
        if search.mode == "count":
            continue
        first = window[0][0] if window else number
        if (search.before or search.after) and last_printed and first > last_printed + 1:
            output.add("--")
        while window:
            context_number, context_line = window.popleft()
            output.add(f"{shown}-{context_number}-{_text(context_line)}")
        output.add(f"{shown}:{number}:{_text(line)}")
        last_printed = number
        after_left = search.after
    if count:
        search.matched_files += 1
        if search.mode == "count":
            output.add(f"{shown}:{count}")


def _search_fd(fd: int, shown: str, search: _Search, *, explicit: bool) -> str | None:
    """Search open descriptor ``fd`` (closed here); returns a note for an explicit binary file."""
    with open(fd, "rb", closefd=True) as stream:
        info = os.fstat(stream.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        os.set_blocking(stream.fileno(), True)
        head = stream.peek(BINARY_SNIFF_BYTES)[:BINARY_SNIFF_BYTES]
        if b"\x00" in head:
            return (
                f"{quote_path(shown)} is a binary file; Grep does not search binary files"
                if explicit
                else None
            )
        search.files += 1
        if info.st_size <= _WHOLE_FILE_BYTES:
            data = stream.read(_WHOLE_FILE_BYTES + 1)
            if len(data) <= _WHOLE_FILE_BYTES:
                if search.prefilter is not None and search.prefilter.search(data) is None:
                    return None
                _search_stream(io.BytesIO(data), shown, search)
                return None
            del data  # it grew while being read: search it line by line instead
            stream.seek(0)
        _search_stream(stream, shown, search)
    return None


def _glob_filter(glob: str | None) -> Callable[[str, str], bool]:
    """A predicate on (relative path, name) for Grep's ``glob`` argument."""
    if not glob:
        return lambda rel, name: True
    exclude = glob.startswith("!")
    body = glob[1:] if exclude else glob
    alternatives = expand_braces(body)
    matcher = GlobMatcher(alternatives)
    on_path = any("/" in alternative for alternative in alternatives)

    def accept(rel: str, name: str) -> bool:
        return matcher.matches(rel if on_path else name) != exclude

    return accept


def _int_or(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def grep(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Grep tool."""
    pattern = required_string(arguments, "pattern")
    regex, prefilter = compile_pattern(pattern, bool_argument(arguments, "case_insensitive"))
    path_arg = string_argument(arguments, "path", required=False)
    target = sandbox.base if path_arg is None else sandbox.resolve(path_arg)
    mode = string_argument(arguments, "output_mode", required=False) or "content"
    if mode not in OUTPUT_MODES:
        raise ToolError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}; got {mode!r}")
    context = _int_or(optional_int(arguments, "context", minimum=0, maximum=GREP_MAX_CONTEXT), 0)
    before = _int_or(optional_int(arguments, "before_context", minimum=0, maximum=GREP_MAX_CONTEXT), context)
    after = _int_or(optional_int(arguments, "after_context", minimum=0, maximum=GREP_MAX_CONTEXT), context)
    head_limit = optional_int(arguments, "head_limit", minimum=1)
    offset = _int_or(optional_int(arguments, "offset", minimum=0), 0)
    accept = _glob_filter(string_argument(arguments, "glob", required=False))
    gitignore = not bool_argument(arguments, "include_ignored")

    output = _Output(offset=offset, limit=head_limit, room=max(budget.current_budget() - NOTE_ROOM, 0))
    if mode != "content":
        before = after = 0
    search = _Search(regex, prefilter, mode, before, after, output)
    call = current_call()
    note: str | None = None
    try:
        if os.path.isdir(target):
            for entry in walk(sandbox, target, gitignore=gitignore, cancelled=call.cancelled):
                if entry.kind != "file" or not accept(entry.rel, entry.name):
                    continue
                try:
                    fd = entry.open()
                except OSError:
                    continue
                _search_fd(fd, sandbox.display(entry.real), search, explicit=False)
                if search.files % _PROGRESS_EVERY == 0:
                    call.report_progress(search.files, None, f"searched {search.files} files")
        else:
            shown = path_arg or sandbox.display(target)
            fd, _info = open_regular(sandbox, target, shown)
            note = _search_fd(fd, sandbox.display(target), search, explicit=True)
    except _Full:
        pass
    return _result(search, note)


def _result(search: _Search, note: str | None) -> ToolResult:
    if note is not None:
        return ToolResult.text(note)
    output = search.output
    lines = list(output.lines)
    if not lines:
        past = f" past offset {output.offset:,}" if output.offset and output.produced else ""
        lines.append(f"No matches found{past} (searched {search.files:,} files).")
    shown_to = output.offset + len(output.lines)
    if output.cut_by == "head_limit":
        lines.append(
            f"[head_limit={output.limit} reached; more results exist: "
            f"pass offset={shown_to} for the next page]"
        )
    elif output.cut_by == "budget":
        more = f"more than {COUNT_BEYOND:,}" if output.omitted > COUNT_BEYOND else f"{output.omitted:,}"
        lines.append(
            budget.note(
                f"{more} more output lines not shown (this client's output budget); "
                f"pass offset={shown_to} for the next page, or narrow the pattern, path or glob"
            )
        )
    if search.long_lines:
        lines.append(
            f"[{search.long_lines} line(s) longer than {GREP_MAX_LINE_BYTES // MIB} MiB were not searched]"
        )
    return ToolResult.text("\n".join(lines))
