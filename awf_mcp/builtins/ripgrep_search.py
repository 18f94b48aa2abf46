"""Grep's directory search and Glob's file listing on ``rg``, with the pure-Python engine's results.

Contract
--------
* :func:`usable_for_tree` says whether ripgrep can stand in for the pure-Python
  walk below ``target``: ``rg`` is found, and (when ``.gitignore`` files apply)
  no directory between the root and ``target`` holds one, since ``rg`` is never
  allowed to read ignore files above the searched tree (they may lie outside
  the roots) and so could not honour those.
* :func:`grep_tree` searches a resolved directory and adds Grep's output lines
  to a :class:`~awf_mcp.builtins.listing.BoundedLines`, formatted exactly as the
  pure-Python engine formats them (paths relative to the first root, escaped
  by :func:`~awf_mcp.builtins.listing.printable`; ``--`` only between
  non-adjacent groups of one file). Files come in the same order (depth first,
  names sorted: ``rg --sort path``). When the output is full (``OutputFull``)
  or the call is cancelled, ``rg`` is killed at once.
* :func:`list_files` yields the regular files below a resolved directory
  (hidden ones included, ``.git`` skipped, symbolic links neither followed nor
  listed, ignore files not applied).
* Every path ``rg`` returns is checked before it is used: it must lie below the
  searched directory, inside the roots, with no symbolic link among its
  directories. ``rg`` walks by path, not by descriptor; see docs/security.md.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator

from awf_mcp.builtins.limits import GREP_MAX_LINE_BYTES, GREP_SHOWN_LINE_BYTES
from awf_mcp.builtins.listing import BoundedLines, cut_line, printable
from awf_mcp.builtins.ripgrep import WALK_OPTIONS, RipgrepRun, failed, ripgrep_binary, rust_regex
from awf_mcp.builtins.sandbox import Sandbox

_LINE_HEAD = re.compile(rb"(\d+)([:-])")


def usable_for_tree(sandbox: Sandbox, target: str, *, gitignore: bool) -> str | None:
    """The ``rg`` binary when ripgrep can search below ``target`` (see the contract), else ``None``."""
    binary = ripgrep_binary()
    if binary is None or not gitignore:
        return binary
    root = sandbox.root_of(target)
    directory = os.path.dirname(target)
    while directory.startswith(root) and len(directory) >= len(root) and target != root:
        if os.path.lexists(os.path.join(directory, ".gitignore")):
            return None
        if directory == root:
            break
        directory = os.path.dirname(directory)
    return binary


class _PathCheck:
    """Validates (and renders) the paths ``rg`` prints, caching the verdict per directory."""

    def __init__(self, sandbox: Sandbox, start: str) -> None:
        self._sandbox = sandbox
        self._prefix = start.rstrip("/") + "/"
        self._directories: dict[str, bool] = {}

    def real(self, raw: bytes) -> str | None:
        real = os.fsdecode(raw)
        if not real.startswith(self._prefix) or "/../" in real or "/./" in real:
            return None
        directory = os.path.dirname(real)
        verdict = self._directories.get(directory)
        if verdict is None:
            verdict = self._sandbox.contains(directory) and os.path.realpath(directory) == directory
            self._directories[directory] = verdict
        return real if verdict else None

    def relative(self, real: str) -> str:
        return real[len(self._prefix) :]


def grep_tree(
    binary: str,
    sandbox: Sandbox,
    target: str,
    *,
    pattern: str,
    case_insensitive: bool,
    mode: str,
    before: int,
    after: int,
    gitignore: bool,
    accept: Callable[[str, str], bool],
    output: BoundedLines,
    cancelled: threading.Event,
) -> int:
    """Search directory ``target`` with ``rg``, adding Grep's lines to ``output`` (see the contract).

    Returns how many matching lines were left out for being longer than
    :data:`GREP_MAX_LINE_BYTES` (the pure-Python engine does not search those).
    """
    arguments = [*WALK_OPTIONS, "--sort=path", "--null", "--no-heading", "--with-filename", "--color=never"]
    arguments += ["--encoding=none", "--ignore-case" if case_insensitive else "--case-sensitive"]
    if not gitignore:
        arguments.append("--no-ignore-vcs")
    if mode == "files_with_matches":
        arguments.append("--files-with-matches")
    elif mode == "count":
        arguments.append("--count")
    else:
        arguments += ["--line-number", f"--before-context={before}", f"--after-context={after}"]
    arguments += ["--regexp", rust_regex(pattern), "--", target]
    check = _PathCheck(sandbox, target)
    shown_of: dict[str, str | None] = {}

    def shown(raw: bytes) -> str | None:
        real = check.real(raw)
        if real is None:
            return None
        if real not in shown_of:
            rel = check.relative(real)
            keep = accept(rel, os.path.basename(real))
            shown_of.clear()  # one file at a time: keep the cache small
            shown_of[real] = printable(sandbox.display(real)) if keep else None
        return shown_of[real]

    long_lines = 0
    with RipgrepRun(binary, arguments, cancelled) as run:
        if mode == "files_with_matches":
            for record, _dropped in run.records(b"\0"):
                name = shown(record)
                if name is not None:
                    output.add(name)
        else:
            long_lines = _content_or_count(run, mode, before or after, shown, output)
        if run.returncode == 2 and not output.lines:
            raise failed(run)
    return long_lines


def _content_or_count(
    run: RipgrepRun,
    mode: str,
    grouped: int,
    shown: Callable[[bytes], str | None],
    output: BoundedLines,
) -> int:
    long_lines = 0
    carry: bytes | None = None  # a path holding a newline arrives in pieces
    current: str | None = None
    last_printed = 0
    for record, dropped in run.records():
        if b"\0" not in record:
            if record not in (b"--", b""):
                carry = record if carry is None else carry + b"\n" + record
            continue
        if carry is not None:
            record, carry = carry + b"\n" + record, None
        raw_path, _, rest = record.partition(b"\0")
        name = shown(raw_path)
        if name is None:
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
        if grouped and last_printed and number > last_printed + 1:
            output.add("--")
        text = rest[head.end() :]
        if len(text) + dropped > GREP_MAX_LINE_BYTES:
            long_lines += 1
            continue
        if not dropped:
            text = text.removesuffix(b"\r")
        marker = ":" if head.group(2) == b":" else "-"
        output.add(f"{name}{marker}{number}{marker}{cut_line(text, GREP_SHOWN_LINE_BYTES, dropped)}")
        last_printed = number
    return long_lines


def list_files(
    binary: str, sandbox: Sandbox, start: str, *, max_depth: int | None, cancelled: threading.Event
) -> Iterator[tuple[str, str]]:
    """``(relative, real)`` for each regular file below resolved directory ``start`` (see the contract)."""
    arguments = [*WALK_OPTIONS, "--files", "--null", "--no-ignore"]
    if max_depth is not None:
        arguments.append(f"--max-depth={max_depth}")
    arguments += ["--", start]
    check = _PathCheck(sandbox, start)
    with RipgrepRun(binary, arguments, cancelled) as run:
        for record, dropped in run.records(b"\0"):
            real = None if dropped else check.real(record)
            if real is not None:
                yield check.relative(real), real
        if run.returncode == 2:
            errors = run.errors()
            if errors:
                raise failed(run)
