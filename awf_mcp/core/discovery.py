"""Which tools a client is offered: every one, or the built-ins and a search, by what the client does.

Contract
--------
Some clients load every tool's definition into every model request (Gemini CLI, Cursor, Zed and
most others; OpenAI's API refuses past 128 tools); Claude Code and Codex defer tools past their
own limits. :func:`offered` is the one judgement, for ``tools/list`` and ``tools list --client``:

* a client in :data:`DEFERRING_CLIENTS` (by ``clientInfo.name``) is offered every tool (the
  wire marks the built-ins and ``[discovery] always`` ``_meta["anthropic/alwaysLoad"]``:
  :func:`loaded_always`);
* any other client is offered every tool while there are at most ``threshold`` of them
  (``[discovery] threshold``, default :data:`DEFAULT_THRESHOLD`); past that, the built-ins, the
  tools ``[discovery] always`` names (names or ``fnmatch`` patterns), and two tools of awf-mcp's
  own: :data:`FIND` (``query``: tools ranked by name and description, each with its one-line
  description and input schema, :func:`find`) and :data:`CALL` (``name``, ``arguments``: runs
  that tool). A call through :data:`CALL` is the named tool's own call: the same policy, audit,
  budget, pins and trust as if it were listed (the wire rewrites it before the call path).

Standard library only.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from awf_mcp.ports import BUILTIN_SOURCE, ToolAnnotations, ToolDefinition

DEFAULT_THRESHOLD = 40
DEFERRING_CLIENTS = frozenset({"claude-code", "codex-mcp-client"})
"""``clientInfo.name`` of the clients that defer tools themselves: they are offered every tool."""

FIND = "awf_find_tools"
CALL = "awf_call_tool"
DISCOVERY_SOURCE = "awf-mcp"
FIND_LIMIT = 10

FIND_DEFINITION = ToolDefinition(
    name=FIND,
    description=(
        "Find tools among the many this server has but does not list: give a few words of what you "
        "want to do. Answers the best matches, each with its name, what it does and its input "
        f"schema; run one with {CALL}."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Words of what the tool should do or be named."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "At most this many."},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    source=DISCOVERY_SOURCE,
    annotations=ToolAnnotations(title="Find tools", read_only=True, open_world=False),
)
CALL_DEFINITION = ToolDefinition(
    name=CALL,
    description=(
        f"Run a tool that {FIND} found, by its exact name, with its arguments (an object matching its "
        "input schema). The result is that tool's own."
    ),
    input_schema={
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": f"The tool's name, as {FIND} gave it."},
            "arguments": {"type": "object", "description": "Its arguments."},
        },
        "required": ["name"],
        "additionalProperties": False,
    },
    source=DISCOVERY_SOURCE,
    annotations=ToolAnnotations(title="Call a found tool"),
)


@dataclass(frozen=True, slots=True)
class Discovery:
    """The ``[discovery]`` table, checked."""

    threshold: int = DEFAULT_THRESHOLD
    always: tuple[str, ...] = ()


def parse_table(table: object, where: str) -> Discovery:
    """The ``[discovery]`` table of ``where``; :class:`ValueError` names what is wrong."""
    if not isinstance(table, Mapping):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - {"threshold", "always"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} in {where}; allowed keys: always, threshold")
    threshold = table.get("threshold", DEFAULT_THRESHOLD)
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 1:
        raise ValueError(f"threshold in {where} must be a positive number of tools")
    always = table.get("always", [])
    if not isinstance(always, list) or not all(isinstance(name, str) and name for name in always):
        raise ValueError(f"always in {where} must be a list of tool names or patterns")
    return Discovery(threshold, tuple(always))


def defers_tools(client: str | None) -> bool:
    """Whether the client naming itself ``client`` defers tools itself."""
    return (client or "").strip().lower() in DEFERRING_CLIENTS


def loaded_always(definition: ToolDefinition, discovery: Discovery) -> bool:
    """Whether ``definition`` is always offered: a built-in, or named by ``[discovery] always``."""
    return definition.source == BUILTIN_SOURCE or any(
        fnmatch.fnmatchcase(definition.name, pattern) for pattern in discovery.always
    )


def offered(
    definitions: Sequence[ToolDefinition], client: str | None, discovery: Discovery
) -> tuple[list[ToolDefinition], bool]:
    """The tools ``client`` is offered, and whether it searches for the rest (module docstring)."""
    if defers_tools(client) or len(definitions) <= discovery.threshold:
        return list(definitions), False
    kept = [definition for definition in definitions if loaded_always(definition, discovery)]
    return [*kept, FIND_DEFINITION, CALL_DEFINITION], True


_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def ranked(definitions: Sequence[ToolDefinition], query: str) -> list[ToolDefinition]:
    """``definitions`` that match words of ``query``, best first: a word in the name counts three,
    in the description one; a word that is a prefix of one counts half; ties by name."""
    asked = _words(query)
    if not asked:
        return []
    scored = []
    for definition in definitions:
        if definition.source == DISCOVERY_SOURCE:
            continue
        named, described = _words(definition.name.replace("_", " ")), _words(definition.description)
        score = 0.0
        for word in asked:
            score += 3 if word in named else 1.5 if any(w.startswith(word) for w in named) else 0
            score += 1 if word in described else 0.5 if any(w.startswith(word) for w in described) else 0
        if score:
            scored.append((-score, definition.name, definition))
    return [definition for _, _, definition in sorted(scored, key=lambda item: item[:2])]


def find(definitions: Sequence[ToolDefinition], arguments: Mapping[str, Any], budget: int) -> str:
    """The answer of :data:`FIND`: the best matches, within ``budget`` UTF-8 bytes."""
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return "give a query: a few words of what the tool should do"
    limit = arguments.get("limit", FIND_LIMIT)
    limit = (
        limit if isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= 50 else FIND_LIMIT
    )
    matches = ranked(definitions, query)
    if not matches:
        return f"no tool matches {query!r}; try other words"
    lines: list[str] = []
    used = 0
    shown = 0
    for definition in matches[:limit]:
        summary = definition.description.strip().splitlines()[0] if definition.description.strip() else ""
        entry = f"{definition.name}: {summary}\n  input schema: {json.dumps(definition.input_schema)}"
        size = len(entry.encode("utf-8", "surrogatepass")) + 1
        if shown and used + size > budget - 200:
            break
        lines.append(entry)
        used += size
        shown += 1
    more = len(matches) - shown
    tail = f"\n[{more} more match; narrow the query to see them]" if more > 0 else ""
    return "\n".join(lines) + f"\nrun one with {CALL} {{name, arguments}}" + tail
