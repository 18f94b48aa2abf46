"""Command output: kept whole in a file while there is room, shown as its start and its end.

Contract
--------
* :class:`OutputDir` is one private directory per server (``0700``, in the system's
  temporary directory, never inside the roots), created on first use and removed by
  :meth:`OutputDir.close` when the server stops. The sandbox lets ``Read`` (and Grep,
  Glob) read it and refuses writes to it.
* The files in it take at most :data:`~awf_mcp.builtins.limits.BASH_OUTPUT_DIR_BYTES`
  together: to make room for new output, the files of finished streams are removed,
  oldest first (:attr:`StreamLog.removed`); when only streams still being written are
  left, new output is counted but not kept. :meth:`OutputDir.remove` removes one
  stream's file at once (a background job that is forgotten).
* :class:`StreamLog` receives one stream of a command (stdout or stderr). It writes
  every byte to its file, up to :data:`~awf_mcp.builtins.limits.BASH_FILE_BYTES` and
  while the directory has room (from the first byte not kept on, the rest is counted,
  never written, so the file is always the stream's start), and keeps in memory only the
  first and the last ``keep`` bytes and a line count, so memory stays bounded however
  much a command prints.
* :func:`render_streams` shows the streams within a budget in bytes: each keeps its
  start and, with the larger share, its end (where a build's error is); the dropped
  middle is marked in place, and one final note names the file holding the whole
  stream and the Read ``offset`` at which the cut begins.
* :meth:`StreamLog.read_new` returns what was written since the previous call, within
  a budget in bytes of the text it returns (bytes that are not UTF-8 are shown as U+FFFD
  and counted as such): whole lines when it cannot return everything, a character cut
  over two calls never split. Nothing is skipped or repeated: how ``BashOutput`` pages a
  background job's output.
"""

from __future__ import annotations

import codecs
import collections
import contextlib
import os
import shutil
import tempfile
import threading
from collections.abc import Callable

from awf_mcp import budget
from awf_mcp.builtins.limits import BASH_FILE_BYTES, BASH_OUTPUT_DIR_BYTES

_PREFIX = "awf-mcp-"


class OutputDir:
    """The server's private directory for command output (created lazily), bounded in bytes.

    ``on_create`` is called with the directory once it exists (the provider lets the
    sandbox read it). Creating it also removes the directories of servers that died
    without cleaning up (``kill -9``), recognised by their dead process id. ``limit`` is
    how many bytes its files may take together.
    """

    def __init__(
        self, on_create: Callable[[str], None] | None = None, *, limit: int = BASH_OUTPUT_DIR_BYTES
    ) -> None:
        self._path: str | None = None
        self._lock = threading.Lock()
        self._count = 0
        self._on_create = on_create
        self.limit = limit
        self._logs: collections.OrderedDict[str, StreamLog] = collections.OrderedDict()
        self._bytes = 0

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

    def new_log(self, stem: str, keep: int) -> StreamLog:
        """A :class:`StreamLog` writing to a fresh file here, within this directory's bound."""
        log = StreamLog(self.new_file(stem), keep, self)
        with self._lock:
            self._logs[log.path] = log
        return log

    @property
    def path(self) -> str | None:
        """The directory, once created."""
        return self._path

    @property
    def used(self) -> int:
        """Bytes the files here take."""
        return self._bytes

    def reserve(self, log: StreamLog, wanted: int) -> int:
        """Room for ``wanted`` more bytes of ``log``: files of finished streams go, oldest first."""
        with self._lock:
            for other in list(self._logs.values()):
                if self._bytes + wanted <= self.limit:
                    break
                if other is not log and other.finished:
                    self._discard(other)
            granted = max(0, min(wanted, self.limit - self._bytes))
            self._bytes += granted
            return granted

    def remove(self, log: StreamLog) -> None:
        """Remove the file of ``log`` (a finished stream no one can reach any more)."""
        with self._lock:
            if self._logs.get(log.path) is log:
                self._discard(log)

    def _discard(self, log: StreamLog) -> None:
        del self._logs[log.path]
        log.removed = True
        self._bytes -= log.written
        with contextlib.suppress(OSError):
            os.unlink(log.path)

    def close(self) -> None:
        """Remove the directory and everything in it."""
        with self._lock:
            if self._path is not None:
                shutil.rmtree(self._path, ignore_errors=True)
                self._path = None
            self._logs.clear()
            self._bytes = 0


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
    """One stream of a command: as much of it as there is room for in a file, its start and end in memory."""

    def __init__(self, path: str, keep: int, outputs: OutputDir | None = None) -> None:
        self.path = path
        self.keep = keep
        self.total = 0
        self.newlines = 0
        self.dropped = 0
        self.removed = False
        """True once the file is gone to make room (:class:`OutputDir`)."""
        self._outputs = outputs
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
            room = 0 if self.dropped else min(len(data), BASH_FILE_BYTES - self.written + len(data))
            if room > 0 and self._outputs is not None:
                room = self._outputs.reserve(self, room)
            if room > 0 and not self._file.closed:
                with contextlib.suppress(OSError):
                    self._file.write(data[:room])
            self.dropped += len(data) - max(room, 0)
            if len(self._head) < self.keep:
                self._head += data[: self.keep - len(self._head)]
            self._tail.append(data)
            self._tail_bytes += len(data)
            while self._tail and self._tail_bytes - len(self._tail[0]) >= self.keep:
                self._tail_bytes -= len(self._tail.popleft())

    def close(self) -> None:
        """Close the file (its content stays for Read until the directory goes, or room is needed)."""
        with self._lock:
            self._file.close()

    @property
    def finished(self) -> bool:
        """True once the stream has ended (its file is complete)."""
        return self._file.closed

    @property
    def written(self) -> int:
        """Bytes in the file."""
        return self.total - self.dropped

    @property
    def unread(self) -> int:
        """Bytes in the file that :meth:`read_new` has not returned yet."""
        return self.written - self._read_position

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
        """Text written to the file since the last call, at most ``limit`` bytes; and bytes still unread.

        When the file was removed to make room, the unread part is skipped: ``("", 0)``.
        """
        with self._lock:
            available = self.written - self._read_position
            data = b""
            if available > 0 and limit > 0 and not self.removed:
                try:
                    with open(self.path, "rb") as handle:
                        handle.seek(self._read_position)
                        data = handle.read(min(available, limit))
                except FileNotFoundError:
                    data = b""
            if self.removed:
                self._read_position = self.written
                return "", 0
            whole = len(data) == available
            text, used = _page(data, limit, whole=whole, final=whole and self._file.closed)
            self._read_position += used
            return text, self.written - self._read_position


def _page(data: bytes, limit: int, *, whole: bool, final: bool) -> tuple[str, int]:
    """The start of ``data`` to show within ``limit`` bytes of text, and how many bytes of it that is.

    Unless ``whole`` (all there is to show, and it fits), the cut is at the last line end,
    else inside the one long line. An unfinished character at the end is left for the
    next call unless ``final``. Bytes that are not UTF-8 become U+FFFD, which takes three
    bytes of the budget: when they make the text too long, less is taken.
    """
    while data:
        if not whole:
            end = data.rfind(b"\n") + 1
            data = data[:end] if end else data
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        text = decoder.decode(data, final=final and whole)
        shown = budget.size(text)
        if shown <= limit:
            return text, len(data) - len(decoder.getstate()[0])
        data = data[: max(len(data) - (shown - limit), len(data) * limit // shown)]
        whole = False
    return "", 0


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


def fair_shares(sizes: dict[str, int], room: int) -> dict[str, int]:
    """Split ``room`` bytes between streams of ``sizes`` bytes: the smaller takes what it needs
    up to an even share, the larger the rest."""
    shares: dict[str, int] = {}
    left = room
    for name in sorted(sizes, key=lambda name: sizes[name]):
        shares[name] = min(sizes[name], left // (len(sizes) - len(shares)))
        left -= shares[name]
    return shares


def render_streams(header: str, streams: list[tuple[str, StreamLog]], room: int) -> str:
    """``header`` and each non-empty stream within ``room`` bytes, then one note if anything was cut."""
    present = [(name, log) for name, log in streams if log.total]
    if not present:
        return f"{header}\n(no output)"
    room = max(room - budget.size(header) - 400 * len(present), 200)
    shares = fair_shares({name: log.total for name, log in present}, room)
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
