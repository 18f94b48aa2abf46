"""Output budgets: how much of one tool result reaches the model, and cuts that keep what matters.

Every agent cuts or stores away a large tool result in its own way (measured with the real
CLIs, see ``docs/budgets.md``): Claude Code saves a result past about 50,000 characters to a
file of its own and shows the model a 2 KB preview; Gemini CLI keeps the first 8,000 and the
last 32,000 characters; Codex keeps about 12,000 UTF-8 bytes around a cut in the middle. Each
of these loses the note that says how to get the rest, so awf-mcp sizes every result itself,
below the client's own limit, and says what it left out.

Contract
--------
* A budget is a number of **UTF-8 bytes** of result text. Codex counts bytes, so a budget in
  bytes holds for text in any script; for ASCII text bytes and characters are the same.
* :func:`budget_for_client` gives the default for the ``clientInfo.name`` a client sent;
  ``--output-budget`` (config key ``output_budget``) overrides it for every client.
* The cutting helpers never split a UTF-8 character (nor a line, where they say so), and what
  they return fits the number of bytes they were given. They are pure and cheap: one encode.
* :func:`fit_result` is the last pass over every result, whatever its provider. It counts the
  whole content (:func:`content_size`): text and an embedded resource's text in UTF-8 bytes,
  and every other field — ``_meta``, annotations, a link's name and description, a resource's
  blob — at its size as compact JSON; only an image or audio item's data and MIME type do not
  count (they travel as media, bounded by the frame limit). Over the budget, items are kept in order
  while they fit; the first that does not is cut (text at a line boundary, its other fields
  dropped) or, when it holds no text to cut, left out; one note says what was cut and left
  out. What remains is valid MCP. ``structuredContent`` over the budget cannot be cut safely
  and turns the result into an error that says so.

This module belongs to the public face: plugin authors may size their own results with
``current_call().output_budget`` and these helpers. It imports the standard library and
:mod:`awf_mcp.ports` only.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from awf_mcp.ports import ToolContent, ToolResult, current_call, visible_text

CLIENT_BUDGETS: Mapping[str, int] = {
    "claude-code": 40_000,
    "gemini-cli-mcp-client": 32_000,
    "codex-mcp-client": 10_000,
}
"""Default budgets by ``clientInfo.name``, each below the size the client starts to cut at."""

DEFAULT_BUDGET = 10_000
"""For a client not in :data:`CLIENT_BUDGETS`: the smallest measured limit, so nothing is cut."""

MIN_BUDGET = 1_000
"""The smallest budget accepted: room for some content and the note that says how to get the rest."""

MAX_BUDGET = 1024 * 1024
"""The largest budget accepted: even text that JSON escapes sixfold (control characters)
stays well inside the 10 MiB frame limit."""


def budget_for_client(client_name: str | None) -> int:
    """The default budget for a client that names itself ``client_name`` (``None``: unknown)."""
    if not client_name:
        return DEFAULT_BUDGET
    return CLIENT_BUDGETS.get(client_name.strip().lower(), DEFAULT_BUDGET)


def rules(configured: int | None) -> dict[str, Any]:
    """The budget rules as data (``tools list --json``): what each client gets, how results shorten."""
    return {
        "unit": "UTF-8 bytes of result content per call (text; other fields as JSON; not media data)",
        "configured": configured,
        "by_client": dict(CLIENT_BUDGETS),
        "default": DEFAULT_BUDGET,
        "shortening": (
            "a result over the budget is shortened by its tool and ends with one note "
            "'[awf-mcp: ...]' saying what was left out and how to get it (Read offset or column, "
            "Grep and Glob offset, Bash's output file); other text is cut at a line, other fields "
            "dropped, items with no text left out; structured content over the budget makes the call "
            "an error"
        ),
    }


def current_budget(outside: int = DEFAULT_BUDGET) -> int:
    """The output budget of the call running in this task or thread; ``outside`` when there is none.

    Outside a served call (a provider called directly, in a unit test or a script) no client
    is known; a tool may pass its own bound.
    """
    budget = current_call().output_budget
    return outside if budget is None else budget


def encode(text: str) -> bytes:
    """``text`` as UTF-8; a lone surrogate (from a file name that is not UTF-8) is kept as bytes."""
    return text.encode("utf-8", "surrogatepass")


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogatepass")


def size(text: str) -> int:
    """The budget ``text`` takes: its length in UTF-8 bytes."""
    return len(encode(text)) if not text.isascii() else len(text)


def _char_start(data: bytes, index: int) -> int:
    """The start of the UTF-8 character at byte ``index`` (continuation bytes are ``10xxxxxx``)."""
    while 0 < index < len(data) and data[index] & 0xC0 == 0x80:
        index -= 1
    return index


def head(text: str, limit: int) -> str:
    """The longest prefix of ``text`` that takes at most ``limit`` bytes."""
    if len(text) <= limit // 4 or (text.isascii() and len(text) <= limit):
        return text
    data = encode(text)
    if len(data) <= limit:
        return text
    return _decode(data[: _char_start(data, max(limit, 0))])


def tail(text: str, limit: int) -> str:
    """The longest suffix of ``text`` that takes at most ``limit`` bytes."""
    data = encode(text)
    if len(data) <= limit:
        return text
    start = len(data) - max(limit, 0)
    while start < len(data) and data[start] & 0xC0 == 0x80:
        start += 1
    return _decode(data[start:])


def head_lines(text: str, limit: int) -> str:
    """The longest run of whole lines at the start of ``text`` within ``limit`` bytes.

    When even the first line does not fit, its head is returned (cut inside the line).
    """
    kept = head(text, limit)
    if len(kept) == len(text):
        return text
    end = kept.rfind("\n")
    return kept[: end + 1] if end >= 0 else kept


def tail_lines(text: str, limit: int) -> str:
    """The longest run of whole lines at the end of ``text`` within ``limit`` bytes.

    When even the last line does not fit, its tail is returned (cut inside the line).
    """
    kept = tail(text, limit)
    if len(kept) == len(text) or text[len(text) - len(kept) - 1] == "\n":
        return kept
    start = kept.find("\n")
    return kept[start + 1 :] if 0 <= start < len(kept) - 1 else kept


def head_and_tail(text: str, limit: int, *, head_share: float = 0.25) -> tuple[str, str, int, int]:
    """Keep the start and the end of ``text`` within ``limit`` bytes, dropping the middle.

    Returns ``(head, tail, omitted_lines, omitted_bytes)``; when ``text`` fits, ``(text, "",
    0, 0)``. Both parts end on line boundaries where the lines allow it. The end gets the
    larger share: in a build log or a test run, the end is where the error is.
    """
    total = size(text)
    if total <= limit:
        return text, "", 0, 0
    first = head_lines(text, int(limit * head_share))
    last = tail_lines(text, limit - size(first))
    middle = text[len(first) : len(text) - len(last)]
    return first, last, middle.count("\n"), total - size(first) - size(last)


def _visible(result: ToolResult) -> ToolResult:
    content = [
        dataclasses.replace(item, text=visible_text(item.text)) if item.type == "text" else item
        for item in result.content
    ]
    return ToolResult(content=content, is_error=result.is_error, structured_content=result.structured_content)


def content_size(item: ToolContent) -> int:
    """The budget one content item takes; see the module docstring."""
    extra = json_size(item.extra) if item.extra else 0
    if item.type == "text":
        return size(item.text) + extra
    if item.type in ("image", "audio"):
        return extra
    fields = size(item.uri) + size(item.mime_type) + extra
    if item.type == "resource":
        return fields + (len(item.data) if item.data else size(item.text))
    return fields + size(item.name)


def _cut(item: ToolContent, room: int) -> ToolContent | None:
    """``item`` within ``room`` bytes (extra fields dropped, text cut); ``None`` when nothing fits."""
    if item.type in ("image", "audio"):
        bare = dataclasses.replace(item, extra=None)
        return bare if content_size(bare) <= room else None
    if item.type == "text":
        kept = head_lines(item.text, room)
        return ToolContent.of_text(kept) if kept else None
    if item.type == "resource" and not item.data:
        bare = dataclasses.replace(item, text="", extra=None)
        kept = head_lines(item.text, room - content_size(bare))
        return dataclasses.replace(bare, text=kept) if kept else None
    return None


def _count(kinds: Mapping[str, int]) -> str:
    return ", ".join(f"{number} {kind} item" + ("s" if number > 1 else "") for kind, number in kinds.items())


def fit_result(result: ToolResult, budget: int, *, how: str = "") -> ToolResult:
    """``result`` cut to ``budget`` bytes with one note, or an error when it cannot be cut.

    Text is first made encodable (:func:`~awf_mcp.ports.visible_text`: a file name that is not
    UTF-8 shows its bytes as ``\\xNN``), so what is measured is what is sent. Every content
    item counts (:func:`content_size`), the data of images and audio excepted.

    ``how`` is appended to the note (for example how to ask for less). A result within the
    budget is returned as is.
    """
    if any(item.type == "text" and not item.text.isascii() for item in result.content):
        result = _visible(result)
    structured = result.structured_content
    if structured is not None:
        shape = json_size(structured)
        if shape > budget:
            return ToolResult.error(
                f"the result is too large for this client: its structured content takes {shape:,} bytes "
                f"and the output budget is {budget:,} bytes; ask for less" + (f" ({how})" if how else "")
            )
    sizes = [content_size(item) for item in result.content]
    total = sum(sizes)
    if total <= budget:
        return result
    room = max(budget - NOTE_ROOM, 0)
    content: list[ToolContent] = []
    shown = 0
    left_out: dict[str, int] = {}
    trimmed: dict[str, int] = {}
    for item, taken in zip(result.content, sizes, strict=True):
        kept: ToolContent | None = item if taken <= room else _cut(item, room)
        if kept is None:
            left_out[item.type] = left_out.get(item.type, 0) + 1
            continue
        if kept is not item and item.extra:
            trimmed[item.type] = trimmed.get(item.type, 0) + 1
        taken = content_size(kept)
        content.append(kept)
        room -= taken
        shown += taken
    parts = [
        f"output cut to {shown:,} of {total:,} bytes to fit this client's output budget of {budget:,} bytes"
    ]
    if left_out:
        parts.append(f"left out: {_count(left_out)}")
    if trimmed:
        parts.append(f"_meta, annotations and other fields dropped from {_count(trimmed)}")
    if how:
        parts.append(how)
    content.append(ToolContent.of_text(note("; ".join(parts))))
    return ToolResult(content=content, is_error=result.is_error, structured_content=structured)


NOTE_ROOM = 400
"""Bytes of the budget kept for the note of a cut result."""


def note(text: str) -> str:
    """The one note a shortened result ends with: ``[awf-mcp: TEXT]`` on a line of its own."""
    return f"[awf-mcp: {text}]"


def json_size(value: Any) -> int:
    """The UTF-8 size of ``value`` encoded as compact JSON (how structured content travels)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))
