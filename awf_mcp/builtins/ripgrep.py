"""ripgrep as the engine of Grep and Glob: finding ``rg``, translating patterns, running it.

Contract
--------
* :func:`ripgrep_binary` finds ``rg``: the one bundled into the one-file binary,
  else the one the ``ripgrep`` wheel installed beside awf-mcp, else ``rg`` on the
  user's ``PATH``. ``AWF_MCP_SEARCH_ENGINE=python`` turns ripgrep off (the
  pure-Python engine is then used, as it is wherever no ``rg`` is found).
* :func:`rust_regex` turns an RE2 pattern (already validated by RE2, so both
  engines refuse the same patterns with the same sentence) into Rust-regex
  syntax with the same meaning: ``\\d \\w \\s \\b`` stay ASCII as in RE2,
  ``\\Q...\\E`` is quoted, octal escapes become ``\\x{..}``, and the class
  operators Rust has and RE2 lacks (``[a&&b]``, ``--``, ``~~``, nested ``[``)
  are escaped. ``\\C`` is refused.
* :class:`RipgrepRun` runs ``rg`` with the user's environment
  (:func:`~awf_mcp.processes.childenv.child_environment`) minus
  ``RIPGREP_CONFIG_PATH``, always with ``--no-config``, and hands its output
  over one record at a time. A record is cut at :data:`MAX_RECORD_BYTES` (the
  rest of it is counted, never buffered), so no output can grow memory. Reading
  waits at most 0.1 s at a time and checks the call's ``cancelled`` flag in
  between; :meth:`RipgrepRun.close` (also on leaving the ``with`` block, e.g.
  when the output budget is reached) kills ``rg`` at once and reaps it.
* The walk options every run shares (:data:`WALK_OPTIONS`): hidden files are
  included, ``.git`` directories excluded, symbolic links never followed;
  of the ignore files only ``.gitignore`` counts, and only inside the
  searched tree (no parent directories, no global gitignore, no
  ``.git/info/exclude``, no ``.ignore``/``.rgignore``), and it counts
  whether or not the tree is a git repository.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence

from awf_mcp.builtins.limits import GREP_MAX_LINE_BYTES
from awf_mcp.builtins.walk import Cancelled
from awf_mcp.ports import ToolError
from awf_mcp.processes.childenv import child_environment

ENGINE_VARIABLE = "AWF_MCP_SEARCH_ENGINE"
"""``python`` forces the pure-Python engine; anything else (or unset) uses ripgrep when found."""

MAX_RECORD_BYTES = GREP_MAX_LINE_BYTES + 64 * 1024
"""The most of one output record (one line of ``rg``'s output) kept in memory."""

WALK_OPTIONS: tuple[str, ...] = (
    "--no-config",
    "--no-messages",
    "--hidden",
    "--glob=!.git",
    "--no-ignore-parent",
    "--no-ignore-global",
    "--no-ignore-exclude",
    "--no-ignore-dot",
    "--no-require-git",
    "--max-depth=200",
)
"""The walk every ``rg`` run makes (see the module contract)."""

_READ_CHUNK = 256 * 1024
_POLL_SECONDS = 0.1
_STDERR_KEEP = 2000


@functools.cache
def ripgrep_binary() -> str | None:
    """The ``rg`` to run, or ``None`` for the pure-Python engine (cached; see the contract)."""
    if os.environ.get(ENGINE_VARIABLE, "").strip().lower() == "python":
        return None
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle is not None:
        bundled = os.path.join(bundle, "rg")
        if os.access(bundled, os.X_OK):
            return bundled
    from importlib import metadata

    with contextlib.suppress(metadata.PackageNotFoundError):
        distribution = metadata.distribution("ripgrep")
        for file in distribution.files or []:
            if file.name in ("rg", "rg.exe"):
                located = os.path.normpath(str(distribution.locate_file(file)))
                if os.access(located, os.X_OK):
                    return located
    return shutil.which("rg", path=child_environment().get("PATH"))


# ---------------------------------------------------------------- RE2 -> Rust regex

_ASCII_CLASSES = {
    "d": "0-9",
    "w": "0-9A-Za-z_",
    "s": "\\t\\n\\x0C\\r ",
}


def _class_escape(letter: str, inside: bool) -> str:
    """RE2's ASCII ``\\d``-style class; inside a class a negated one nests (Rust allows it)."""
    body = _ASCII_CLASSES[letter.lower()]
    if letter.isupper():
        return f"[^{body}]"
    return body if inside else f"[{body}]"


def rust_regex(pattern: str) -> str:
    """``pattern`` (valid RE2) in Rust-regex syntax with RE2's meaning (see the contract)."""
    out: list[str] = []
    index = 0
    depth = 0  # inside a character class when > 0 (RE2 classes do not nest)
    class_start = -1
    length = len(pattern)
    while index < length:
        char = pattern[index]
        if char == "\\" and index + 1 < length:
            nxt = pattern[index + 1]
            if nxt == "Q":
                end = pattern.find("\\E", index + 2)
                quoted = pattern[index + 2 :] if end < 0 else pattern[index + 2 : end]
                out.append("".join(re.escape(c) if not c.isalnum() else c for c in quoted))
                index = length if end < 0 else end + 2
                continue
            if nxt == "E":
                index += 2
                continue
            if nxt == "C":
                raise ToolError(f"pattern {pattern!r} uses \\C (any byte), which ripgrep cannot match")
            if nxt in "dwsDWS":
                out.append(_class_escape(nxt, depth > 0))
                index += 2
                continue
            if nxt in "bB" and depth == 0:
                out.append(f"(?-u:\\{nxt})")
                index += 2
                continue
            if nxt in "01234567":
                digits = re.match(r"[0-7]{1,3}", pattern[index + 1 :])
                assert digits is not None
                out.append(f"\\x{{{int(digits.group(), 8):x}}}")
                index += 1 + len(digits.group())
                continue
            if nxt in "pP" and index + 2 < length and pattern[index + 2] == "{":
                close = pattern.find("}", index + 2)
                out.append(pattern[index : close + 1])
                index = close + 1
                continue
            out.append(pattern[index : index + 2])
            index += 2
            continue
        if depth == 0:
            if char == "[":
                depth = 1
                class_start = index
                out.append(char)
                index += 1
                if index < length and pattern[index] == "^":
                    out.append("^")
                    index += 1
                if index < length and pattern[index] == "]":
                    out.append("\\]")
                    index += 1
                continue
            out.append(char)
            index += 1
            continue
        # inside a class
        if char == "]":
            depth = 0
            out.append(char)
        elif char == "[" and pattern.startswith("[:", index):
            close = pattern.find(":]", index + 2)
            out.append(pattern[index : close + 2])
            index = close + 2
            continue
        elif char in "[&~":
            out.append("\\" + char)
        elif char == "-" and index > class_start + 1 and pattern[index - 1] == "-":
            out.append("\\-")
        else:
            out.append(char)
        index += 1
    return "".join(out)


# ---------------------------------------------------------------- running rg


class RipgrepRun:
    """One ``rg`` process; iterate :meth:`records`, then read ``returncode``/``errors``."""

    def __init__(
        self, binary: str, arguments: Sequence[str], cancelled: threading.Event, *, cwd: int
    ) -> None:
        """Start ``rg`` in the directory open as descriptor ``cwd`` (taken over and closed here)."""
        env = child_environment()
        env.pop("RIPGREP_CONFIG_PATH", None)
        self._cancelled = cancelled
        try:
            self._stderr = tempfile.TemporaryFile()  # noqa: SIM115  (closed in close())
            self.process = subprocess.Popen(
                [binary, *arguments],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=self._stderr,
                env=env,
                cwd=f"/proc/self/fd/{cwd}",
                pass_fds=(cwd,),
            )
        finally:
            os.close(cwd)
        self.returncode: int | None = None

    def __enter__(self) -> RipgrepRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def records(self, separator: bytes = b"\n") -> Iterator[tuple[bytes, int]]:
        """Each record and how many of its bytes were cut off beyond :data:`MAX_RECORD_BYTES`.

        Raises :class:`~awf_mcp.builtins.walk.Cancelled` once the call is cancelled.
        """
        for batch, cut in self.batches(separator):
            if cut:
                yield from ((record, cut.get(index, 0)) for index, record in enumerate(batch))
            else:
                yield from ((record, 0) for record in batch)

    def batches(self, separator: bytes = b"\n") -> Iterator[tuple[list[bytes], dict[int, int]]]:
        """The records of :meth:`records` as a list per read of the pipe (fewer steps in Python).

        The dictionary maps the index of each record that was cut to the bytes cut off.
        """
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        pending = b""
        dropped = 0
        while True:
            if self._cancelled.is_set():
                raise Cancelled("the call was cancelled")
            ready, _, _ = select.select([fd], [], [], _POLL_SECONDS)
            if not ready:
                continue
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                break
            batch = chunk.split(separator)
            tail = batch.pop()
            cut: dict[int, int] = {}
            if batch and (pending or dropped):
                batch[0], dropped = _capped(pending, dropped, batch[0])
                if dropped:
                    cut[0] = dropped
                pending, dropped = b"", 0
            if len(chunk) > MAX_RECORD_BYTES:  # only then can one record of it be too long
                for index, record in enumerate(batch):
                    if len(record) > MAX_RECORD_BYTES:
                        batch[index] = record[:MAX_RECORD_BYTES]
                        cut[index] = cut.get(index, 0) + len(record) - MAX_RECORD_BYTES
            pending, dropped = _capped(pending, dropped, tail)
            if batch:
                yield batch, cut
        if pending or dropped:
            yield [pending], ({0: dropped} if dropped else {})
        self.returncode = self.process.wait()

    def errors(self) -> str:
        """The start of what ``rg`` wrote to stderr."""
        self._stderr.seek(0)
        return self._stderr.read(_STDERR_KEEP).decode("utf-8", "replace").strip()

    def close(self) -> None:
        """Kill ``rg`` if it still runs, reap it and release the pipes."""
        if self.process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        self.process.wait()
        if self.returncode is None:
            self.returncode = self.process.returncode
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()


def _capped(kept: bytes, dropped: int, more: bytes) -> tuple[bytes, int]:
    """``kept + more`` cut to :data:`MAX_RECORD_BYTES`, and the bytes cut off so far."""
    room = max(MAX_RECORD_BYTES - len(kept), 0)
    if not room:
        return kept, dropped + len(more)
    if len(more) > room:
        return kept + more[:room], dropped + len(more) - room
    return kept + more, dropped


class RipgrepFailed(ToolError):
    """``rg`` exited with status 2 before giving any result; the pure-Python engine may take over."""


def failed(run: RipgrepRun) -> RipgrepFailed:
    """The error for an ``rg`` run that exited with status 2 and said why."""
    reason = run.errors().splitlines()
    return RipgrepFailed(f"the search failed: ripgrep said: {' '.join(reason)[:500] or 'nothing'}")
