"""The Grep tool: RE2 search over a file or a directory tree.

Contract
--------
* ``pattern`` is RE2 syntax (no lookaround, no backreferences), matched line by
  line in linear time, so no pattern can make a search hang.
* ``path`` is a file or a directory (default: the first root). In a directory,
  hidden files are searched, ``.git`` and binary files (a NUL byte in the first
  8 KiB) are skipped, symbolic links are not followed, and ``.gitignore`` files
  (of the directory, of the ones below it, and of its parents up to its root)
  apply unless ``include_ignored`` is set; ``.ignore``, ``.rgignore``,
  ``.git/info/exclude`` and global excludes never do.
* A directory is searched by ``rg`` when ripgrep is found (see
  :mod:`awf_mcp.builtins.ripgrep_search`), else by the pure-Python engine
  below; a single file always by the latter. The results are the same, with
  two deliberate differences: ``rg`` also treats a file as binary when a NUL
  byte appears later (it stops there), and the note about lines over
  :data:`GREP_MAX_LINE_BYTES` counts only the matching ones. ``glob`` filters file names (a pattern without
  ``/`` matches the base name, one with ``/`` the path below ``path``; a leading
  ``!`` excludes instead).
* ``output_mode``: ``content`` (default) prints ``path:line:text`` for matches
  and, with context, ``path-line-text`` for context lines and ``--`` between
  groups; ``files_with_matches`` prints one path a line; ``count`` prints
  ``path:N``. Paths are relative to the first root. Files come in walk order
  (depth first, names sorted).
* Lines over :data:`GREP_MAX_LINE_BYTES` are not searched (a note counts them);
  a shown line is cut after :data:`GREP_SHOWN_LINE_BYTES` bytes with a marker.
  Output stops at ``head_limit`` lines/entries, in ``content`` mode at
  :data:`GREP_MAX_LINES` lines, and in every mode once ``output_bytes``
  (default :data:`SEARCH_OUTPUT_BYTES`) are spent, with a note saying which
  limit was hit. The bounds hold while the output is built, not only at the end.
* A file is read whole only up to 8 MiB and only up to the size ``fstat``
  gave (a file that grows after the check is searched line by line instead),
  never without bound. The search
  checks the call's ``cancelled`` flag between files and while reading a file,
  so a cancelled or timed-out call stops, even on an endless file.
* File names that are not valid UTF-8, or hold control characters, are shown
  escaped (``caf\\xe9.txt``; see :func:`~awf_mcp.builtins.listing.printable`).
"""

from __future__ import annotations

import io
import os
import stat
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

from awf_mcp.budget import current_budget
from awf_mcp.budget import note as note_text
from awf_mcp.builtins.args import bool_argument, optional_int, required_string, string_argument
from awf_mcp.builtins.fileio import open_regular
from awf_mcp.builtins.limits import (
    BINARY_SNIFF_BYTES,
    GREP_MAX_CONTEXT,
    GREP_MAX_LINE_BYTES,
    GREP_MAX_LINES,
    GREP_SHOWN_LINE_BYTES,
    MAX_GLOB_FILTER_CHARS,
    MIB,
    SEARCH_OUTPUT_BYTES,
)
from awf_mcp.builtins.listing import BoundedLines, OutputFull, cut_line, printable
from awf_mcp.builtins.patterns import GlobMatcher, expand_braces, re2_reason
from awf_mcp.builtins.ripgrep import RipgrepFailed
from awf_mcp.builtins.ripgrep_scope import usable_for_tree
from awf_mcp.builtins.ripgrep_search import grep_tree
from awf_mcp.builtins.sandbox import Sandbox, quote_path
from awf_mcp.builtins.walk import Cancelled, walk
from awf_mcp.ports import ToolError, ToolResult, current_call

OUTPUT_MODES = ("content", "files_with_matches", "count")
"""The values ``output_mode`` accepts."""

_WHOLE_FILE_BYTES = 8 * MIB
_PROGRESS_EVERY = 100
_UNSAFE_FOR_PREFILTER = ("\\A", "\\z", "(?")
_CANCEL_CHECK_LINES = 4096
_NOTE_RESERVE = 200
"""Bytes of the output budget kept for the closing notes."""


@dataclass(slots=True)
class _Search:
    regex: Any
    prefilter: Any
    mode: str
    before: int
    after: int
    output: BoundedLines
    by_head_limit: bool
    cancelled: threading.Event
    long_lines: int = 0
    files: int = 0
    matched_files: int = 0


def compile_pattern(pattern: str, case_insensitive: bool) -> tuple[Any, Any]:
    """The RE2 regex for ``pattern`` and a whole-buffer prefilter (``None`` when unsafe)."""
    import re2

    options = re2.Options()
    options.log_errors = False
    options.case_sensitive = not case_insensitive
    try:
        encoded = pattern.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise ToolError(
            f"invalid regular expression {pattern!r}: it holds an unpaired surrogate (\\ud800-\\udfff)"
        ) from None
    try:
        regex = re2.compile(encoded, options)
    except re2.error as exc:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {re2_reason(exc)} "
            "(RE2 syntax: no lookaround, no backreferences)"
        ) from None
    prefilter = None
    if not any(token in pattern for token in _UNSAFE_FOR_PREFILTER):
        try:
            prefilter = re2.compile(b"(?m)" + encoded, options)
        except re2.error:
            prefilter = None
    return regex, prefilter


def _lines(stream: BinaryIO, cancelled: threading.Event) -> Iterator[bytes | None]:
    """The lines of ``stream`` without terminators; ``None`` for a line too long to search.

    Reads at most ``GREP_MAX_LINE_BYTES + 1`` bytes at a time, and checks
    ``cancelled`` every :data:`_CANCEL_CHECK_LINES` lines and on every chunk of
    an over-long line, so an endless file stops when the call is cancelled.
    """
    since_check = 0
    while True:
        since_check += 1
        if since_check >= _CANCEL_CHECK_LINES:
            since_check = 0
            if cancelled.is_set():
                raise Cancelled("the call was cancelled")
        line = stream.readline(GREP_MAX_LINE_BYTES + 1)
        if not line:
            return
        if len(line) > GREP_MAX_LINE_BYTES and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                if cancelled.is_set():
                    raise Cancelled("the call was cancelled")
                line = stream.readline(MIB)
            yield None
            continue
        yield line[:-1] if line.endswith(b"\n") else line


def _text(line: bytes | None) -> str:
    if line is None:
        return f"[line longer than {GREP_MAX_LINE_BYTES // MIB} MiB, not searched]"
    return cut_line(line.removesuffix(b"\r"), GREP_SHOWN_LINE_BYTES)


def _search_stream(stream: BinaryIO, shown: str, search: _Search) -> None:
    """Search one open file, adding its output to ``search.output``."""
    output = search.output
    window: deque[tuple[int, bytes | None]] = deque(maxlen=search.before or None)
    after_left = 0
    last_printed = 0
    count = 0
    for number, line in enumerate(_lines(stream, search.cancelled), start=1):
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
            data = stream.read(info.st_size + 1)  # one byte more than fstat said: did it grow?
            if len(data) <= info.st_size:
                if search.prefilter is not None and search.prefilter.search(data) is None:
                    return None
                _search_stream(io.BytesIO(data), shown, search)
                return None
            del data  # the file grew since fstat: search it line by line instead
            stream.seek(0)
        _search_stream(stream, shown, search)
    return None


def _glob_filter(glob: str | None) -> Callable[[str, str], bool]:
    """A predicate on (relative path, name) for Grep's ``glob`` argument."""
    if not glob:
        return lambda rel, name: True
    if len(glob) > MAX_GLOB_FILTER_CHARS:
        raise ToolError(
            f"glob is too long ({len(glob):,} characters; the limit is {MAX_GLOB_FILTER_CHARS:,}): shorten it"
        )
    exclude = glob.startswith("!")
    body = glob[1:] if exclude else glob
    alternatives = expand_braces(body, current_call().cancelled)
    matcher = GlobMatcher(alternatives, shown=glob)
    on_path = any("/" in alternative for alternative in alternatives)

    def accept(rel: str, name: str) -> bool:
        return matcher.matches(rel if on_path else name) != exclude

    return accept


def _int_or(value: int | None, fallback: int) -> int:
    return fallback if value is None else value


def grep(sandbox: Sandbox, arguments: Mapping[str, Any], *, output_bytes: int | None = None) -> ToolResult:
    """Run the Grep tool; its text stays within ``output_bytes`` (default: the call's output budget)."""
    if output_bytes is None:
        output_bytes = min(current_budget(outside=SEARCH_OUTPUT_BYTES), SEARCH_OUTPUT_BYTES)
    pattern = required_string(arguments, "pattern")
    case_insensitive = bool_argument(arguments, "case_insensitive")
    regex, prefilter = compile_pattern(pattern, case_insensitive)
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

    cap = GREP_MAX_LINES if mode == "content" else None
    limits = [value for value in (head_limit, cap) if value is not None]
    limit = min(limits) if limits else None
    by_head_limit = head_limit is not None and head_limit <= (cap or head_limit)
    output = BoundedLines(max_lines=limit, max_bytes=output_bytes - _NOTE_RESERVE, skip=offset)
    if mode != "content":
        before = after = 0
    call = current_call()
    search = _Search(regex, prefilter, mode, before, after, output, by_head_limit, call.cancelled)
    note: str | None = None
    try:
        engine = usable_for_tree(sandbox, target, gitignore=gitignore) if os.path.isdir(target) else None
        if engine is not None:
            try:
                search.long_lines += _grep_with_ripgrep(
                    engine, sandbox, target, pattern, case_insensitive, search, gitignore, accept
                )
            except RipgrepFailed:  # e.g. a pattern that can match a newline, which rg refuses: no output yet
                engine = None
        if engine is None and os.path.isdir(target):
            for entry in walk(sandbox, target, gitignore=gitignore, cancelled=call.cancelled):
                if entry.kind != "file" or not accept(entry.rel, entry.name):
                    continue
                try:
                    fd = entry.open()
                except OSError:
                    continue
                _search_fd(fd, printable(sandbox.display(entry.real)), search, explicit=False)
                if search.files % _PROGRESS_EVERY == 0:
                    call.report_progress(search.files, None, f"searched {search.files} files")
        elif engine is None:
            shown = path_arg or sandbox.display(target)
            fd, _info = open_regular(sandbox, target, shown)
            note = _search_fd(fd, printable(sandbox.display(target)), search, explicit=True)
    except OutputFull:
        pass
    return _result(search, note, output_bytes)


def _grep_with_ripgrep(
    engine: tuple[str, list[str]],
    sandbox: Sandbox,
    target: str,
    pattern: str,
    case_insensitive: bool,
    search: _Search,
    gitignore: bool,
    accept: Callable[[str, str], bool],
) -> int:
    binary, ancestor_ignores = engine
    return grep_tree(
        binary,
        sandbox,
        target,
        pattern=pattern,
        case_insensitive=case_insensitive,
        mode=search.mode,
        before=search.before,
        after=search.after,
        gitignore=gitignore,
        ancestor_ignores=ancestor_ignores,
        accept=accept,
        output=search.output,
        cancelled=search.cancelled,
    )


def _result(search: _Search, note: str | None, output_bytes: int) -> ToolResult:
    if note is not None:
        return ToolResult.text(note)
    output = search.output
    lines = output.lines
    if not lines:
        past = f" past offset {output.skip:,}" if output.skip and output.skipped else ""
        lines.append(f"No matches found{past}.")
    following = f"pass offset={output.next_offset} for the next page"
    if output.stopped_by == "bytes":
        lines.append(
            note_text(
                f"more output not shown (the output budget, {output_bytes:,} bytes): {following}, "
                "or narrow the pattern, path or glob"
            )
        )
    elif output.stopped_by == "lines":
        if search.by_head_limit:
            lines.append(f"[head_limit={output.max_lines} reached; more results exist: {following}]")
        else:
            lines.append(
                f"[output truncated at {output.max_lines:,} lines: {following}, or narrow the pattern, "
                "path or glob]"
            )
    if search.long_lines:
        lines.append(
            f"[{search.long_lines} line(s) longer than {GREP_MAX_LINE_BYTES // MIB} MiB were not searched]"
        )
    return ToolResult.text("\n".join(lines))
