"""File access shared by the built-in tools: opening inside the sandbox, atomic replacement.

Contract
--------
* :func:`open_regular` opens an already-resolved path for reading through the
  sandbox (``O_NOFOLLOW`` walk) and insists on a regular file, turning every
  expected failure into a :class:`~awf_mcp.ports.ToolError` that names the path
  as the model gave it.
* :func:`atomic_write` replaces a file's content all at once: a temporary file in
  the same directory, ``fsync``, ``os.replace``, then an ``fsync`` of the
  directory. An existing file keeps its permission bits. Whatever fails, the
  temporary file is removed and the original is left untouched.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import threading
from dataclasses import dataclass
from typing import BinaryIO

from awf_mcp.builtins.sandbox import Sandbox, quote_path
from awf_mcp.ports import ToolError


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
        if isinstance(exc, IsADirectoryError) or os.path.isdir(real_path):
            raise ToolError(f"{quote_path(shown)} is a directory, not a file") from None
        raise ToolError(describe_os_error(exc, shown)) from None
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        os.close(fd)
        raise ToolError(f"{quote_path(shown)} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise ToolError(f"{quote_path(shown)} is not a regular file")
    os.set_blocking(fd, True)
    return fd, info


def read_at_most(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from ``fd`` (fewer only at end of file)."""
    chunks: list[bytes] = []
    remaining = limit
    while remaining > 0:
        chunk = os.read(fd, min(remaining, 1024 * 1024))
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def skip_line(
    stream: BinaryIO, chunk: int = 1024 * 1024, *, cancelled: threading.Event | None = None
) -> bool:
    """Consume the rest of the current line, ``chunk`` bytes at a time; False at end of file.

    A line may be endless (a huge sparse file): with ``cancelled`` set, skipping stops and
    :class:`~awf_mcp.ports.ToolError` is raised, so an abandoned call stops reading.
    """
    data = stream.readline(chunk)
    while data and not data.endswith(b"\n"):
        if cancelled is not None and cancelled.is_set():
            raise ToolError("the call was cancelled")
        data = stream.readline(chunk)
        if not data:
            return True
    return bool(data)


@dataclass(frozen=True, slots=True)
class WriteOutcome:
    """What :func:`atomic_write` did."""

    created: bool
    size: int


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def atomic_write(
    sandbox: Sandbox, real_path: str, data: bytes, shown: str, *, make_parents: bool
) -> WriteOutcome:
    """Replace (or create) resolved ``real_path`` with ``data`` atomically.

    ``make_parents`` creates missing parent directories (inside the root). An
    existing file keeps its permission bits; a new one gets ``0o666`` minus the
    umask. The temporary file never outlives the call.
    """
    parent, name = os.path.split(real_path)
    dir_fd = sandbox.open_dir(parent, create=make_parents)
    try:
        try:
            existing: os.stat_result | None = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            existing = None
        if existing is not None and stat.S_ISDIR(existing.st_mode):
            raise ToolError(f"{quote_path(shown)} is a directory, not a file")
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            raise ToolError(f"{quote_path(shown)} is not a regular file; refusing to replace it")
        temp = f".awf-{secrets.token_hex(6)}.tmp"
        fd = os.open(
            temp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0),
            0o666,
            dir_fd=dir_fd,
        )
        replaced = False
        try:
            try:
                _write_all(fd, data)
                if existing is not None:
                    os.fchmod(fd, stat.S_IMODE(existing.st_mode))
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            replaced = True
        finally:
            if not replaced:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dir_fd)
        with contextlib.suppress(OSError):
            os.fsync(dir_fd)
    except OSError as exc:
        raise ToolError(f"cannot write {quote_path(shown)}: {exc.strerror or exc}") from exc
    finally:
        os.close(dir_fd)
    return WriteOutcome(created=existing is None, size=len(data))
