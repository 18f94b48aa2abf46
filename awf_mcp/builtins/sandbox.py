"""Path confinement for the built-in tools: every path they touch stays inside the roots.

Threat model
------------
Tool arguments come from a model, and a model's input may carry a prompt
injection: any ``path``, ``cwd`` or pattern must be treated as hostile. The
sandbox guarantees that the file tools (Read, Write, Edit, Glob, Grep) never
read, list, create or modify anything outside the configured root directories,
whatever the argument: ``..`` chains, absolute paths elsewhere, symbolic links
pointing out (as the final component or as any parent directory), symlink
loops, ``/proc/self/root`` and friends, NUL bytes, over-long paths, Unicode
look-alikes of ``..`` (``\\u2024\\u2024``, ``\\uff0e\\uff0e``) and backslash
separators are all refused with one clear sentence.

Names that are not UTF-8
------------------------
A name from a cloned repository may hold bytes that are not UTF-8. Every tool
shows each such byte as ``\\xNN`` (``caf\\xe9.txt``; :func:`~awf_mcp.ports.visible_text`)
and accepts the name back in the same form: in a path argument, ``\\x80`` to
``\\xff`` stand for those bytes. Any other backslash is still refused.

How
---
:meth:`Sandbox.resolve` resolves an argument with every symbolic link followed
(a path that does not exist yet: its nearest existing parent is resolved and the
rest appended, and ``..`` in that non-existent tail is refused), then requires
the result to lie inside one of the (themselves resolved) roots. Relative paths
are relative to the first root, never to the process's working directory.

A component that exists and is not a directory may not be followed by anything:
``file/``, ``file/.``, ``file/x`` and ``file/..`` are refused (POSIX says
``ENOTDIR``), and a trailing ``/`` on a path that does not exist is refused too, so
``Write newdir/`` cannot create a file. Every resolved path is then handed to the
call's path policy (:attr:`~awf_mcp.ports.CallContext.path_denied`, fed by the
``awf_mcp_authorize_path`` hook): a denial is a refusal.

Every path quoted in a message goes through :func:`quote_path`, which shows bytes
that are not UTF-8 as ``\\xNN`` escapes and control characters escaped.

Files are then opened by walking from the root one component at a time with
``O_NOFOLLOW`` and ``dir_fd`` (:meth:`Sandbox.open_dir`,
:meth:`Sandbox.open_file`), so a component swapped for a symbolic link between
the check and the open makes the open fail instead of escaping. The directory
walks of Glob and Grep run on directory descriptors too, never descend into a
symbolic link, and check every link they report.

A path to read with no ``..`` and no symbolic link in any component can be
resolved and opened at once (:meth:`Sandbox.open_plain`): ``openat2`` with
``RESOLVE_NO_SYMLINKS`` fails if any component, the roots' own included, is a
link when it runs, so the path as written is the resolved path. Any failure
sends the path the way above, which words the refusal.

What it does not cover
----------------------
* **Bash.** Its ``cwd`` is confined here; the command it runs is contained by the
  kernel under the same policy (:mod:`awf_mcp.processes.containment`): the deny list this
  module's path policy applies, and the read-only paths :meth:`Sandbox.check_writable`
  refuses, are the ones Bash and the upstreams get.
* **The roots themselves** are trusted: whoever can replace a root directory by
  a symbolic link has already escaped.
* **Remaining races.** A name checked by :meth:`Sandbox.resolve` and opened
  later through :meth:`Sandbox.open_file` cannot be redirected outside, but it
  may name a different file inside the roots by then (a rename inside the
  root). Hard links to outside files that already exist inside a root are
  read through like any file: the sandbox confines names, not inodes.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any

from awf_mcp.ports import ToolError, current_call, visible_text
from awf_mcp.processes.containment.policy import write_protected

MAX_PATH_CHARS = 4096
"""The longest path argument accepted (Linux ``PATH_MAX``)."""

MAX_NAME_BYTES = 255
"""The longest single path component accepted, in UTF-8 bytes (``NAME_MAX``)."""

_QUOTE_LIMIT = 200
_SYMLINK_LIMIT = 40

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)


class PathRefused(ToolError):
    """A path argument that the sandbox refuses; the message says why and names the roots."""


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}.get(char, f"\\x{ord(char):02x}")


def printable(text: str) -> str:
    """``text`` as a message may quote it: control characters escaped (``\\n``, ``\\t``, ``\\xNN``)
    and what is not UTF-8 shown as :func:`~awf_mcp.ports.visible_text` shows it, so a message
    built from it always encodes and never spans lines.
    """
    return visible_text(_CONTROL.sub(_escape_control, text))


def quote_path(arg: str) -> str:
    """``arg`` in single quotes, escaped by :func:`printable`, shortened when very long."""
    if len(arg) > _QUOTE_LIMIT:
        arg = f"{arg[: _QUOTE_LIMIT // 2]}...{arg[-_QUOTE_LIMIT // 4 :]}"
    return f"'{printable(arg)}'"


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)


def describe_kind(mode: int) -> str:
    """``a socket``, ``a directory``, ... for a non-regular file's ``st_mode``."""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _names_directory(text: str) -> bool:
    """True when ``text`` ends with ``/``, ``/.`` or is ``.``: it can only name a directory."""
    return text.endswith("/") or text.endswith("/.") or text == "."


_ESCAPED_BYTE = re.compile(r"\\x([89a-fA-F][0-9a-fA-F])")


def unescape_bytes(arg: str) -> str:
    """``arg`` with each ``\\xNN`` escape (NN from 80 to ff) back as the byte it shows."""
    if "\\x" not in arg:
        return arg
    return _ESCAPED_BYTE.sub(lambda match: chr(0xDC00 + int(match.group(1), 16)), arg)


def _is_within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root + "/")


class Sandbox:
    """The root directories a tool may touch, and the checks that keep it there.

    ``roots`` are directory paths; each is resolved (symlinks followed) once
    here. The first is the base for relative paths; every one is allowed.
    During a call whose roots follow the client's
    (:attr:`~awf_mcp.ports.CallContext.roots`, see :mod:`awf_mcp.core.roots`), those
    replace them for that call only.
    """

    def __init__(self, roots: Sequence[str]) -> None:
        if not roots:
            raise ValueError("the sandbox needs at least one root directory")
        resolved: list[str] = []
        for root in roots:
            real = os.path.realpath(os.path.abspath(root))
            if not os.path.isdir(real):
                raise ValueError(f"sandbox root {root!r} is not a directory")
            if real not in resolved:
                resolved.append(real)
        self.configured_roots: tuple[str, ...] = tuple(resolved)
        self.read_only: tuple[str, ...] = ()

    @property
    def roots(self) -> tuple[str, ...]:
        """The roots of the running call: the client's when they decide, else the configured ones."""
        return current_call().roots or self.configured_roots

    def allow_reading(self, directory: str) -> None:
        """Let the file tools read (never write) below ``directory``: awf-mcp's own output files."""
        real = os.path.realpath(directory)
        if real not in self.read_only:
            self.read_only = (*self.read_only, real)

    def check_writable(self, real_path: str, shown: str) -> None:
        """Refuse a write below a read-only directory (see :meth:`allow_reading`), or to what the
        sandbox policy keeps read-only in a root (``.git/hooks``, ``.git/config``, ...)."""
        protected = write_protected(real_path, self.roots)
        if protected:
            raise ToolError(f"{quote_path(shown)} is not writable: {protected}")
        if any(_is_within(real_path, directory) for directory in self.read_only) and not any(
            _is_within(real_path, root) for root in self.roots
        ):
            raise ToolError(
                f"{quote_path(shown)} is in awf-mcp's own output directory: Read it, don't write it"
            )

    @property
    def base(self) -> str:
        """The first root: relative paths start here, results are shown relative to it."""
        return self.roots[0]

    def describe_roots(self) -> str:
        """``the root /a`` or ``the roots /a, /b``, for messages."""
        if len(self.roots) == 1:
            return f"the root {printable(self.roots[0])}"
        return "the roots " + ", ".join(printable(root) for root in self.roots)

    def contains(self, real_path: str) -> bool:
        """True when the already-resolved ``real_path`` lies inside one of the roots."""
        return any(_is_within(real_path, root) for root in (*self.roots, *self.read_only))

    def root_of(self, real_path: str) -> str:
        """The (innermost) root containing the resolved ``real_path``."""
        candidates = [root for root in (*self.roots, *self.read_only) if _is_within(real_path, root)]
        if not candidates:
            raise PathRefused(f"path {quote_path(real_path)} is outside {self.describe_roots()}")
        return max(candidates, key=len)

    def display(self, real_path: str) -> str:
        """``real_path`` relative to the first root when inside it, else absolute."""
        if real_path == self.base:
            return "."
        if _is_within(real_path, self.base):
            return real_path[len(self.base.rstrip("/")) + 1 :]
        return real_path

    def outside(self, arg: str, resolved: str | None = None) -> PathRefused:
        """The refusal for ``arg``, optionally saying where it resolved to."""
        where = f" (it resolves to {quote_path(resolved)})" if resolved and resolved != arg else ""
        current_call().refused_outside_roots = True
        return PathRefused(f"path {quote_path(arg)} is outside {self.describe_roots()}{where}")

    def check_argument(self, arg: object, what: str = "path") -> str:
        """Refuse what no path may be: not a string, empty, NUL, too long, look-alikes."""
        if not isinstance(arg, str):
            raise PathRefused(f"{what} must be a string, got {type(arg).__name__}")
        if not arg:
            raise PathRefused(f"{what} must not be empty")
        if "\x00" in arg:
            shown = arg.replace("\x00", "\\0")
            raise PathRefused(f"{what} {quote_path(shown)} contains a NUL byte")
        if len(arg) > MAX_PATH_CHARS:
            raise PathRefused(
                f"{what} {quote_path(arg)} is too long ({len(arg)} characters; the limit is {MAX_PATH_CHARS})"
            )
        arg = unescape_bytes(arg)
        if "\\" in arg:
            raise PathRefused(f"{what} {quote_path(arg)} contains a backslash: use '/' as the separator")
        if arg.isascii() and len(arg) <= MAX_NAME_BYTES:
            return arg  # no component can be too long, and ASCII has no look-alikes (NFKC keeps it)
        for part in arg.split("/"):
            if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
                raise PathRefused(
                    f"{what} {quote_path(arg)} has a component longer than {MAX_NAME_BYTES} bytes"
                )
            if part not in ("", ".", "..") and unicodedata.normalize("NFKC", part) in (".", ".."):
                raise PathRefused(
                    f"{what} {quote_path(arg)} is refused: component {part!r} is a look-alike of "
                    f"{unicodedata.normalize('NFKC', part)!r}"
                )
        return arg

    def resolve(self, arg: object, what: str = "path", *, relative_to: str | None = None) -> str:
        """The absolute, symlink-free path ``arg`` names, refused unless inside a root.

        A relative ``arg`` is taken from ``relative_to`` (an already resolved
        directory), by default the first root.
        """
        text = self.check_argument(arg, what)
        joined = text if os.path.isabs(text) else os.path.join(relative_to or self.base, text)
        real = self._resolve_links(joined, text)
        if not self.contains(real):
            raise self.outside(text, real)
        if _names_directory(text) and not os.path.isdir(real):
            state = "is not a directory" if os.path.lexists(real) else "does not exist"
            raise PathRefused(
                f"{what} {quote_path(text)} ends with '/', which names a directory, but "
                f"{quote_path(self.display(real))} {state}; drop the trailing '/' to name a file"
            )
        self.check_denied(real, text, what)
        return real

    def check_denied(self, real: str, text: str, what: str = "path") -> None:
        """Refuse resolved ``real`` (argument ``text``) when the call's path policy denies it."""
        denial = current_call().path_denied(real)
        if denial:
            raise PathRefused(f"{what} {quote_path(text)} is denied: {denial}")

    def open_plain(self, arg: object) -> tuple[str, int] | None:
        """Open path ``arg`` for reading in one step, when nothing in it needs resolving.

        That is, when it names something inside the roots with no ``..``, no trailing ``/``
        and no symbolic link in any component, the roots' own included: one ``openat2`` with
        ``RESOLVE_NO_SYMLINKS`` both proves it and opens it (flags as :meth:`open_file` gives),
        where :meth:`resolve` takes an ``lstat`` per component and :meth:`open_file` a walk from
        the root. Returns the resolved path, which is the path as written, and the descriptor,
        *without* asking the path policy (see :meth:`check_denied`). ``None`` means "take the
        usual way": any other path, any failure to open, or no ``openat2`` here. A bad argument
        is refused as :meth:`resolve` refuses it.
        """
        text = self.check_argument(arg)
        if _names_directory(text):
            return None
        joined = text if text.startswith("/") else f"{self.base}/{text}"
        parts = [part for part in joined.split("/") if part not in ("", ".")]
        if ".." in parts:
            return None
        real = "/" + "/".join(parts)
        if not self.contains(real):
            return None
        fd = open_without_symlinks(real, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK)
        return None if fd is None else (real, fd)

    def resolve_dir(self, arg: str | None, what: str = "cwd") -> str:
        """Resolved directory argument ``arg`` (default: the first root); refused unless a directory."""
        if arg is None:
            return self.base
        real = self.resolve(arg, what)
        if not os.path.isdir(real):
            state = "is not a directory" if os.path.lexists(real) else "does not exist"
            raise ToolError(f"{what} {quote_path(arg)} {state}")
        return real

    def _resolve_links(self, joined: str, arg: str) -> str:
        # The components still to walk, the next one last (list.pop() is cheap, pop(0) is not).
        parts = [p for p in reversed(joined.split("/")) if p not in ("", ".")]
        current = "/"
        hops = 0
        while parts:
            part = parts.pop()
            if part == "..":
                current = os.path.dirname(current)
                continue
            candidate = f"/{part}" if current == "/" else f"{current}/{part}"
            try:
                info = os.lstat(candidate)
            except (FileNotFoundError, NotADirectoryError):
                if ".." in parts:
                    raise PathRefused(
                        f"path {quote_path(arg)} is refused: '..' after {quote_path(candidate)}, "
                        "which does not exist"
                    ) from None
                return os.path.join(candidate, *reversed(parts))
            except OSError as exc:
                raise PathRefused(f"path {quote_path(arg)} cannot be resolved: {exc.strerror}") from None
            if not stat.S_ISLNK(info.st_mode):
                if parts and not stat.S_ISDIR(info.st_mode):
                    raise PathRefused(
                        f"path {quote_path(arg)} is refused: {quote_path(candidate)} is not a "
                        "directory, so nothing can follow it"
                    )
                current = candidate
                continue
            hops += 1
            if hops > _SYMLINK_LIMIT:
                raise PathRefused(f"path {quote_path(arg)} is refused: too many symbolic links (a loop?)")
            try:
                target = os.readlink(candidate)
            except OSError as exc:  # e.g. /proc/1/root: a link the kernel will not let us read
                raise PathRefused(f"path {quote_path(arg)} cannot be resolved: {exc.strerror}") from None
            if target.startswith("/"):
                current = "/"
            parts.extend(p for p in reversed(target.split("/")) if p not in ("", "."))
        return current

    def _descend(self, real_path: str, *, create: bool) -> int:
        """A descriptor of directory ``real_path``, opened from its root with O_NOFOLLOW."""
        root = self.root_of(real_path)
        fd = os.open(root, DIR_FLAGS)
        rest = real_path[len(root.rstrip("/")) + 1 :] if real_path != root else ""
        try:
            for part in filter(None, rest.split("/")):
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o777, dir_fd=fd)
                child = os.open(part, DIR_FLAGS, dir_fd=fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def open_dir(self, real_path: str, *, create: bool = False) -> int:
        """Open resolved directory ``real_path`` (creating missing parts when ``create``).

        Returns a descriptor the caller closes. Every component below the root
        is opened with ``O_NOFOLLOW``, so a symbolic link that appeared since
        :meth:`resolve` makes this fail (a :class:`ToolError`) instead of escaping.
        """
        try:
            return self._descend(real_path, create=create)
        except FileNotFoundError:
            raise ToolError(f"directory {quote_path(self.display(real_path))} does not exist") from None
        except NotADirectoryError:
            raise ToolError(
                f"{quote_path(self.display(real_path))} is not a directory (or a part of it is not)"
            ) from None
        except OSError as exc:
            raise ToolError(
                f"cannot open directory {quote_path(self.display(real_path))}: {exc.strerror}"
            ) from exc

    def open_file(self, real_path: str, flags: int = os.O_RDONLY, mode: int = 0o666) -> int:
        """Open resolved file ``real_path`` with ``flags`` plus O_NOFOLLOW, walking from its root.

        ``O_NONBLOCK`` is added for reads so a FIFO cannot hang the call.
        Returns a descriptor; OS errors propagate (the caller words them).
        """
        parent, name = os.path.split(real_path)
        dir_fd = self._descend(parent, create=False)
        try:
            extra = os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
            if flags & (os.O_WRONLY | os.O_RDWR) == 0:
                extra |= getattr(os, "O_NONBLOCK", 0)
            return os.open(name, flags | extra, mode, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


_SYS_OPENAT2 = 437
"""``openat2``'s number in Linux's system call table (the same on every architecture since 5.6)."""

_RESOLVE_NO_SYMLINKS = 0x04
_AT_FDCWD = -100
_openat2: Callable[[bytes, int], int] | None = None
_openat2_missing = sys.platform != "linux"


def open_without_symlinks(path: str, flags: int) -> int | None:
    """A descriptor of absolute ``path`` opened with ``flags``, or ``None`` if any of its components
    is a symbolic link, or it cannot be opened, or the system has no ``openat2`` (Linux 5.6+).

    Python has no binding for ``openat2``; it is called through :mod:`ctypes`, loaded on first use.
    """
    global _openat2, _openat2_missing
    if _openat2_missing:
        return None
    call = _openat2
    if call is None:
        call = _openat2 = _load_openat2()
    fd = call(os.fsencode(path), flags)
    if fd >= 0:
        return fd
    import ctypes

    if ctypes.get_errno() in (errno.ENOSYS, errno.EINVAL, errno.E2BIG):  # no openat2 (or not this one)
        _openat2_missing = True
    return None


def _load_openat2() -> Callable[[bytes, int], int]:
    import ctypes

    class OpenHow(ctypes.Structure):
        _fields_ = (("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64))

    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    syscall.argtypes = (
        ctypes.c_long,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.POINTER(OpenHow),
        ctypes.c_size_t,
    )

    hows: dict[int, Any] = {}  # per flags; the kernel only reads it

    def openat2(path: bytes, flags: int) -> int:
        how = hows.get(flags)
        if how is None:
            how = hows[flags] = OpenHow(flags, 0, _RESOLVE_NO_SYMLINKS)
        return int(syscall(_SYS_OPENAT2, _AT_FDCWD, path, how, ctypes.sizeof(OpenHow)))

    return openat2
