"""TOML edits of Codex's ``config.toml`` and of ``awf-mcp.toml``, through ``tomlkit``: what the user
wrote stays.

Contract
--------
Each edit here is a :data:`~awf_mcp.clients.editors.TextEdit`: it parses the file with
``tomlkit``, changes only the tables and keys it names, and renders the document again, so
comments, key order, quoting and blank lines elsewhere stay byte for byte. The result is
read back with ``tomllib`` and compared with the data wanted (the old data with just that
change): an edit that would come out different is refused with a :class:`UserError` and
nothing is written. When the data already is what is wanted, the old text comes back
unchanged (:func:`~awf_mcp.clients.editors.apply_edits` then says the file is up to date).

* :func:`toml_set_table`: the ``[KEYS]`` table and its sub-tables become a given mapping.
  An existing table is changed key by key where it stands (the comments in it on lines that
  stay, stay); a new one is appended at the end of the file, which is otherwise kept byte
  for byte.
* :func:`toml_set_keys`: single keys of one table set or removed; a new key goes after the
  table's last key, before the comments and blank lines that lead the next table.
* :func:`toml_remove_tables`: the ``[KEYS.NAME]`` tables removed; a table of tables left
  empty goes too. The comments that trailed a removed table (they lead the next one) stay.
* :func:`toml_add_tables`: new ``[KEYS.NAME]`` tables appended at the end of the file.

:func:`toml_table` renders a table as the snippet printed for a user, and :func:`parse_toml`
reads a file's text (``tomllib``), raising :class:`~awf_mcp.clients.editors.UnreadableFile`.
Text TOML cannot hold (a lone surrogate) or a value it has no form for (``None``) is a
:class:`ValueError` or :class:`TypeError` from :func:`toml_table`, and a refusal from an edit.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import tomlkit
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.exceptions import TOMLKitError
from tomlkit.items import AoT, Comment, InlineTable, Item, Null, Table, Whitespace

from awf_mcp.clients.editors import TextEdit, UnreadableFile, lookup
from awf_mcp.errors import UserError

_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_toml(text: str, path: Path) -> dict[str, Any]:
    """TEXT of PATH as TOML data; else :class:`UnreadableFile`."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        reason = f"is not valid TOML ({exc})"
        advice = "not touching it: fix it, or add the table by hand from the snippet above"
        raise UnreadableFile(f"{path} {reason}; {advice}", path=path, reason=reason) from None


def _check_text(value: Any) -> None:
    """A :class:`ValueError` when VALUE holds a lone surrogate, which is no text TOML can hold."""
    if isinstance(value, str) and _SURROGATE.search(value):
        raise ValueError("it holds a lone surrogate (\\udXXX), which is not text TOML can hold")
    if isinstance(value, Mapping):
        for key, item in value.items():
            _check_text(key)
            _check_text(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_text(item)


def _table(value: Mapping[str, Any], *, headed: bool = True) -> Table:
    """VALUE as a ``tomlkit`` table: nested mappings are sub-tables, and a sub-table with no values
    of its own gets no header (unless HEADED). A :class:`ValueError` or :class:`TypeError` when
    TOML cannot hold it."""
    _check_text(value)
    table = tomlkit.table(
        is_super_table=not headed and bool(value) and all(isinstance(v, Mapping) for v in value.values())
    )
    for key, item in value.items():
        table.add(key, _table(item, headed=False) if isinstance(item, Mapping) else tomlkit.item(item))
    return table


def _nested(keys: Sequence[str], value: Mapping[str, Any]) -> Table:
    """VALUE as the table at KEYS below the first key (super tables on the way)."""
    table = _table(value)
    for key in reversed(keys[1:]):
        parent = tomlkit.table(is_super_table=True)
        parent.add(key, table)
        table = parent
    return table


def toml_table(keys: Sequence[str], table: Mapping[str, Any]) -> str:
    """TABLE as a ``[KEYS]`` table; nested mappings become sub-tables, each after a blank line.

    A sub-table with no values of its own gets no header (TOML implies it).
    """
    document = tomlkit.document()
    document.add(keys[0], _nested(keys, table))
    return document.as_string()


def _with(data: Mapping[str, Any], keys: Sequence[str], value: Any) -> dict[str, Any]:
    """A copy of DATA with the value at KEYS replaced (None: removed), copying each mapping on the way."""
    copy = dict(data)
    if not keys[1:]:
        if value is None:
            copy.pop(keys[0], None)
        else:
            copy[keys[0]] = value
        return copy
    child = copy.get(keys[0])
    copy[keys[0]] = _with(child if isinstance(child, Mapping) else {}, keys[1:], value)
    return copy


def _edit(where: Path, what: str, old: str | None, change: Any, wanted: Any) -> str:
    """OLD changed by CHANGE (a function of the parsed document), checked to read back as WANTED.

    WANTED is a function of the old data; when the old data already is what it wants, OLD
    comes back as it is.
    """
    text = old or ""
    before = parse_toml(text, where)
    expected = wanted(before)
    if old is not None and expected == before:
        return old
    refusal = f"cannot edit {what} in {where} safely; not touching it: make the change by hand"
    try:
        document = tomlkit.parse(text)
        change(document)
        new = document.as_string()
        after = tomllib.loads(new)
    except (TOMLKitError, tomllib.TOMLDecodeError, LookupError, TypeError, ValueError) as exc:
        raise UserError(f"{refusal} ({exc})") from None
    if after != expected:
        raise UserError(refusal)
    return new


# --------------------------------------------------------------------------- trailing comments


def _body(item: Any) -> Container | None:
    """The container of a table (or of the document), or None for any other item."""
    if isinstance(item, Container):
        return item
    if isinstance(item, Table):
        return item.value
    return None


def _take_trailing(item: Any) -> list[tuple[None, Item]]:
    """Take the comments and blank lines that end ITEM's text (the lead of what follows it).

    They sit at the end of the body of ITEM's last table; only keyless entries are taken,
    so the indices of the keys stay right.
    """
    body = _body(item)
    if body is None:
        return []
    entries = body.body
    end = len(entries)
    while (
        end and entries[end - 1][0] is None and isinstance(entries[end - 1][1], Whitespace | Comment | Null)
    ):
        end -= 1
    if end == len(entries):
        last = entries[-1][1] if entries else None
        return _take_trailing(last) if isinstance(last, Table) else []
    taken = [(None, entry) for _, entry in entries[end:] if not isinstance(entry, Null)]
    del entries[end:]
    return taken


def _give_trailing(item: Any, trailing: list[tuple[None, Item]]) -> None:
    """Put TRAILING at the end of ITEM's text (the body of its last table)."""
    body = _body(item)
    if body is None or not trailing:
        return
    last = body.body[-1][1] if body.body else None
    if isinstance(last, Table):
        _give_trailing(last, trailing)
        return
    body.body.extend(trailing)


def _append(document: Container, keys: Sequence[str], value: Mapping[str, Any]) -> None:
    """Append the ``[KEYS]`` table VALUE at the end of DOCUMENT, after a blank line."""
    table = _nested(keys, value)
    headed: Any = table
    while headed.is_super_table() and len(headed) == 1:
        headed = next(iter(headed.value.body))[1]
    before = document.as_string()
    document.append(keys[0], table)
    added = document.as_string()[len(before) :]
    line_ends = len(before) - len(before.rstrip("\n")) + len(added) - len(added.lstrip("\n"))
    if before.strip() and line_ends < 2:
        headed.trivia.indent = "\n"


# --------------------------------------------------------------------------- edits


def _sync(table: Table, wanted: Mapping[str, Any]) -> None:
    """Make TABLE hold WANTED, key by key: keys that stay are left as written."""
    _check_text(wanted)
    for key in [key for key in table if key not in wanted]:
        trailing = _take_trailing(table[key])
        del table[key]
        _give_trailing(table, trailing)
    for key, value in wanted.items():
        if key not in table:
            _insert(table, key, value)
            continue
        current = table.get(key)
        if isinstance(value, Mapping) and isinstance(current, Table):
            _sync(current, value)
        elif _plain(current) != value:
            table[key] = _table(value) if isinstance(value, Mapping) else value


def _plain(item: Any) -> Any:
    return item.unwrap() if isinstance(item, Item | Container) else item


def _insert(table: Table, key: str, value: Any) -> None:
    """Add KEY to TABLE: a value after its last value, a sub-table after its last sub-table."""
    if isinstance(value, Mapping):
        trailing = _take_trailing(table)
        table.append(key, _table(value))
        _give_trailing(table, trailing)
        return
    entries = table.value.body
    last_value = max(
        (
            i
            for i, (name, item) in enumerate(entries)
            if name is not None and not isinstance(item, Table | AoT)
        ),
        default=-1,
    )
    if last_value + 1 < len(entries):
        table.value._insert_at(last_value + 1, key, value)  # tomlkit's one way to insert at a place
    else:
        table.append(key, value)


def _table_at(document: Container, keys: Sequence[str]) -> Any:
    """The item at KEYS in DOCUMENT, or None."""
    node: Any = document
    for key in keys:
        if not isinstance(node, Container | Table | InlineTable | OutOfOrderTableProxy) or key not in node:
            return None
        node = node[key]
    return node


def toml_set_table(keys: Sequence[str], value: Mapping[str, Any]) -> TextEdit:
    """An edit that makes the ``[KEYS]`` table (with its sub-tables) hold VALUE.

    An existing table is changed where it stands, key by key; a new one is appended at the
    end of the file; one written inline or as dotted keys is rewritten by ``tomlkit``.
    """
    dotted = ".".join(keys)

    def change(document: Container) -> None:
        current = _table_at(document, keys)
        if isinstance(current, Table):
            _sync(current, value)
            return
        parent = _table_at(document, keys[:-1])
        if current is not None and isinstance(parent, Table | InlineTable | Container):
            parent[keys[-1]] = dict(value)  # written inline or as dotted keys: tomlkit rewrites it
        else:
            _append(document, keys, value)

    def apply(old: str | None, where: Path) -> str:
        return _edit(where, f"[{dotted}]", old, change, lambda data: _with(data, keys, dict(value)))

    return apply


def toml_set_keys(table: Sequence[str], values: Mapping[str, Any]) -> TextEdit:
    """An edit that sets keys of the ``[TABLE]`` table (a value of None removes the key).

    A key that is there is replaced or removed where it stands, a new one goes after the
    table's last key, and a missing table is appended.
    """
    dotted = ".".join(table)

    def wanted(data: Mapping[str, Any]) -> dict[str, Any]:
        current = lookup(data, table)
        merged = dict(current) if isinstance(current, Mapping) else {}
        for key, value in values.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return _with(data, table, merged) if merged or current is not None else dict(data)

    def change(document: Container) -> None:
        current = _table_at(document, table)
        if current is None:
            added = {key: value for key, value in values.items() if value is not None}
            if added:
                _append(document, table, added)
            return
        if not isinstance(current, Table):
            raise ValueError(f"[{dotted}] is not written as a table")
        for key, value in values.items():
            if value is None:
                if key in current:
                    del current[key]
            elif key in current:
                _check_text(value)
                current[key] = value
            else:
                _check_text(value)
                _insert(current, key, value)

    def apply(old: str | None, where: Path) -> str:
        return _edit(where, f"[{dotted}]", old, change, wanted)

    return apply


def toml_remove_tables(keys: Sequence[str], names: Sequence[str]) -> TextEdit:
    """An edit that removes the ``[KEYS.NAME]`` tables for NAMES; ``[KEYS]`` goes when left empty."""
    dotted = ".".join(keys)

    def wanted(data: Mapping[str, Any]) -> dict[str, Any]:
        current = lookup(data, keys)
        if not isinstance(current, Mapping):
            return dict(data)
        rest = {name: value for name, value in current.items() if name not in names}
        return _with(data, keys, rest or None)

    def change(document: Container) -> None:
        parent = _table_at(document, keys)
        if parent is None:
            return
        for name in names:
            if name in parent:
                _remove(document, parent, name)
        if not _table_at(document, keys):
            _remove_emptied(_body(_table_at(document, keys[:-1])), keys[-1])

    def apply(old: str | None, where: Path) -> str:
        return _edit(where, f"[{dotted}]", old, change, wanted)

    return apply


def _remove_emptied(container: Container | None, name: str) -> None:
    """Remove CONTAINER's table NAME, which holds no keys any more, in every part it is split
    into; the comments left in each part stay in its place."""
    if container is None:
        return
    parts = [
        (index, "".join(entry.as_string() for key, entry in item.value.body if key is None))
        for index, (key, item) in enumerate(container.body)
        if key is not None and key.key == name and isinstance(item, Table)
    ]
    container.remove(name)
    for index, text in parts:
        if text:
            container.body[index] = (None, tomlkit.ws(text))


def _remove(document: Container, parent: Any, name: str) -> None:
    """Remove PARENT's table NAME; the comments that trailed it (they lead the next table) take
    its place in the text."""
    table = parent[name]
    slot = next(
        (
            (body, index)
            for body in _bodies(document)
            for index, (_, item) in enumerate(body.body)
            if item is table
        ),
        None,
    )
    kept = _take_trailing(table)
    if slot is None:
        del parent[name]
        return
    body, index = slot
    # Removed from the container that holds it, also when PARENT is split around other tables.
    body.remove(name)
    if kept:
        # tomlkit leaves a removed entry's slot keyless and empty: the indices of the keys stay right.
        body.body[index] = (None, tomlkit.ws("".join(item.as_string() for _, item in kept)))


def _bodies(item: Any) -> list[Container]:
    """Every container below ITEM, ITEM's own first."""
    body = _body(item)
    if body is None:
        return []
    found = [body]
    for _, child in body.body:
        found += _bodies(child)
    return found


def toml_add_tables(keys: Sequence[str], tables: Mapping[str, Mapping[str, Any]]) -> TextEdit:
    """An edit that appends a ``[KEYS.NAME]`` table for each of TABLES at the end of the file."""
    dotted = ".".join(keys)

    def wanted(data: Mapping[str, Any]) -> dict[str, Any]:
        current = lookup(data, keys)
        merged = dict(current) if isinstance(current, Mapping) else {}
        merged.update({name: dict(table) for name, table in tables.items()})
        return _with(data, keys, merged)

    def change(document: Container) -> None:
        for name, table in tables.items():
            _append(document, (*keys, name), table)

    def apply(old: str | None, where: Path) -> str:
        return _edit(where, f"[{dotted}]", old, change, wanted)

    return apply
