"""The directory walk shared by Glob and Grep: descriptor-based, confined, cancellable.

Contract
--------
:func:`walk` yields the entries below a resolved directory, depth first, names
sorted, as :class:`Entry` objects whose ``rel`` is relative to the start.

* It runs on directory descriptors (``scandir(fd)``, ``openat`` with
  ``O_NOFOLLOW``): a directory swapped for a symbolic link mid-walk is not
  entered.
* Symbolic links are never descended into. A link is yielded (kind
  ``"symlink"``, ``target`` set) only when it resolves to an existing path
  inside the sandbox roots; links pointing out, dangling links and loops are
  left out silently.
* ``.git`` directories are skipped. With ``gitignore=True`` the ``.gitignore``
  files of the start directory, of its ancestors up to its root, and of every
  directory walked are honoured with git's precedence (a deeper file overrides
  a shallower one, a later line an earlier one, ``!`` re-includes) and an
  ignored directory is not entered. A name that is not valid UTF-8 is matched
  as :func:`~awf_mcp.builtins.listing.printable` shows it.
* Between entries the walk checks the call's ``cancelled`` flag and raises
  :class:`Cancelled` once it is set.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from awf_mcp.builtins.limits import MIB
from awf_mcp.builtins.listing import printable
from awf_mcp.builtins.sandbox import DIR_FLAGS, PathRefused, Sandbox
from awf_mcp.ports import ToolError, current_call

MAX_DEPTH = 200
"""Directories nested deeper than this below the start are not entered."""

_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)


class Cancelled(ToolError):
    """The call was cancelled while walking."""


EntryKind = Literal["file", "dir", "symlink"]


@dataclass(slots=True)
class Entry:
    """One walked entry; ``dir_fd`` (its parent's descriptor) is valid until the walk moves on."""

    rel: str
    real: str
    name: str
    kind: EntryKind
    dir_fd: int
    target: str | None = None

    def open(self) -> int:
        """Open this entry for reading (``O_NOFOLLOW``, non-blocking) relative to its parent."""
        return os.open(self.name, _READ_FLAGS, dir_fd=self.dir_fd)

    def mtime(self) -> float:
        """Modification time (of the link's target for a symbolic link); 0 when unknown."""
        try:
            if self.target is not None:
                return os.stat(self.target).st_mtime
            return os.stat(self.name, dir_fd=self.dir_fd, follow_symlinks=False).st_mtime
        except OSError:
            return 0.0


def gitignore_lines(dir_fd: int) -> list[str] | None:
    """The lines of the ``.gitignore`` in ``dir_fd`` (its first MiB), or ``None`` when there is none."""
    try:
        fd = os.open(".gitignore", _READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        os.set_blocking(fd, True)
        raw = os.read(fd, MIB)
    except OSError:
        return None
    finally:
        os.close(fd)
    return raw.decode("utf-8", "replace").splitlines()


def _read_gitignore(dir_fd: int) -> Any:
    """The ``GitIgnoreSpec`` of the ``.gitignore`` in ``dir_fd``, or ``None``."""
    lines = gitignore_lines(dir_fd)
    if lines is None:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


class _IgnoreRules:
    """The stack of ``.gitignore`` specs in force at the current directory."""

    def __init__(self) -> None:
        self._stack: list[tuple[str, Any]] = []

    def enter(self, dir_fd: int, real_dir: str) -> bool:
        spec = _read_gitignore(dir_fd)
        if spec is None:
            return False
        self._stack.append((real_dir, spec))
        return True

    def leave(self) -> None:
        self._stack.pop()

    def ignored(self, real_path: str, is_dir: bool) -> bool:
        for base, spec in reversed(self._stack):
            rel = printable(os.path.relpath(real_path, base)) + ("/" if is_dir else "")
            verdict = spec.check_file(rel).include
            if verdict is not None:
                return bool(verdict)
        return False


def _load_ancestors(sandbox: Sandbox, start: str, rules: _IgnoreRules) -> None:
    """Push the ``.gitignore`` files of the directories from ``start``'s root down to its parent."""
    root = sandbox.root_of(start)
    if start == root:
        return
    ancestors = [root]
    for part in os.path.relpath(start, root).split("/")[:-1]:
        ancestors.append(os.path.join(ancestors[-1], part))
    for directory in ancestors:
        try:
            fd = sandbox.open_dir(directory)
        except ToolError:
            return
        try:
            rules.enter(fd, directory)
        finally:
            os.close(fd)


def walk(
    sandbox: Sandbox,
    start: str,
    *,
    gitignore: bool = False,
    max_depth: int | None = None,
    cancelled: threading.Event | None = None,
) -> Iterator[Entry]:
    """Entries below resolved directory ``start``; ``max_depth=1`` lists it without descending."""
    rules = _IgnoreRules() if gitignore else None
    if rules is not None:
        _load_ancestors(sandbox, start, rules)
    fd = sandbox.open_dir(start)
    try:
        limit = MAX_DEPTH if max_depth is None else min(max_depth, MAX_DEPTH)
        yield from _walk_dir(sandbox, fd, start, "", 1, limit, rules, cancelled)
    finally:
        os.close(fd)


def _walk_dir(
    sandbox: Sandbox,
    fd: int,
    real: str,
    rel: str,
    depth: int,
    max_depth: int,
    rules: _IgnoreRules | None,
    cancelled: threading.Event | None,
) -> Iterator[Entry]:
    pushed = rules.enter(fd, real) if rules is not None else False
    try:
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError:
            return
        for dirent in entries:
            if cancelled is not None and cancelled.is_set():
                raise Cancelled("the call was cancelled")
            name = dirent.name
            child_real = os.path.join(real, name)
            child_rel = f"{rel}/{name}" if rel else name
            if current_call().path_denied(child_real):  # the path policy: skip, never read or list
                continue
            try:
                if dirent.is_symlink():
                    if rules is not None and rules.ignored(child_real, False):
                        continue
                    try:
                        target = sandbox.resolve(child_real)
                    except PathRefused:
                        continue
                    if os.path.exists(target):
                        yield Entry(child_rel, child_real, name, "symlink", fd, target)
                elif dirent.is_dir(follow_symlinks=False):
                    if name == ".git" or (rules is not None and rules.ignored(child_real, True)):
                        continue
                    yield Entry(child_rel, child_real, name, "dir", fd)
                    if depth < max_depth:
                        try:
                            child_fd = os.open(name, DIR_FLAGS, dir_fd=fd)
                        except OSError:
                            continue
                        try:
                            yield from _walk_dir(
                                sandbox,
                                child_fd,
                                child_real,
                                child_rel,
                                depth + 1,
                                max_depth,
                                rules,
                                cancelled,
                            )
                        finally:
                            os.close(child_fd)
                elif dirent.is_file(follow_symlinks=False) and (
                    rules is None or not rules.ignored(child_real, False)
                ):
                    yield Entry(child_rel, child_real, name, "file", fd)
            except OSError:
                continue
    finally:
        if pushed and rules is not None:
            rules.leave()
