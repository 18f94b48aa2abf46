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
* :func:`fit_result` is the last pass over every result, whatever its provider: text over the
  budget is cut at a line boundary with one note; ``structuredContent`` over the budget cannot
  be cut safely and turns the result into an error that says so.

This module belongs to the public face: plugin authors may size their own results with
``current_call().output_budget`` and these helpers. It imports the standard library and
:mod:`awf_mcp.ports` only.
"""

from __future__ import annotations

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
        "unit": "UTF-8 bytes of result text per call",
        "configured": configured,
        "by_client": dict(CLIENT_BUDGETS),
        "default": DEFAULT_BUDGET,
        "shortening": (
            "a result over the budget is shortened by its tool and ends with one note "
            "'[awf-mcp: ...]' saying what was left out and how to get it (Read offset or column, "
            "Grep and Glob offset, Bash's output file); other text is cut at a line; structured "
            "content over the budget makes the call an error"
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
        ToolContent.of_text(visible_text(item.text)) if item.type == "text" else item
        for item in result.content
    ]
    return ToolResult(content=content, is_error=result.is_error, structured_content=result.structured_content)


def fit_result(result: ToolResult, budget: int, *, how: str = "") -> ToolResult:
    """``result`` cut to ``budget`` bytes of text with one note, or an error when it cannot be cut.

    Text is first made encodable (:func:`~awf_mcp.ports.visible_text`: a file name that is not
    UTF-8 shows its bytes as ``\\xNN``), so what is measured is what is sent.

    ``how`` is appended to the note (for example how to ask for less). Images are not text
    and do not count; the frame limit bounds them. A result within the budget is returned as is.
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
    texts = [item for item in result.content if item.type == "text"]
    total = sum(size(item.text) for item in texts)
    if total <= budget:
        return result
    note_room = 400
    room = max(budget - note_room, 0)
    content: list[ToolContent] = []
    shown = 0
    for item in result.content:
        if item.type != "text":
            content.append(item)
            continue
        if room <= 0:
            continue
        kept = head_lines(item.text, room)
        content.append(ToolContent.of_text(kept))
        room -= size(kept)
        shown += size(kept)
    content.append(
        ToolContent.of_text(
            note(
                f"output cut to {shown:,} of {total:,} bytes to fit this client's output budget of "
                f"{budget:,} bytes" + (f"; {how}" if how else "")
            )
        )
    )
    return ToolResult(content=content, is_error=result.is_error, structured_content=structured)


def note(text: str) -> str:
    """The one note a shortened result ends with: ``[awf-mcp: TEXT]`` on a line of its own."""
    return f"[awf-mcp: {text}]"


def json_size(value: Any) -> int:
    """The UTF-8 size of ``value`` encoded as compact JSON (how structured content travels)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return len(text.encode("utf-8", "surrogatepass"))
