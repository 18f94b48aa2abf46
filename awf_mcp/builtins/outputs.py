"""Command output: kept whole in a file for the session, shown as its start and its end.

Contract
--------
* :class:`OutputDir` is one private directory per server (``0700``, in the system's
  temporary directory, never inside the roots), created on first use and removed by
  :meth:`OutputDir.close` when the server stops. The sandbox lets ``Read`` (and Grep,
  Glob) read it and refuses writes to it.
* :class:`StreamLog` receives one stream of a command (stdout or stderr). It writes
  every byte to its file, up to :data:`~awf_mcp.builtins.limits.BASH_FILE_BYTES` (the
  rest is counted), and keeps in memory only the first and the last ``keep`` bytes and
  a line count, so memory stays bounded however much a command prints.
* :func:`render_streams` shows the streams within a budget in bytes: each keeps its
  start and, with the larger share, its end (where a build's error is); the dropped
  middle is marked in place, and one final note names the file holding the whole
  stream and the Read ``offset`` at which the cut begins.
* :meth:`StreamLog.read_new` returns what was written since the previous call, within
  a budget: how ``BashOutput`` pages a background job's output.
"""

from __future__ import annotations

import collections
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable

from awf_mcp import budget
from awf_mcp.builtins.limits import BASH_FILE_BYTES

_PREFIX = "awf-mcp-"


class OutputDir:
    """The server's private directory for command output (created lazily).

    ``on_create`` is called with the directory once it exists (the provider lets the
    sandbox read it). Creating it also removes the directories of servers that died
    without cleaning up (``kill -9``), recognised by their dead process id.
    """

    def __init__(self, on_create: Callable[[str], None] | None = None) -> None:
        self._path: str | None = None
        self._lock = threading.Lock()
        self._count = 0
        self._on_create = on_create

    def new_file(self, stem: str) -> str:
        """A fresh path ``<dir>/<stem>-<n>`` for one stream's output."""
        with self._lock:
            if self._path is None:
                _sweep_orphans()
                self._path = tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-")
                if self._on_create is not None:
                    self._on_create(self._path)
            self._count += 1
            return os.path.join(self._path, f"{stem}-{self._count}")

    @property
    def path(self) -> str | None:
        """The directory, once created."""
        return self._path

    def close(self) -> None:
        """Remove the directory and everything in it."""
        with self._lock:
            if self._path is not None:
                shutil.rmtree(self._path, ignore_errors=True)
                self._path = None


def _sweep_orphans() -> None:
    """Remove output directories whose server process is gone."""
    base = tempfile.gettempdir()
    with contextlib.suppress(OSError):
        for entry in os.scandir(base):
            pid = entry.name[len(_PREFIX) :].split("-", 1)[0]
            if not entry.name.startswith(_PREFIX) or not pid.isdigit() or int(pid) == os.getpid():
                continue
            try:
                os.kill(int(pid), 0)
            except ProcessLookupError:
                if (
                    entry.is_dir(follow_symlinks=False)
                    and entry.stat(follow_symlinks=False).st_uid == os.getuid()
                ):
                    shutil.rmtree(entry.path, ignore_errors=True)
            except PermissionError:
                continue


class StreamLog:
    """One stream of a command: the whole of it in a file, its start and end in memory."""

    def __init__(self, path: str, keep: int) -> None:
        self.path = path
        self.keep = keep
        self.total = 0
        self.newlines = 0
        self.dropped = 0
        self._head = bytearray()
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_bytes = 0
        self._read_position = 0
        self._lock = threading.Lock()
        self._file = open(path, "wb", buffering=0)  # noqa: SIM115  (closed by close())

    def feed(self, data: bytes) -> None:
        """Record ``data``, the next bytes of the stream (safe from any thread)."""
        if not data:
            return
        with self._lock:
            self.total += len(data)
            self.newlines += data.count(b"\n")
            room = BASH_FILE_BYTES - (self.total - len(data) - self.dropped)
            if room > 0 and not self._file.closed:
                with contextlib.suppress(OSError):
                    self._file.write(data[:room])
            self.dropped += max(0, len(data) - max(room, 0))
            if len(self._head) < self.keep:
                self._head += data[: self.keep - len(self._head)]
            self._tail.append(data)
            self._tail_bytes += len(data)
            while self._tail and self._tail_bytes - len(self._tail[0]) >= self.keep:
                self._tail_bytes -= len(self._tail.popleft())

    def close(self) -> None:
        """Close the file (its content stays for Read until the directory goes)."""
        with self._lock:
            self._file.close()

    @property
    def written(self) -> int:
        """Bytes in the file."""
        return self.total - self.dropped

    def text(self) -> tuple[str, str, bool]:
        """``(start, end, whole)``: the stream's first and last ``keep`` bytes, decoded.

        When the whole stream is in memory, ``start`` holds it, ``end`` is empty and
        ``whole`` is true.
        """
        with self._lock:
            if self.total <= self.keep:
                return bytes(self._head).decode("utf-8", "replace"), "", True
            tail = b"".join(self._tail)[-self.keep :]
            head = bytes(self._head)
        start = head.decode("utf-8", "replace")
        end = tail.decode("utf-8", "replace")
        return start, end, False

    def read_new(self, limit: int) -> tuple[str, int]:
        """Text written to the file since the last call, at most ``limit`` bytes; and bytes still unread."""
        with self._lock:
            available = self.written - self._read_position
            want = min(available, limit)
            with open(self.path, "rb") as handle:
                handle.seek(self._read_position)
                data = handle.read(want)
            if want < available:  # end on a line, or at least a whole character
                cut = data.rfind(b"\n") + 1
                data = (
                    data[:cut] if cut else budget.encode(budget.head(data.decode("utf-8", "replace"), want))
                )
            self._read_position += len(data)
            return data.decode("utf-8", "replace"), self.written - self._read_position


def _show(log: StreamLog, name: str, share: int) -> tuple[str, str | None]:
    """One stream's section within ``share`` bytes, and its note when something was left out."""
    start, end, whole = log.text()
    if whole:
        text = start
        if budget.size(text) <= share:
            return f"--- {name} ---\n{text.removesuffix(chr(10))}", None
        first, last, omitted_lines, omitted_bytes = budget.head_and_tail(text, share)
    else:
        first = budget.head_lines(start, share // 4)
        last = budget.tail_lines(end, share - budget.size(first))
        omitted_bytes = log.total - budget.size(first) - budget.size(last)
        omitted_lines = max(log.newlines - first.count("\n") - last.count("\n"), 0)
    cut_line = first.count("\n")
    body = f"{first}[... {omitted_lines:,} lines ({omitted_bytes:,} bytes) left out ...]\n{last}"
    whole_file = (
        f" (its first {log.written:,} bytes; {log.dropped:,} more were dropped)" if log.dropped else ""
    )
    note = (
        f"{name} cut; the whole {name} is in {log.path}{whole_file}: "
        f"Read it, offset={cut_line} starts at the cut"
    )
    return f"--- {name} ---\n{body.removesuffix(chr(10))}", note


def render_streams(header: str, streams: list[tuple[str, StreamLog]], room: int) -> str:
    """``header`` and each non-empty stream within ``room`` bytes, then one note if anything was cut."""
    present = [(name, log) for name, log in streams if log.total]
    if not present:
        return f"{header}\n(no output)"
    room = max(room - budget.size(header) - 400 * len(present), 200)
    sizes = {name: log.total for name, log in present}
    shares: dict[str, int] = {}
    left = room
    for name, _ in sorted(present, key=lambda item: sizes[item[0]]):
        fair = left // (len(present) - len(shares))
        shares[name] = min(sizes[name], fair)
        left -= shares[name]
    sections: list[str] = [header]
    notes: list[str] = []
    for name, log in present:
        section, note = _show(log, name, shares[name])
        sections.append(section)
        if note:
            notes.append(note)
    if notes:
        sections.append(budget.note("; ".join(notes)))
    return "\n".join(sections)
