"""JSON edits of the files agents read their configuration from: order kept, comments kept.

Contract
--------
:func:`json_edit` is a :data:`~awf_mcp.clients.editors.TextEdit` made of updates, pure
functions on the parsed object (:func:`set_entry`, :func:`add_to_list`,
:func:`remove_from_list`), applied in order. When they change nothing, the text comes back
as it was (so :func:`~awf_mcp.clients.editors.apply_edits` writes nothing and says the file
is up to date). A file that is absent or blank is written anew, with a 2-space indent. An
existing file keeps its key order: a plain JSON file is written back with a 2-space
indent; a file whose client allows comments (``comments``: format ``jsonc``, VS Code, Zed,
opencode) is changed only where its data changes (:func:`awf_mcp.clients.jsonc.splice`),
so its ``//`` and ``/* */`` comments, trailing commas and indentation stay as they were.

:func:`parse_json` reads a file's text as a JSON object, or raises
:class:`~awf_mcp.clients.editors.UnreadableFile`, whose reason words what is wrong.

Standard library only.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from awf_mcp.clients.editors import TextEdit, UnreadableFile
from awf_mcp.clients.jsonc import loads_jsonc, splice
from awf_mcp.errors import UserError

JsonObject = dict[str, Any]

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
    """An edit that parses the JSON object (absent or blank: empty) and applies UPDATES in order.

    The old text comes back when they change nothing. COMMENTS: the file may hold JSONC
    comments and trailing commas, and only the spans whose data changed are rewritten.
    """

    def apply(old: str | None, path: Path) -> str:
        if old is None or not old.strip():
            data: JsonObject = {}
            for update in updates:
                update(data, path)
            return dump_json(data) + "\n"
        before = parse_json(old, path, comments=comments)
        after = copy.deepcopy(before)
        for update in updates:
            update(after, path)
        if after == before:
            return old
        spliced = splice(old, before, after) if comments else None
        return spliced if spliced is not None else dump_json(after) + "\n"

    return apply


def loads_json(text: str, *, comments: bool = False) -> Any:
    """``json.loads``; COMMENTS: the text may hold comments and trailing commas (:mod:`.jsonc`)."""
    return loads_jsonc(text) if comments else json.loads(text)


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
