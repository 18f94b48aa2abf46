"""File access shared by the built-in tools: opening inside the sandbox, atomic replacement.

Contract
--------
* :func:`open_regular` opens an already-resolved path for reading through the
  sandbox (``O_NOFOLLOW`` walk) and insists on a regular file, turning every
  expected failure into a :class:`~awf_mcp.ports.ToolError` that names the path
  as the model gave it. :func:`open_plain_regular` resolves and opens at once a
  path with no symbolic link in it, or says to take that usual way.
* :func:`writing` holds the one writer lock of a file for a read-modify-write:
  writers of the same file (the same device and inode, whichever name they use;
  a file not created yet: the same directory and name) run one after another,
  never interleaved, so an edit can never be lost to another one in flight.
* :meth:`WriteTarget.replace` replaces a file's content all at once: a temporary
  file in the same directory, ``fsync``, ``os.replace``, then an ``fsync`` of the
  directory. An existing file keeps its owner, group, permission bits and
  extended attributes (ACLs included), except that setuid is cleared, setgid
  when the group may execute, and file capabilities dropped, as the kernel does
  on a write. Whatever fails, the
  temporary file is removed and the original is left untouched.
* A file with more than one hard link, or whose owner the server may not give
  away, is rewritten in place instead (same inode: every name sees the new text,
  owner and attributes stay); that write is not atomic for a concurrent reader.
* Read loops stop with :class:`Cancelled` once the call's ``cancelled`` flag is set.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from awf_mcp.builtins.sandbox import Sandbox, describe_kind, quote_path, unescape_bytes
from awf_mcp.ports import ToolError, current_call


class Cancelled(ToolError):
    """The call was cancelled (or timed out) while a file was being read."""


def check_cancelled() -> None:
    """Raise :class:`Cancelled` when the current call's ``cancelled`` flag is set."""
    if current_call().cancelled.is_set():
        raise Cancelled("the call was cancelled")


def describe_os_error(exc: OSError, shown: str) -> str:
    """One sentence for an OS error about path ``shown``."""
    if isinstance(exc, FileNotFoundError):
        return f"{quote_path(shown)} does not exist"
    if isinstance(exc, IsADirectoryError):
        return f"{quote_path(shown)} is a directory"
    if isinstance(exc, NotADirectoryError):
        return f"a parent of {quote_path(shown)} is not a directory"
    if isinstance(exc, PermissionError):
        return f"permission denied: {quote_path(shown)}"
    if exc.errno == errno.ELOOP:
        return f"{quote_path(shown)} changed into a symbolic link while being opened; refused"
    return f"cannot access {quote_path(shown)}: {exc.strerror or exc}"


def open_regular(sandbox: Sandbox, real_path: str, shown: str) -> tuple[int, os.stat_result]:
    """Open resolved ``real_path`` read-only; returns the descriptor and its ``fstat``."""
    try:
        fd = sandbox.open_file(real_path, os.O_RDONLY)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ToolError(describe_os_error(exc, shown)) from None
        try:
            mode = os.lstat(real_path).st_mode
        except OSError:
            mode = stat.S_IFREG
        if isinstance(exc, IsADirectoryError) or not stat.S_ISREG(mode):
            raise ToolError(f"{quote_path(shown)} is {describe_kind(mode)}, not a regular file") from None
        raise ToolError(describe_os_error(exc, shown)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{quote_path(shown)} is {describe_kind(info.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    return fd, info


def open_plain_regular(sandbox: Sandbox, arg: str) -> tuple[str, int, os.stat_result] | None:
    """:meth:`Sandbox.resolve` and :func:`open_regular` in one step, when :meth:`Sandbox.open_plain`
    can take it and the path names a regular file; ``None`` otherwise (nothing was asked of the
    path policy then: take the usual way, which says what is wrong).

    Returns the resolved path, the descriptor and its ``fstat``, as the two would.
    """
    opened = sandbox.open_plain(arg)
    if opened is None:
        return None
    real, fd = opened
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            return None
        sandbox.check_denied(real, unescape_bytes(arg))  # the argument as resolve() words it
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return real, fd, info


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (fewer only at end of file)."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        check_cancelled()
        chunk = os.read(fd, min(remaining, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def skip_line(stream: BinaryIO, chunk: int = 1024 * 1024) -> bool:
    """Consume the rest of the current line, ``chunk`` bytes at a time; False at end of file.

    A line may be endless (a huge sparse file): once the call is cancelled, skipping stops
    with :class:`Cancelled`, so an abandoned call stops reading.
    """
    data = stream.readline(chunk)
    while data and not data.endswith(b"\n"):
        check_cancelled()
        data = stream.readline(chunk)
        if not data:
            return True
    return bool(data)


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What :meth:`WriteTarget.replace` did."""

    created: bool
    size: int


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_LockKey = tuple[int, int] | tuple[int, int, str]
_locks: dict[_LockKey, tuple[threading.Lock, int]] = {}
_locks_guard = threading.Lock()


@contextlib.contextmanager
def _holding(key: _LockKey) -> Iterator[None]:
    """The writer lock of ``key``; the table keeps only locks someone holds or awaits."""
    with _locks_guard:
        lock, users = _locks.get(key, (threading.Lock(), 0))
        _locks[key] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _locks_guard:
            lock, users = _locks[key]
            if users == 1:
                del _locks[key]
            else:
                _locks[key] = (lock, users - 1)


def _stat_or_none(name: str, dir_fd: int) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


_CAPABILITIES = "security.capability"
"""File capabilities: dropped on a write, as the kernel does, never carried to new content."""


def _kept_mode(mode: int) -> int:
    """``mode``'s permission bits less what a write clears: setuid, and setgid when group-executable."""
    kept = stat.S_IMODE(mode) & ~stat.S_ISUID
    if kept & stat.S_IXGRP:
        kept &= ~stat.S_ISGID
    return kept


@dataclass(slots=True)
class WriteTarget:
    """A file about to be written, its parent open and its writer lock held (see :func:`writing`)."""

    dir_fd: int
    name: str
    shown: str
    existing: os.stat_result | None

    def replace(self, data: bytes) -> WriteOutcome:
        """Make ``data`` the file's content; see the module docstring for what is kept."""
        existing = self.existing
        try:
            if existing is not None and (existing.st_nlink > 1 or not self._may_give_to(existing)):
                self._rewrite_in_place(data, existing)
            else:
                self._replace_atomically(data, existing)
            with contextlib.suppress(OSError):
                os.fsync(self.dir_fd)
        except ToolError:
            raise
        except OSError as exc:
            raise ToolError(f"cannot write {quote_path(self.shown)}: {exc.strerror or exc}") from exc
        return WriteOutcome(created=existing is None, size=len(data))

    @staticmethod
    def _may_give_to(existing: os.stat_result) -> bool:
        """True when a new file of ours can be given ``existing``'s owner and group."""
        if os.geteuid() == 0:
            return True
        return existing.st_uid == os.geteuid() and (
            existing.st_gid == os.getegid() or existing.st_gid in os.getgroups()
        )

    def _rewrite_in_place(self, data: bytes, existing: os.stat_result) -> None:
        flags = os.O_WRONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(self.name, flags, dir_fd=self.dir_fd)
        try:
            info = os.fstat(fd)
            if (info.st_dev, info.st_ino) != (existing.st_dev, existing.st_ino):
                raise ToolError(f"{quote_path(self.shown)} was replaced while being written; try again")
            if stat.S_IMODE(info.st_mode) != _kept_mode(info.st_mode):
                os.fchmod(fd, _kept_mode(info.st_mode))
            with contextlib.suppress(OSError):  # a write drops file capabilities, like setuid
                os.removexattr(fd, _CAPABILITIES)
            os.set_blocking(fd, True)
            _write_all(fd, data)
            os.ftruncate(fd, len(data))
            os.fsync(fd)
        finally:
            os.close(fd)

    def _replace_atomically(self, data: bytes, existing: os.stat_result | None) -> None:
        temp = f".awf-{secrets.token_hex(6)}.tmp"
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0),
            0o666 if existing is None else 0o600,
            dir_fd=self.dir_fd,
        )
        replaced = False
        try:
            try:
                _write_all(fd, data)
                if existing is not None:
                    self._copy_metadata(fd, existing)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.name, src_dir_fd=self.dir_fd, dst_dir_fd=self.dir_fd)
            replaced = True
        finally:
            if not replaced:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=self.dir_fd)

    def _copy_metadata(self, fd: int, existing: os.stat_result) -> None:
        """Owner and group, extended attributes, then the permission bits (chown clears setuid)."""
        mine = os.fstat(fd)
        if (mine.st_uid, mine.st_gid) != (existing.st_uid, existing.st_gid):
            os.fchown(fd, existing.st_uid, existing.st_gid)
        source = f"/proc/self/fd/{self.dir_fd}/{self.name}"
        try:
            names = os.listxattr(source, follow_symlinks=False)
        except OSError as exc:
            if exc.errno not in (errno.ENOTSUP, errno.ENOENT):
                raise
            names = []
        for attribute in names:
            if attribute == _CAPABILITIES:  # a write drops file capabilities, like setuid
                continue
            try:
                os.setxattr(fd, attribute, os.getxattr(source, attribute, follow_symlinks=False))
            except OSError as exc:
                if attribute == "security.selinux":  # the directory's label is the fallback
                    continue
                raise ToolError(
                    f"cannot write {quote_path(self.shown)}: its extended attribute "
                    f"{attribute!r} could not be kept ({exc.strerror}); the file is unchanged"
                ) from None
        os.fchmod(fd, _kept_mode(existing.st_mode))


@contextlib.contextmanager
def writing(sandbox: Sandbox, real_path: str, shown: str, *, make_parents: bool) -> Iterator[WriteTarget]:
    """Hold the writer lock of resolved ``real_path`` and yield its :class:`WriteTarget`.

    ``make_parents`` creates missing parent directories (inside the root). A
    directory, the root itself and anything but a regular file are refused.
    """
    if real_path in sandbox.roots:
        raise ToolError(f"{quote_path(shown)} is the root directory, not a file; give a file name")
    parent, name = os.path.split(real_path)
    dir_fd = sandbox.open_dir(parent, create=make_parents)
    try:
        directory = os.fstat(dir_fd)
        while True:
            existing = _stat_or_none(name, dir_fd)
            if existing is not None and not stat.S_ISREG(existing.st_mode):
                raise ToolError(
                    f"{quote_path(shown)} is {describe_kind(existing.st_mode)}, not a regular file; "
                    "refusing to replace it"
                )
            key: _LockKey = (
                (existing.st_dev, existing.st_ino)
                if existing is not None
                else (directory.st_dev, directory.st_ino, name)
            )
            with _holding(key):
                now = _stat_or_none(name, dir_fd)
                identity = None if now is None else (now.st_dev, now.st_ino)
                if identity == (None if existing is None else (existing.st_dev, existing.st_ino)):
                    yield WriteTarget(dir_fd, name, shown, now)
                    return
            # Another writer replaced or created the file meanwhile: lock the file that is there now.
    finally:
        os.close(dir_fd)


def atomic_write(
    sandbox: Sandbox, real_path: str, data: bytes, shown: str, *, make_parents: bool
) -> WriteOutcome:
    """Replace (or create) resolved ``real_path`` with ``data``, holding its writer lock."""
    with writing(sandbox, real_path, shown, make_parents=make_parents) as target:
        return target.replace(data)
