"""The all-or-nothing write of the files agents read their configuration from.

Contract
--------
An :class:`Edit` names one file, its format and a :data:`TextEdit`, a pure function from
the old text (``None``: no such file) to the new text, which gives the old text back when
it has nothing to change (the format editors: :mod:`.jsonedit`, :mod:`.tomledit`).
:func:`apply_edits` computes every result first, so that one unparsable file leaves every
file untouched; then it writes each file that changed atomically, keeping its permission
bits, and reports the rest as already up to date. Applying the same edits twice changes
nothing the second time.

Each file that changes gets one backup, of the bytes it held before the call:
``<file>.bak``, or ``<file>.<time>.bak`` when that name is taken (by the user's own
backup, an earlier run's, or anything else: an existing name is never overwritten).
Backups and temporary files are created new (``O_CREAT|O_EXCL|O_NOFOLLOW``), so a link
planted at their name, dangling or not, is never followed.

Links (:func:`writable_target`): a project's file (:attr:`Edit.project` set) that is a
symbolic link, or lies below a directory of the project that is one, or has another
hard link, is refused before anything is read, copied or written. The user's own file
that is a link (a dotfile manager's) is written through to its target, and the link
stays; its backup goes beside the link.

Reading (:func:`read`): only a regular file of at most :data:`MAX_FILE_BYTES`, as UTF-8
text with its line ends made ``\\n``. Every refusal is a :class:`~awf_mcp.errors.UserError`
that names the file and says what to do; a file that cannot be read or parsed at all is
an :class:`UnreadableFile`, whose ``reason`` says what is wrong with it apart from the
path and the advice (so a reader such as ``awf-mcp doctor`` can word its own advice).
This module uses the standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError

TextEdit = Callable[[str | None, Path], str]


# --------------------------------------------------------------------------- applying edits


@dataclass(frozen=True)
class Edit:
    """One change to one file: ``apply`` turns the old text (None: absent) into the new text.

    ``project`` is the project directory when PATH is a project's file (found in, or
    written for, the working directory); None when it is the user's own file.
    """

    path: Path
    fmt: str
    """``json``, ``jsonc`` or ``toml``: what the file holds (the edit knows how to change it)."""
    apply: TextEdit
    project: Path | None = None


@dataclass
class WriteReport:
    """What :func:`apply_edits` did: files changed (with their backups) and files already up to date."""

    changed: list[Path] = field(default_factory=list)
    backups: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)

    def summary(self) -> str:
        """One line per file, for people."""
        lines = [f"updated {p}" for p in self.changed]
        lines += [f"backed up the previous version to {p}" for p in self.backups]
        lines += [f"{p} already up to date: nothing changed" for p in self.unchanged]
        return "\n".join(lines)


@dataclass(frozen=True)
class _Planned:
    path: Path
    target: Path
    original: bytes | None
    old: str | None
    new: str


def apply_edits(edits: Sequence[Edit]) -> WriteReport:
    """Apply EDITS (several may name one file, in order); nothing is written unless all parse.

    Each file is checked (:func:`writable_target`) and read before any is written, so a
    refused link leaves every file untouched too. Each file that changes gets one backup,
    of what it held before this call (:func:`backup`).
    """
    by_path: dict[Path, list[Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    planned: list[_Planned] = []
    for path, group in by_path.items():
        project = next((edit.project for edit in group if edit.project is not None), None)
        target = writable_target(path, project)
        original = read_bytes(target, follow=project is None)
        old = None if original is None else decode(original, path)
        new = old
        for edit in group:
            new = edit.apply(new, path)
        assert new is not None
        planned.append(_Planned(path, target, original, old, new))
    report = WriteReport()
    for plan in planned:
        if plan.old == plan.new:
            report.unchanged.append(plan.path)
            continue
        if plan.original is not None:
            report.backups.append(backup(plan.path, plan.original, like=plan.target))
        atomic_write(plan.target, plan.new)
        report.changed.append(plan.path)
    return report


class UnreadableFile(UserError):
    """PATH cannot be read or parsed; ``reason`` follows the path in a sentence
    (``is not valid JSON (...)``, ``cannot be read (Permission denied)``)."""

    def __init__(self, message: str, *, path: Path, reason: str) -> None:
        super().__init__(message)
        self.path = path
        self.reason = reason


def read(path: Path) -> str | None:
    """PATH's text (None: no such file); :class:`UnreadableFile` when it cannot be read as UTF-8."""
    raw = read_bytes(path)
    return None if raw is None else decode(raw, path)


MAX_FILE_BYTES = 64 * 1024 * 1024
"""The largest configuration file read (``~/.claude.json`` holds a history and grows to megabytes)."""


def _unreadable(path: Path, problem: str) -> UnreadableFile:
    reason = f"cannot be read ({problem})"
    return UnreadableFile(f"cannot read {path}: {problem}", path=path, reason=reason)


def read_bytes(path: Path, *, follow: bool = True) -> bytes | None:
    """PATH's bytes (None: no such file). Without FOLLOW, a link at PATH is refused, not read.

    Only a regular file of at most :data:`MAX_FILE_BYTES` is read: a FIFO, a device or a
    directory planted at PATH is refused at once (it is opened without blocking).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise UserError(_link_refusal(path)) from None
        raise _unreadable(path, exc.strerror or str(exc)) from None
    with os.fdopen(fd, "rb") as handle:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _unreadable(path, "not a regular file")
            data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            raise _unreadable(path, exc.strerror or str(exc)) from None
    if len(data) > MAX_FILE_BYTES:
        raise _unreadable(path, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    return data


def decode(raw: bytes, path: Path) -> str:
    """RAW as text, line ends made ``\\n`` as :meth:`Path.read_text` makes them."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        reason = "is not UTF-8 text"
        message = f"{path} {reason}; not touching it: fix or move it and rerun"
        raise UnreadableFile(message, path=path, reason=reason) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _link_refusal(where: Path) -> str:
    return (
        f"{where} is a symbolic link; awf-mcp writes a project's configuration only as a regular "
        "file inside the project, never through a link: remove the link and rerun"
    )


def writable_target(path: Path, project: Path | None) -> Path:
    """The file that writing PATH replaces, or a :class:`UserError` when PATH may not be written.

    A project's file (PROJECT set) is refused when it, or a directory between PROJECT and
    it, is a symbolic link, or when it has another hard link: a cloned repository must not
    make awf-mcp read, copy or write a file outside it. The user's own file (PROJECT None)
    is written through its links on purpose (a dotfile manager's ``~/.claude.json ->
    dotfiles/claude.json``): the target is replaced, and the link stays.
    """
    if project is None:
        return Path(os.path.realpath(path))
    try:
        parts = path.relative_to(project).parts
        current = project
    except ValueError:
        parts, current = (path.name,), path.parent
    status: os.stat_result | None = None
    for part in parts:
        current = current / part
        try:
            status = os.lstat(current)
        except FileNotFoundError:
            return path
        except OSError as exc:
            raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None
        if stat.S_ISLNK(status.st_mode):
            raise UserError(_link_refusal(current))
    if status is not None and stat.S_ISREG(status.st_mode) and status.st_nlink > 1:
        raise UserError(
            f"{path} has {status.st_nlink - 1} other hard link(s), which may be outside the project; "
            "awf-mcp does not write a project's configuration file that is shared with another: "
            "copy it to a file of its own and rerun"
        )
    return path


def _create_new(path: Path, mode: int) -> int:
    """A descriptor of PATH created just now: never a file or link that was there before."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, mode)
    os.fchmod(fd, mode)
    return fd


def backup_names(path: Path) -> Iterator[Path]:
    """Where the backup of PATH goes: ``PATH.bak``, else ``PATH.<time>.bak``, ``PATH.<time>-N.bak``."""
    yield path.with_name(path.name + ".bak")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    yield path.with_name(f"{path.name}.{stamp}.bak")
    for counter in range(1, 1000):
        yield path.with_name(f"{path.name}.{stamp}-{counter}.bak")


def backup(path: Path, content: bytes, *, like: Path) -> Path:
    """Save CONTENT, what PATH held, as a new file beside PATH; return its name.

    The first free name of :func:`backup_names` is created (``O_EXCL|O_NOFOLLOW``): an
    existing backup is never overwritten, and a link planted at a backup's name, even a
    dangling one, is never followed. The copy gets LIKE's permission bits and times.
    """
    status = os.stat(like)
    mode = stat.S_IMODE(status.st_mode)
    for name in backup_names(path):
        try:
            fd = _create_new(name, mode)
        except FileExistsError:
            continue
        except OSError as exc:
            raise UserError(f"cannot back up {path} to {name}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(content)
                os.utime(handle.fileno(), ns=(status.st_atime_ns, status.st_mtime_ns))
        except OSError as exc:
            name.unlink(missing_ok=True)
            raise UserError(f"cannot back up {path} to {name}: {exc.strerror or exc}") from None
        return name
    raise UserError(f"cannot back up {path}: too many backups beside it; remove old ones and rerun")


def atomic_write(path: Path, text: str) -> None:
    """Replace PATH by TEXT at once, keeping its permission bits; PATH itself is replaced (a link
    at PATH is replaced, not followed: pass :func:`writable_target`'s answer)."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        raise UserError(f"cannot write {path}: the new text is not valid Unicode") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode: int | None = stat.S_IMODE(os.lstat(path).st_mode)
        except FileNotFoundError:
            mode = None
        # mkstemp creates its file with O_EXCL|O_NOFOLLOW under a random name.
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise UserError(f"cannot write {path}: {exc.strerror or exc}") from None


# --------------------------------------------------------------------------- data


def lookup(data: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The value at KEYS in nested mappings, or None."""
    node: Any = data
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node
