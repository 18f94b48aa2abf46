"""Edits of a JSONC file (JSON with ``//`` and ``/* */`` comments and trailing commas) in place.

Contract
--------
:func:`splice` takes a file's text, the data it holds and the data it should hold, and
returns the text with only the changed spans rewritten: a changed value is replaced where
it stands (an object, or a list of the same length, is changed member by member), a new
member (or list item) is inserted after the last one of its object (or list), and a member
(or item) that goes is cut out with its comma. Everything else
(comments, trailing commas, indentation, line breaks, key order) stays byte for byte, and
text with no change of data is returned as it is. The file's own style is followed: its
indentation unit (tabs or spaces), whether its objects end with a trailing comma, and
whether an object is written on one line or one member a line.

A comment is never removed, unless it lies inside a value that is replaced whole (a list
that changed other than by appending or removing items, or a value whose type changed).
The result is read back before it is returned: :func:`splice` answers None, and the
caller falls back to writing the data as plain JSON, when the text cannot be parsed or
the result would not hold exactly the data wanted.

Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

_COMMENT_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|//[^\n]*|/\*.*?\*/', re.DOTALL)
_TRAILING_COMMA_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|,(?=\s*[}\]])')
_GAP = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?(?:\d+)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null|NaN|-?Infinity")
_REST_OF_LINE = re.compile(r"[ \t]*(?://[^\n]*|/\*[^\n]*?\*/)?[ \t]*(?=\n)")
_SURROGATE = re.compile("[\ud800-\udfff]")


def strip_comments(text: str) -> str:
    """TEXT without ``//`` and ``/* */`` comments and trailing commas (strings are left alone)."""

    def no_comment(match: re.Match[str]) -> str:
        token = match.group(0)
        # A comment becomes as many line breaks as it had, so error positions stay right.
        return token if token.startswith('"') else "\n" * token.count("\n")

    def no_comma(match: re.Match[str]) -> str:
        token = match.group(0)
        return token if token.startswith('"') else ""

    return _TRAILING_COMMA_OR_STRING.sub(no_comma, _COMMENT_OR_STRING.sub(no_comment, text))


def loads_jsonc(text: str) -> Any:
    """TEXT, JSON that may hold comments and trailing commas, as data (``json.loads`` errors)."""
    return json.loads(strip_comments(text))


@dataclass(frozen=True)
class _Node:
    """A value's span in the text; an object's or a list's entries, in file order."""

    start: int
    end: int
    entries: tuple[_Entry, ...] | None = None
    is_object: bool = False


@dataclass(frozen=True)
class _Entry:
    """One member of an object (KEY set) or item of a list: where it starts, its value, its comma."""

    key: str | None
    start: int
    value: _Node
    comma: int | None

    @property
    def end(self) -> int:
        """Where the entry ends, its comma included."""
        return self.value.end if self.comma is None else self.comma + 1


class _Parser:
    """Spans of a JSONC text's values; a :class:`ValueError` for text that is not JSONC."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        match = _GAP.match(self.text, self.pos)
        self.pos = match.end() if match else self.pos

    def expect(self, char: str) -> None:
        self.skip()
        if not self.text.startswith(char, self.pos):
            raise ValueError(f"expected {char!r} at {self.pos}")
        self.pos += 1

    def value(self) -> _Node:
        self.skip()
        char = self.text[self.pos : self.pos + 1]
        if char in ("{", "["):
            return self.container(is_object=char == "{")
        match = _STRING.match(self.text, self.pos) or _SCALAR.match(self.text, self.pos)
        if not match:
            raise ValueError(f"no value at {self.pos}")
        self.pos = match.end()
        return _Node(match.start(), match.end())

    def container(self, *, is_object: bool) -> _Node:
        start = self.pos
        close = "}" if is_object else "]"
        self.pos += 1
        entries: list[_Entry] = []
        while True:
            self.skip()
            if self.text.startswith(close, self.pos):
                self.pos += 1
                return _Node(start, self.pos, tuple(entries), is_object)
            if entries and entries[-1].comma is None:
                raise ValueError(f"expected ',' or {close!r} at {self.pos}")
            entry_start, key = self.pos, None
            if is_object:
                match = _STRING.match(self.text, self.pos)
                if not match:
                    raise ValueError(f"expected a key at {self.pos}")
                key = json.loads(match.group())
                self.pos = match.end()
                self.expect(":")
            value = self.value()
            self.skip()
            comma = None
            if self.text.startswith(",", self.pos):
                comma = self.pos
                self.pos += 1
            entries.append(_Entry(key, entry_start, value, comma))


def parse_spans(text: str) -> _Node:
    """The span tree of TEXT, a JSONC document; a :class:`ValueError` when it is not one."""
    parser = _Parser(text)
    node = parser.value()
    parser.skip()
    if parser.pos != len(text):
        raise ValueError(f"text after the value at {parser.pos}")
    return node


Splice = tuple[int, int, str]


class _Style:
    """How the file is written: its indentation unit, read from its first indented line."""

    def __init__(self, text: str) -> None:
        self.text = text
        match = re.search(r"\n([ \t]+)\S", text)
        self.unit = match.group(1) if match else "  "

    def line_indent(self, pos: int) -> str:
        """The indentation of the line POS is on."""
        line_start = self.text.rfind("\n", 0, pos) + 1
        match = re.match(r"[ \t]*", self.text[line_start:])
        return match.group() if match else ""

    def starts_line(self, pos: int) -> bool:
        """Only blanks stand before POS on its line."""
        line_start = self.text.rfind("\n", 0, pos) + 1
        return not self.text[line_start:pos].strip()

    def dump(self, value: Any, indent: str | None) -> str:
        """VALUE as JSON, one member a line indented from INDENT (None: on one line)."""
        if indent is None:
            text = json.dumps(value, ensure_ascii=False)
        else:
            text = json.dumps(value, indent=self.unit, ensure_ascii=False).replace("\n", "\n" + indent)
        return _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def splice(text: str, old: Any, new: Any) -> str | None:
    """TEXT (which holds OLD) changed to hold NEW in the changed spans only; None when it cannot be."""
    if old == new:
        return text
    try:
        root = parse_spans(text)
    except (ValueError, IndexError):
        return None
    style = _Style(text)
    splices: list[Splice] = []
    _change(style, root, old, new, splices)
    result = text
    for start, end, replacement in sorted(splices, key=lambda s: (s[0], s[1]), reverse=True):
        result = result[:start] + replacement + result[end:]
    try:
        if loads_jsonc(result) != new:
            return None
    except json.JSONDecodeError:
        return None
    return result


def _change(style: _Style, node: _Node, old: Any, new: Any, splices: list[Splice]) -> None:
    """Append to SPLICES what turns NODE, which holds OLD, into NEW."""
    if old == new:
        return
    if isinstance(old, Mapping) and isinstance(new, Mapping) and node.is_object and node.entries is not None:
        by_key = {entry.key: entry for entry in node.entries}  # the last one wins, as in json.loads
        gone = [entry for entry in node.entries if entry.key not in new]
        added = [(key, value) for key, value in new.items() if key not in old]
        for key, value in new.items():
            if key in old and old[key] != value:
                _change(style, by_key[key].value, old[key], value, splices)
        _rework(style, node, gone, [_member(style, node, k, v) for k, v in added], splices)
        return
    if isinstance(old, list) and isinstance(new, list) and not node.is_object and node.entries is not None:
        if len(new) == len(old) == len(node.entries):
            for entry, was, wanted in zip(node.entries, old, new, strict=True):
                _change(style, entry.value, was, wanted, splices)
            return
        if new[: len(old)] == old:
            added_items = [_item(style, node, value) for value in new[len(old) :]]
            _rework(style, node, [], added_items, splices)
            return
        kept = _kept_indices(old, new)
        if kept is not None:
            gone = [entry for i, entry in enumerate(node.entries) if i not in kept]
            _rework(style, node, gone, [], splices)
            return
    # A list or object kept on one line stays on one line; anything else is indented like its line.
    one_line = node.entries is not None and "\n" not in style.text[node.start : node.end]
    splices.append(
        (node.start, node.end, style.dump(new, None if one_line else style.line_indent(node.start)))
    )


def _kept_indices(old: Sequence[Any], new: Sequence[Any]) -> set[int] | None:
    """The indices of OLD that NEW keeps, when NEW is OLD with items removed; else None."""
    kept: set[int] = set()
    i = 0
    for value in new:
        while i < len(old) and old[i] != value:
            i += 1
        if i == len(old):
            return None
        kept.add(i)
        i += 1
    return kept


def _multiline(style: _Style, node: _Node) -> bool:
    """NODE is written one entry a line (or is empty), rather than on one line."""
    if not node.entries:
        return True
    return style.starts_line(node.entries[0].start)


def _entry_indent(style: _Style, node: _Node) -> str:
    """The indentation of NODE's entries (of a new entry in NODE)."""
    if node.entries:
        return style.line_indent(node.entries[0].start)
    return style.line_indent(node.start) + style.unit


def _member(style: _Style, node: _Node, key: str, value: Any) -> str:
    indent = _entry_indent(style, node) if _multiline(style, node) else None
    return style.dump(key, None) + ": " + style.dump(value, indent)


def _item(style: _Style, node: _Node, value: Any) -> str:
    indent = _entry_indent(style, node) if _multiline(style, node) else None
    return style.dump(value, indent)


def _rework(style: _Style, node: _Node, gone: list[_Entry], added: list[str], splices: list[Splice]) -> None:
    """Remove the entries GONE from NODE and append the ADDED ones (rendered), keeping its style."""
    if not gone and not added:
        return
    entries = node.entries or ()
    text = style.text
    kept = [entry for entry in entries if entry not in gone]
    trailing_comma = bool(entries) and entries[-1].comma is not None
    multiline = _multiline(style, node)
    if not kept:
        inner_start, inner_end = node.start + 1, node.end - 1
        between = text[inner_start:inner_end]
        for entry in entries:
            between = between.replace(text[entry.start : entry.end], "", 1)
        if "/" not in between:  # nothing but blanks and commas would stay: write the inside anew
            if not added:
                splices.append((inner_start, inner_end, ""))
                return
            outer = style.line_indent(node.start)
            splices.append((inner_start, inner_end, _rendered(style, node, added, trailing_comma, outer)))
            return
    for entry in gone:
        splices.append(_cut(style, entry))
    if kept and entries[-1] in gone and not trailing_comma and not added:
        # The last entry goes: so does the comma before it, and the blanks after that comma.
        comma = kept[-1].comma
        assert comma is not None
        blanks = re.compile(r"[ \t]*").match(text, comma + 1)
        splices.append((comma, blanks.end() if blanks else comma + 1, ""))
    if not added:
        return
    if not kept:
        # Comments stay inside: the new entries go right after the opening bracket.
        splices.append((node.start + 1, node.start + 1, _rendered(style, node, added, trailing_comma, None)))
        return
    anchor = kept[-1]
    at = anchor.end
    rest = _REST_OF_LINE.match(text, at) if multiline else None
    if rest:  # after a comment that ends the anchor's line, which stays the anchor's
        at = rest.end()
    pieces = _pieces(style, node, added, trailing_comma)
    if anchor.comma is None and at != anchor.value.end:
        splices.append((anchor.value.end, anchor.value.end, ","))
    elif anchor.comma is None:
        pieces = "," + pieces
    splices.append((at, at, pieces))


def _pieces(style: _Style, node: _Node, added: list[str], trailing_comma: bool) -> str:
    """ADDED entries as text to insert after an entry of NODE (and its comma)."""
    last = len(added) - 1
    commas = ["," if i < last or trailing_comma else "" for i in range(len(added))]
    if _multiline(style, node):
        indent = _entry_indent(style, node)
        return "".join(f"\n{indent}{piece}{comma}" for piece, comma in zip(added, commas, strict=True))
    return "".join(f" {piece}{comma}" for piece, comma in zip(added, commas, strict=True))


def _rendered(style: _Style, node: _Node, added: list[str], trailing_comma: bool, outer: str | None) -> str:
    """ADDED as the inside of an empty NODE; OUTER: the indentation of its closing bracket (None: none)."""
    pieces = _pieces(style, node, added, trailing_comma)
    if not _multiline(style, node):
        return pieces.lstrip(" ")
    return pieces + ("" if outer is None else "\n" + outer)


def _cut(style: _Style, entry: _Entry) -> Splice:
    """The splice that removes ENTRY: whole lines when it stands on lines of its own."""
    text = style.text
    start, end = entry.start, entry.end
    rest = re.compile(r"[ \t]*\n").match(text, end)
    if style.starts_line(start) and rest:
        return text.rfind("\n", 0, start) + 1, rest.end(), ""
    spaces = re.compile(r"[ \t]*").match(text, end)
    return start, spaces.end() if spaces else end, ""
