"""Careful edits of the JSON and TOML files that agents read their configuration from.

Contract
--------
An :class:`Edit` names one file, its format and a pure function from the old text
(``None``: no such file) to the new text. :func:`apply_edits` computes every result
first, so that one unparsable file leaves every file untouched; then it writes each
file that changed atomically, keeping its permission bits, and reports the rest as
already up to date. Applying the same edits twice changes nothing the second time.

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

JSON files keep their key order and are written with a 2-space indent (see
:func:`json_edit`, :func:`set_entry`, :func:`add_to_list`, :func:`remove_from_list`).
A file whose client allows comments (format ``jsonc``: VS Code, Zed, opencode) is read
with its ``//`` and ``/* */`` comments and trailing commas; it is written back as plain
JSON, so those comments survive only in the ``.bak`` copy. TOML files are edited as
text (:func:`toml_replace_table`, :func:`toml_set_keys`): only the lines of one table
(and its sub-tables) or of single keys are replaced, removed or appended, so comments
and every other table stay byte for byte, and the result is parsed again and compared
with what was meant before it is accepted.

Every refusal is a :class:`~awf_mcp.errors.UserError` that names the file and says
what to do; a file that cannot be read or parsed at all is an :class:`UnreadableFile`,
whose ``reason`` says what is wrong with it apart from the path and the advice (so a
reader such as ``awf-mcp doctor`` can word its own advice). This module uses the
standard library only.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError

JsonObject = dict[str, Any]
TextEdit = Callable[[str | None, Path], str]


# --------------------------------------------------------------------------- applying edits


@dataclass(frozen=True)
class Edit:
    """One change to one file: ``apply`` turns the old text (None: absent) into the new text.

    ``project`` is the project directory when PATH is a project's file (found in, or
    written for, the working directory); None when it is the user's own file.
    """

    path: Path
    fmt: str  # "json", "jsonc" or "toml"
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
    fmt: str


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
        planned.append(_Planned(path, target, original, old, new, group[0].fmt))
    report = WriteReport()
    for plan in planned:
        if plan.old is not None and _same(plan.old, plan.new, plan.fmt):
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


def _same(old: str, new: str, fmt: str) -> bool:
    if old == new:
        return True
    if fmt in ("json", "jsonc"):
        return bool(old.strip()) and bool(loads_json(old, comments=fmt == "jsonc") == json.loads(new))
    return False


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


# --------------------------------------------------------------------------- JSON


_SURROGATE = re.compile("[\ud800-\udfff]")


def dump_json(data: Any) -> str:
    """DATA as JSON the way every edited file is written: 2-space indent, UTF-8 kept.

    A lone surrogate (read from a ``\\udXXX`` escape) is written back as that escape.
    """
    text = json.dumps(data, indent=2, ensure_ascii=False)
    return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def nest(keys: Sequence[str], value: Any) -> Any:
    """``{"a": {"b": value}}`` for keys ``("a", "b")``."""
    for key in reversed(keys):
        value = {key: value}
    return value


JsonUpdate = Callable[[JsonObject, Path], None]


def json_edit(*updates: JsonUpdate, comments: bool = False) -> TextEdit:
    """An edit that parses the JSON object (absent or blank: empty), applies UPDATES in order, dumps it.

    COMMENTS: the file may hold JSONC comments and trailing commas (they are not written back).
    """

    def apply(old: str | None, path: Path) -> str:
        data: JsonObject = {}
        if old is not None and old.strip():
            data = parse_json(old, path, comments=comments)
        for update in updates:
            update(data, path)
        return dump_json(data) + "\n"

    return apply


_JSONC_COMMENT = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_JSONC_TRAILING_COMMA = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=\s*[}\]])')


def strip_jsonc(text: str) -> str:
    """TEXT without ``//`` and ``/* */`` comments and trailing commas (strings are left alone)."""

    def no_comment(match: re.Match[str]) -> str:
        token = match.group(0)
        # A comment becomes as many line breaks as it had, so error positions stay right.
        return token if token.startswith('"') else "\n" * token.count("\n")

    def no_comma(match: re.Match[str]) -> str:
        token = match.group(0)
        return token if token.startswith('"') else ""

    return _JSONC_TRAILING_COMMA.sub(no_comma, _JSONC_COMMENT.sub(no_comment, text))


def loads_json(text: str, *, comments: bool = False) -> Any:
    """``json.loads``, after :func:`strip_jsonc` when COMMENTS."""
    return json.loads(strip_jsonc(text) if comments else text)


def parse_json(text: str, path: Path, *, comments: bool = False) -> JsonObject:
    """TEXT of PATH as a JSON object (COMMENTS: see :func:`loads_json`); else :class:`UnreadableFile`."""
    try:
        data = loads_json(text, comments=comments)
    except json.JSONDecodeError as exc:
        reason = f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        advice = "not touching it: fix it, or add the entry by hand from the snippet above"
        raise UnreadableFile(f"{path} {reason}; {advice}", path=path, reason=reason) from None
    if not isinstance(data, dict):
        reason = "does not hold a JSON object"
        message = f"{path} {reason}; not touching it: fix or move it and rerun"
        raise UnreadableFile(message, path=path, reason=reason)
    return data


def _container(data: JsonObject, keys: Sequence[str], path: Path) -> JsonObject:
    node = data
    for i, key in enumerate(keys):
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            dotted = ".".join(keys[: i + 1])
            raise UserError(
                f"{path}: '{dotted}' is not a JSON object; not touching the file: fix it and rerun"
            )
        node = child
    return node


def set_entry(keys: Sequence[str], value: JsonObject, *, owned: Sequence[str] = ()) -> JsonUpdate:
    """Set the object at KEYS to VALUE, keeping keys the user added to an existing one.

    Keys of VALUE replace the old ones in place (so key order survives); keys in OWNED
    that VALUE leaves out are removed (the command owns them, e.g. a trust flag).
    """

    def update(data: JsonObject, path: Path) -> None:
        parent = _container(data, keys[:-1], path)
        current = parent.get(keys[-1])
        if isinstance(current, dict):
            merged = dict(current)
            merged.update(value)
            for key in owned:
                if key not in value:
                    merged.pop(key, None)
            parent[keys[-1]] = merged
        else:
            parent[keys[-1]] = value

    return update


def add_to_list(keys: Sequence[str], items: Sequence[str]) -> JsonUpdate:
    """Append each of ITEMS not yet in the list at KEYS (created when missing)."""

    def update(data: JsonObject, path: Path) -> None:
        parent = _container(data, keys[:-1], path)
        current = parent.get(keys[-1])
        if current is None:
            current = parent[keys[-1]] = []
        if not isinstance(current, list):
            dotted = ".".join(keys)
            raise UserError(f"{path}: '{dotted}' is not a JSON list; not touching the file: fix it and rerun")
        for item in items:
            if item not in current:
                current.append(item)

    return update


def remove_from_list(keys: Sequence[str], items: Sequence[str]) -> JsonUpdate:
    """Remove each of ITEMS from the list at KEYS; a list left empty is removed, and so are the
    objects on the way that this leaves empty."""

    def update(data: JsonObject, path: Path) -> None:
        trail: list[JsonObject] = [data]
        for key in keys[:-1]:
            child = trail[-1].get(key)
            if not isinstance(child, dict):
                return
            trail.append(child)
        current = trail[-1].get(keys[-1])
        if not isinstance(current, list):
            return
        current[:] = [item for item in current if item not in items]
        if current:
            return
        del trail[-1][keys[-1]]
        for depth in range(len(keys) - 2, -1, -1):
            if trail[depth + 1]:
                break
            del trail[depth][keys[depth]]

    return update


def lookup(data: Mapping[str, Any], keys: Sequence[str]) -> Any:
    """The value at KEYS in nested mappings, or None."""
    node: Any = data
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


# --------------------------------------------------------------------------- TOML

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_str(value: str) -> str:
    """VALUE as a TOML basic string; a :class:`ValueError` for a lone surrogate, which TOML cannot hold."""
    if _SURROGATE.search(value):
        raise ValueError("it holds a lone surrogate (\\udXXX), which is not text TOML can hold")
    # JSON string escapes (\" \\ \n \t \uXXXX) are valid TOML basic-string escapes; TOML
    # also wants DEL escaped.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_key(key: str) -> str:
    """KEY bare when it may be, quoted otherwise."""
    return key if _BARE_KEY.match(key) else toml_str(key)


def toml_value(value: Any) -> str:
    """VALUE as a TOML value (a mapping as an inline table); a :class:`TypeError` for a value
    TOML has no form for (``None``), a :class:`ValueError` for text it cannot hold."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return toml_str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{toml_key(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"TOML has no form for {'null' if value is None else type(value).__name__}")


def toml_table(keys: Sequence[str], table: Mapping[str, Any]) -> str:
    """TABLE as a ``[KEYS]`` table; nested mappings become sub-tables, each after a blank line.

    A sub-table with no values of its own gets no header (TOML implies it).
    """
    blocks: list[str] = []

    def emit(path: Sequence[str], node: Mapping[str, Any]) -> None:
        values = [(k, v) for k, v in node.items() if not isinstance(v, Mapping)]
        if values or not blocks:
            header = "[" + ".".join(toml_key(k) for k in path) + "]"
            blocks.append("\n".join([header, *(f"{toml_key(k)} = {toml_value(v)}" for k, v in values)]))
        for key, child in node.items():
            if isinstance(child, Mapping):
                emit([*path, key], child)

    emit(keys, table)
    return "\n\n".join(blocks) + "\n"


_HEADER = re.compile(r"^\s*(\[\[?)(.*?)(\]\]?)\s*(#.*)?$")
_KEY_PART = re.compile(r'\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\]|\\.)*)"|\'([^\']*)\')\s*')


def _header_path(line: str) -> tuple[str, ...] | None:
    """The dotted key path of a ``[table]`` / ``[[array]]`` header line, or None."""
    match = _HEADER.match(line)
    if not match or (match.group(1) == "[[") != (match.group(3) == "]]"):
        return None
    inner = match.group(2)
    parts: list[str] = []
    pos = 0
    while True:
        part = _KEY_PART.match(inner, pos)
        if not part or part.end() == pos:
            return None
        bare, basic, literal = part.groups()
        if basic is not None:
            try:
                parts.append(json.loads(f'"{basic}"'))
            except json.JSONDecodeError:
                return None
        else:
            parts.append(bare if bare is not None else literal)
        pos = part.end()
        if pos == len(inner):
            return tuple(parts)
        if inner[pos] != ".":
            return None
        pos += 1


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """TEXT of PATH as TOML data; else :class:`UnreadableFile`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = f"is not valid TOML ({exc})"
        advice = "not touching it: fix it, or add the table by hand from the snippet above"
        raise UnreadableFile(f"{path} {reason}; {advice}", path=path, reason=reason) from None


def _with(data: Mapping[str, Any], keys: Sequence[str], value: Any) -> dict[str, Any]:
    """A copy of DATA with the value at KEYS replaced (copying each mapping on the way)."""
    copy = dict(data)
    child = copy.get(keys[0])
    copy[keys[0]] = _with(child if isinstance(child, Mapping) else {}, keys[1:], value) if keys[1:] else value
    return copy


def toml_replace_table(keys: Sequence[str], table: str) -> TextEdit:
    """An edit that replaces the ``[KEYS]`` table (and its sub-tables) by TABLE text, or appends it.

    Only those lines change; comments and every other table stay byte for byte. A file
    that defines KEYS some other way (inline or dotted keys), or whose table is split in
    a way this editor does not follow, is refused untouched.
    """
    owned_prefix = tuple(keys)
    dotted = ".".join(keys)

    def apply(old: str | None, where: Path) -> str:
        text = old or ""
        before = parse_toml(text, where)
        lines = text.splitlines(keepends=True)
        # Mark every line that belongs to an owned table (header up to the next header).
        headers = dict(_headers(lines))
        owned = [False] * len(lines)
        in_owned = False
        first_owned: int | None = None
        for i in range(len(lines)):
            header = headers.get(i)
            if header is not None:
                in_owned = header[: len(owned_prefix)] == owned_prefix
                if in_owned and first_owned is None:
                    first_owned = i
            owned[i] = in_owned
        if first_owned is None and lookup(before, keys) is not None:
            raise UserError(
                f"{where} defines {dotted} without a [{dotted}] table "
                "(inline or dotted keys); not touching it: rewrite it as a table or remove it, and rerun"
            )
        new = _append(text, table) if first_owned is None else _replace(lines, owned, table)
        after = parse_toml(new, where)
        if after != _with(before, keys, lookup(tomllib.loads(table), keys)):
            raise UserError(
                f"cannot edit {where} safely (its [{dotted}] table is split or nested "
                "in a way this editor does not handle); not touching it: add the table by hand"
            )
        return new

    return apply


def toml_set_keys(table: Sequence[str], values: Mapping[str, Any]) -> TextEdit:
    """An edit that sets keys of the ``[TABLE]`` table (a value of None removes the key).

    Each key is one ``key = value`` line: an existing line is replaced or removed in place,
    a new one goes after the table's last key, and a missing table is appended. Every
    other line stays byte for byte. A table defined some other way (inline or dotted
    keys), or a value this editor cannot replace as one line, is refused untouched.
    """
    table_keys = tuple(table)
    dotted = ".".join(table_keys)

    def apply(old: str | None, where: Path) -> str:
        text = old or ""
        before = parse_toml(text, where)
        lines = text.splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
        start, end = _table_span(lines, table_keys)
        current = lookup(before, table_keys)
        if start is None and current is not None:
            raise UserError(
                f"{where} defines {dotted} without a [{dotted}] table "
                "(inline or dotted keys); not touching it: rewrite it as a table, and rerun"
            )
        wanted = dict(current) if isinstance(current, Mapping) else {}
        for key, value in values.items():
            if value is None:
                wanted.pop(key, None)
            else:
                wanted[key] = value
        if start is None:
            added = [f"{toml_key(k)} = {toml_value(v)}\n" for k, v in values.items() if v is not None]
            if not added:
                return text
            header = "[" + ".".join(toml_key(k) for k in table_keys) + "]\n"
            new = _append(text, header + "".join(added))
        else:
            new = "".join(_set_in_body(lines, start, end, values))
        try:
            after: Any = tomllib.loads(new)
        except tomllib.TOMLDecodeError:
            after = None
        if after != _with(before, table_keys, wanted):
            raise UserError(
                f"cannot edit [{dotted}] in {where} safely (a value spans several lines or the "
                "table is split); not touching it: set the keys by hand"
            )
        return new

    return apply


def _headers(lines: Sequence[str]) -> Iterator[tuple[int, tuple[str, ...]]]:
    """Each table header line outside a multi-line string: its index and its key path."""
    multiline: str | None = None
    for i, line in enumerate(lines):
        if multiline is None:
            header = _header_path(line)
            if header is not None:
                yield i, header
        multiline = _track_multiline(line, multiline)


def _table_span(lines: list[str], keys: tuple[str, ...]) -> tuple[int | None, int]:
    """The index of the ``[KEYS]`` header line and the end of its body (next header or EOF)."""
    start: int | None = None
    for i, header in _headers(lines):
        if start is not None:
            return start, i
        if header == keys and _HEADER.match(lines[i]) and not lines[i].lstrip().startswith("[["):
            start = i
    return start, len(lines)


def _key_of_line(line: str) -> str | None:
    """The key of a ``key = value`` line (bare or quoted), or None."""
    match = _KEY_PART.match(line)
    if not match or match.end() >= len(line) or line[match.end()] != "=":
        return None
    bare, basic, literal = match.groups()
    if basic is not None:
        try:
            return str(json.loads(f'"{basic}"'))
        except json.JSONDecodeError:
            return None
    return bare if bare is not None else literal


def _set_in_body(lines: list[str], start: int, end: int, values: Mapping[str, Any]) -> list[str]:
    body = lines[start + 1 : end]
    pending = dict(values)
    kept: list[str] = []
    for line in body:
        key = _key_of_line(line)
        if key is not None and key in pending:
            value = pending.pop(key)
            if value is not None:
                kept.append(f"{toml_key(key)} = {toml_value(value)}\n")
            continue
        kept.append(line)
    added = [f"{toml_key(k)} = {toml_value(v)}\n" for k, v in pending.items() if v is not None]
    # New keys go after the table's last key, before the blank lines and comments that trail it.
    last = max((i for i, line in enumerate(kept) if _key_of_line(line) is not None), default=-1)
    kept[last + 1 : last + 1] = added
    return [*lines[: start + 1], *kept, *lines[end:]]


def _append(text: str, table: str) -> str:
    prefix = text
    if prefix and not prefix.endswith("\n"):
        prefix += "\n"
    if prefix.strip():
        prefix = prefix.rstrip("\n") + "\n\n"
    return prefix + table


def _replace(lines: list[str], owned: list[bool], table: str) -> str:
    kept: list[str] = []
    inserted = False
    i = 0
    while i < len(lines):
        if not owned[i]:
            kept.append(lines[i])
            i += 1
            continue
        j = i
        while j < len(lines) and owned[j]:
            j += 1
        block = lines[i:j]
        # Keep the blank lines and comments that trail the block (they lead the next table).
        tail: list[str] = []
        while block and (not block[-1].strip() or block[-1].lstrip().startswith("#")):
            tail.insert(0, block.pop())
        if j == len(lines):
            tail = [t for t in tail if t.strip()]
        if not inserted:
            kept.append(table)
            inserted = True
            if j < len(lines) and not tail:
                tail = ["\n"]
        kept.extend(tail)
        i = j
    return "".join(kept)


def _track_multiline(line: str, state: str | None) -> str | None:
    """Whether a multi-line string (``\"\"\"`` or ``'''``) is still open after LINE."""
    pos = 0
    while True:
        if state is not None:
            end = line.find(state, pos)
            if end < 0:
                return state
            pos = end + 3
            state = None
        starts = [(line.find(q, pos), q) for q in ('"""', "'''")]
        starts = [(i, q) for i, q in starts if i >= 0]
        if not starts:
            return None
        hash_at = line.find("#", pos)
        i, quote = min(starts)
        if 0 <= hash_at < i:
            return None
        state = quote
        pos = i + 3
