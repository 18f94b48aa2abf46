"""Pinned upstream definitions: an upstream server's tools are served only as the user approved them.

Contract
--------
* An **item** is one thing a server offers, of a kind: ``tool``, ``prompt``, ``resource`` or
  ``resource_template`` (:func:`admit_items`; a prompt's pin covers its name, title, description
  and arguments, a resource's its URI, name, title, description and MIME type). The first listing
  of a kind from a known server pins it as a first use does (a server pinned before prompts were
  relayed is not held for them). It is pinned by the SHA-256 of its canonical
  JSON (:func:`canonical`: keys sorted, no whitespace, UTF-8): for a tool, its own name,
  ``description``, ``inputSchema``, ``outputSchema`` and ``annotations``, under their MCP
  names (:func:`tool_document`).
* A server is known by its **identity**: its name plus what it runs (``command`` and
  ``args`` as written) or connects to (``url`` as written). The same name running another
  command is another server, with pins of its own.
* :func:`admit_tools` is the one gate, called wherever a server's listing becomes the tools
  awf-mcp serves (at start-up and after each ``tools/list_changed``):

  - a server with ``pin = false`` is served as listed; nothing is recorded;
  - a server seen for the first time (``serve``, ``tools list``, ``servers list``,
    ``doctor``, ``servers approve``): every item is pinned (the user's first use is
    their approval) and served;
  - afterwards, an item whose digest is its pin's is served; an item that changed, **or is
    new**, is **held**: not served, so neither listed nor callable, whatever ``--trust``
    or an agent's allow-list says about its name. It is recorded (state record ``pins``),
    logged (WARNING, logger ``awf_mcp.pins``) and sent to the audit log
    (:func:`~awf_mcp.core.observability.audit_event`) with a summary of what changed
    (:func:`describe_changes`), once per process and digest. An item that changes back to
    its pin is served again. An item the server stopped listing keeps its pin, and its hold
    if it had one: a server may list some tools only to an agent that supports more
    (sampling, say), and ``servers approve`` must be able to approve them without one.
  - when the record cannot be read (:class:`~awf_mcp.errors.UserError` from the state
    store), nothing of that server is served, with a warning saying why.

* :func:`admit_instructions` is the same gate for a server's ``instructions`` (kind
  ``instructions``, one item): a changed text is held and the approved one relayed instead.
* :func:`held` reads what is held for a server (without starting anything); :func:`approve`
  pins the held items the user was shown (by digest: one that changed again meanwhile stays
  held). ``awf-mcp servers approve NAME`` is the command.
* :func:`refusal` is the sentence a call of a held tool gets instead of "unknown tool".

The record (``pins`` in :mod:`awf_mcp.state.statestore`)::

    {"servers": {IDENTITY_SHA256: {"name", "runs",
        "items": {"tool:NAME": {"sha256", "definition"}},
        "held": {"tool:NAME": {"sha256", "definition", "changes", "since"}}}}}

``definition`` is the canonical document when it is at most :data:`MAX_KEPT_DEFINITION_BYTES`
and the server's kept definitions stay within :data:`MAX_KEPT_SERVER_BYTES` (so that the next
change can be described), else ``null``.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from awf_mcp.core.observability import audit_event
from awf_mcp.core.servers import ServerSpec
from awf_mcp.errors import UserError
from awf_mcp.ports import PromptDefinition, ResourceDefinition, ToolDefinition
from awf_mcp.state import statestore

log = logging.getLogger("awf_mcp.pins")

RECORD = "pins"
TOOL = "tool"
PROMPT = "prompt"
RESOURCE = "resource"
TEMPLATE = "resource_template"
INSTRUCTIONS = "instructions"
MAX_KEPT_DEFINITION_BYTES = 16 * 1024
"""A definition larger than this is pinned by its digest alone: its next change is not itemised."""
MAX_KEPT_SERVER_BYTES = 1024 * 1024
"""How many bytes of definitions one server's pins and holds keep in all; past that, digests alone
(a server listing 10,000 large tools cannot grow the record past what the state store reads)."""
EXCERPT_CHARS = 160
"""How much of a changed description a summary quotes, on each side."""
MAX_LISTED_KEYS = 12
"""How many schema keys a summary names before it counts the rest."""
ANNOTATION_ORDER = ("title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")


def canonical(document: Mapping[str, Any]) -> bytes:
    """``document`` as canonical JSON bytes: keys sorted, no whitespace, UTF-8."""
    text = json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return text.encode("utf-8", "surrogatepass")


def digest(document: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of ``document``'s canonical JSON."""
    return hashlib.sha256(canonical(document)).hexdigest()


def tool_document(tool: ToolDefinition) -> dict[str, Any]:
    """What a tool's pin covers, under MCP's names: name, description, schemas, annotations."""
    document: dict[str, Any] = {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema,
    }
    if tool.output_schema is not None:
        document["outputSchema"] = tool.output_schema
    hints = tool.annotations.hints() if tool.annotations is not None else {}
    if hints:
        document["annotations"] = hints
    return _with_carried(document, tool.meta, tool.icons)


def _with_carried(
    document: dict[str, Any], meta: Mapping[str, Any] | None, icons: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """``document`` with the ``_meta`` and ``icons`` an item carries (what the client shows and runs:
    MCP Apps' UI, an output template), when it carries any: a definition without them keeps the
    digest it had before they were relayed."""
    if meta:
        document["_meta"] = dict(meta)
    if icons:
        document["icons"] = [dict(icon) for icon in icons]
    return document


def identity(spec: ServerSpec) -> dict[str, Any]:
    """What makes a server the one the user approved: its name and what it runs or connects to."""
    if spec.url:
        return {"name": spec.name, "url": spec.written_url or spec.url}
    return {"name": spec.name, "command": spec.command, "args": list(spec.written_args or spec.args)}


def runs(spec: ServerSpec) -> str:
    """What a server runs or connects to, as it may be shown (no expanded secret)."""
    shown = spec.public()
    if spec.url:
        return str(shown["url"])
    return " ".join([shown["command"], *shown["args"]])


def approve_command(server: str) -> str:
    """The command that reviews and approves what is held of ``server``."""
    return f"awf-mcp servers approve {server}"


# --------------------------------------------------------------------------- describing a change


def _excerpt(text: str) -> str:
    return (
        text
        if len(text) <= EXCERPT_CHARS
        else f"{text[:EXCERPT_CHARS]}... ({len(text) - EXCERPT_CHARS} more)"
    )


def _text_change(before: str, after: str) -> dict[str, str]:
    """What was cut from ``before`` and put in its place: the common start and end trimmed (linear)."""
    start = 0
    limit = min(len(before), len(after))
    while start < limit and before[start] == after[start]:
        start += 1
    end = 0
    while end < limit - start and before[-1 - end] == after[-1 - end]:
        end += 1
    return {
        "removed": _excerpt(before[start : len(before) - end]),
        "added": _excerpt(after[start : len(after) - end]),
    }


def _named(keys: Sequence[str]) -> list[str]:
    listed = sorted(keys)
    if len(listed) > MAX_LISTED_KEYS:
        return [*listed[:MAX_LISTED_KEYS], f"... {len(listed) - MAX_LISTED_KEYS} more"]
    return listed


def _schema_change(before: Any, after: Any) -> dict[str, list[str]]:
    """Which properties a schema gained, lost or changed, and which of its other keys changed."""
    before = before if isinstance(before, Mapping) else {}
    after = after if isinstance(after, Mapping) else {}
    old_props = before.get("properties") if isinstance(before.get("properties"), Mapping) else {}
    new_props = after.get("properties") if isinstance(after.get("properties"), Mapping) else {}
    change = {
        "added": _named([key for key in new_props if key not in old_props]),
        "removed": _named([key for key in old_props if key not in new_props]),
        "changed": _named(
            [key for key in new_props if key in old_props and new_props[key] != old_props[key]]
            + [
                key
                for key in set(before) | set(after)
                if key != "properties" and before.get(key) != after.get(key)
            ]
        ),
    }
    return {key: value for key, value in change.items() if value}


def describe_changes(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> dict[str, Any]:
    """What changed from the approved document ``before`` to ``after`` (``None``: nothing was approved).

    ``new`` for an item that was not approved; ``description`` (``removed``, ``added``: the
    differing middle, each quoted up to :data:`EXCERPT_CHARS`); ``inputSchema`` and
    ``outputSchema`` (property names ``added``, ``removed``, ``changed``, and other changed
    keys); ``annotations`` (each changed hint: ``[before, after]``, ``null`` when unstated);
    ``fields``: the other fields that changed, by name (a prompt's ``arguments``, a resource's
    ``mimeType``);
    ``unknown`` when the approved document was not kept (:data:`MAX_KEPT_DEFINITION_BYTES`,
    :data:`MAX_KEPT_SERVER_BYTES`).
    """
    if before is None:
        change: dict[str, Any] = {"new": True, "description": _excerpt(str(after.get("description", "")))}
        if after.get("annotations"):
            change["annotations"] = dict(after["annotations"])
        return change
    if not before:
        return {
            "unknown": f"the approved definition was not kept (over {MAX_KEPT_DEFINITION_BYTES:,} bytes, "
            f"or past the server's {MAX_KEPT_SERVER_BYTES:,}): only its hash was kept"
        }
    changes: dict[str, Any] = {}
    if before.get("description") != after.get("description"):
        changes["description"] = _text_change(
            str(before.get("description", "")), str(after.get("description", ""))
        )
    for key in ("inputSchema", "outputSchema"):
        if before.get(key) != after.get(key):
            changes[key] = _schema_change(before.get(key), after.get(key))
    old_hints = before.get("annotations") or {}
    new_hints = after.get("annotations") or {}
    hints = {
        key: [old_hints.get(key), new_hints.get(key)]
        for key in sorted(set(old_hints) | set(new_hints), key=lambda k: (k not in ANNOTATION_ORDER, k))
        if old_hints.get(key) != new_hints.get(key)
    }
    if hints:
        changes["annotations"] = hints
    known = {"name", "description", "inputSchema", "outputSchema", "annotations"}
    others = sorted(key for key in (set(before) | set(after)) - known if before.get(key) != after.get(key))
    if others:
        changes["fields"] = others  # a prompt's arguments or title, a resource's name or MIME type
    return changes


def _value(value: Any) -> str:
    return "unset" if value is None else _excerpt(json.dumps(value, ensure_ascii=False))


def summary(kind: str, changes: Mapping[str, Any]) -> str:
    """One line saying what :func:`describe_changes` found; the upstream's text as it is (whatever
    shows the line makes it inert)."""
    if changes.get("new"):
        text = f"a new {kind}, not in what was approved"
        hints = changes.get("annotations") or {}
        if hints:
            text += " (" + ", ".join(f"{key}={_value(value)}" for key, value in hints.items()) + ")"
        return f'{text}: "{changes.get("description", "")}"'
    if "unknown" in changes:
        return f"changed; {changes['unknown']}"
    parts = []
    if "description" in changes:
        cut, put = changes["description"]["removed"], changes["description"]["added"]
        parts.append(f'description -"{cut}" +"{put}"')
    for key in ("inputSchema", "outputSchema"):
        if key in changes:
            marks = {"added": "+", "removed": "-", "changed": "~"}
            named = [f"{marks[how]}{name}" for how, names in changes[key].items() for name in names]
            parts.append(f"{key} {' '.join(named) or 'changed'}")
    for key, (old, new) in (changes.get("annotations") or {}).items():
        parts.append(f"{key} {_value(old)} -> {_value(new)}")
    if changes.get("fields"):
        parts.append(f"{', '.join(changes['fields'])} changed")
    return "; ".join(parts) or "changed"


# --------------------------------------------------------------------------- the gate


@dataclass(frozen=True, slots=True)
class Hold:
    """One item of a server held back: what changed since the user approved it."""

    server: str
    kind: str
    name: str
    sha256: str
    changes: Mapping[str, Any]

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    @property
    def summary(self) -> str:
        """One line: what changed."""
        return summary(self.kind, self.changes)


_held_tools: dict[str, str] = {}
"""Served name (``<server>_<tool>``) of each tool this process holds -> its server's name."""
_told: set[tuple[str, str, str]] = set()
"""(identity, item, digest) of the holds this process has logged and audited."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class _Budget:
    """The bytes of definitions one server's record may still keep."""

    def __init__(self, entry: Mapping[str, Any]) -> None:
        kept = [
            value.get("definition")
            for part in ("items", "held")
            for value in (entry.get(part) or {}).values()
            if isinstance(value, dict)
        ]
        self.left = MAX_KEPT_SERVER_BYTES - sum(len(canonical(doc)) for doc in kept if isinstance(doc, dict))

    def pin(self, document: Mapping[str, Any], sha: str) -> dict[str, Any]:
        """The record of ``document``: its digest, and the document itself while the budget lasts."""
        size = len(canonical(document))
        kept = size <= MAX_KEPT_DEFINITION_BYTES and size <= self.left
        if kept:
            self.left -= size
        return {"sha256": sha, "definition": document if kept else None}


def _server_key(spec: ServerSpec) -> str:
    return digest(identity(spec))


def _table(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """``parent[key]``, a JSON object (made when missing); raises :class:`UserError` when it is not one."""
    table = parent.setdefault(key, {})
    if not isinstance(table, dict):
        path = statestore.state_dir() / f"{RECORD}.json"
        raise UserError(f"{path} is not a record of pins ({key!r} is not an object); move it aside and rerun")
    return table


def _gate(spec: ServerSpec, kind: str, documents: Sequence[Mapping[str, Any]]) -> list[Hold]:
    """Pin on first use, or compare with the pins; the holds, recorded. See the module docstring."""
    key = _server_key(spec)
    holds: list[Hold] = []
    with statestore.updating(RECORD) as record:
        servers = _table(record, "servers")
        entry = servers.get(key)
        if not isinstance(entry, dict):
            budget = _Budget({})
            servers[key] = {
                "name": spec.name,
                "runs": runs(spec),
                "items": {f"{kind}:{doc['name']}": budget.pin(doc, digest(doc)) for doc in documents},
                "held": {},
                "kinds": [kind],
            }
            return []
        kinds = entry.setdefault("kinds", [TOOL])  # a record from before prompts and resources were pinned
        if isinstance(kinds, list) and kind not in kinds:  # the first use of this kind is its approval
            kinds.append(kind)
            budget = _Budget(entry)
            items = _table(entry, "items")
            for doc in documents:
                items[f"{kind}:{doc['name']}"] = budget.pin(doc, digest(doc))
            return []
        pins = _table(entry, "items")
        before_held = _table(entry, "held")
        listed = {f"{kind}:{document['name']}" for document in documents}
        held = {k: v for k, v in before_held.items() if k not in listed}  # kept till approved, of every kind
        budget = _Budget({"items": pins, "held": held})
        for document in documents:
            item = f"{kind}:{document['name']}"
            sha = digest(document)
            pin = pins.get(item)
            if isinstance(pin, dict) and pin.get("sha256") == sha:
                continue
            before = None if not isinstance(pin, dict) else (pin.get("definition") or {})
            changes = describe_changes(before, document)
            holds.append(Hold(spec.name, kind, str(document["name"]), sha, changes))
            held[item] = {**budget.pin(document, sha), "changes": changes, "since": _now()}
            previous = before_held.get(item)
            if isinstance(previous, dict) and previous.get("sha256") == sha:
                held[item]["since"] = previous.get("since", held[item]["since"])
        entry["held"] = held
    return holds


def _tell(spec: ServerSpec, hold: Hold) -> None:
    """Log and audit ``hold``, once per process."""
    told = (_server_key(spec), hold.key, hold.sha256)
    if told in _told:
        return
    _told.add(told)
    command = approve_command(spec.name)
    log.warning(
        "server '%s': %s '%s' is held, not served: %s; review and approve it with: %s",
        spec.name,
        hold.kind,
        hold.name,
        hold.summary,
        command,
    )
    audit_event(
        {
            "event": "held",
            "server": spec.name,
            "runs": runs(spec),
            "item": hold.kind,
            "name": hold.name,
            "sha256": hold.sha256,
            "changes": dict(hold.changes),
            "approve": command,
        }
    )


def admit_tools(spec: ServerSpec, listed: Sequence[ToolDefinition]) -> list[ToolDefinition]:
    """The tools of ``listed`` (a server's own listing) that may be served; see the module docstring."""
    prefix = f"{spec.name}_"
    for name in [name for name, server in _held_tools.items() if server == spec.name]:
        del _held_tools[name]
    if not spec.pin:
        return list(listed)
    documents = [tool_document(tool) for tool in listed]
    try:
        holds = _gate(spec, TOOL, documents)
    except UserError as exc:
        log.warning("server '%s' is not served: its pinned definitions cannot be checked: %s", spec.name, exc)
        return []
    held_digests = {(hold.name, hold.sha256) for hold in holds}
    for hold in holds:
        _held_tools[f"{prefix}{hold.name}"] = spec.name
        _tell(spec, hold)
    return [
        tool
        for tool, document in zip(listed, documents, strict=True)
        if (tool.name, digest(document)) not in held_digests
    ]


def prompt_document(prompt: PromptDefinition) -> dict[str, Any]:
    """What a prompt's pin covers, under MCP's names: name, title, description, arguments."""
    document: dict[str, Any] = {
        "name": prompt.name,
        "description": prompt.description,
        "arguments": [
            {"name": a.name, "description": a.description, "required": a.required} for a in prompt.arguments
        ],
    }
    if prompt.title is not None:
        document["title"] = prompt.title
    return _with_carried(document, prompt.meta, prompt.icons)


def resource_document(resource: ResourceDefinition) -> dict[str, Any]:
    """What a resource's (or template's) pin covers: its URI (as ``name``), name, title, description,
    MIME type."""
    document: dict[str, Any] = {
        "name": resource.uri,
        "resourceName": resource.name,
        "description": resource.description,
        "mimeType": resource.mime_type,
    }
    if resource.title is not None:
        document["title"] = resource.title
    if resource.annotations:
        document["annotations"] = dict(resource.annotations)
    return _with_carried(document, resource.meta, resource.icons)


Offered = TypeVar("Offered", PromptDefinition, ResourceDefinition)


def admit_items(spec: ServerSpec, kind: str, listed: Sequence[Offered]) -> list[Offered]:
    """The prompts, resources or resource templates (``kind``: :data:`PROMPT`, :data:`RESOURCE`,
    :data:`TEMPLATE`) of ``listed`` that may be served: the gate of :func:`admit_tools`, for them."""
    if not spec.pin or not listed:
        return list(listed)
    documents = [
        prompt_document(item) if isinstance(item, PromptDefinition) else resource_document(item)
        for item in listed
    ]
    try:
        holds = _gate(spec, kind, documents)
    except UserError as exc:
        log.warning(
            "server '%s': its %ss are not served: their pins cannot be checked: %s", spec.name, kind, exc
        )
        return []
    held_digests = {(hold.name, hold.sha256) for hold in holds}
    for hold in holds:
        _tell(spec, hold)
    return [
        item
        for item, document in zip(listed, documents, strict=True)
        if (str(document["name"]), digest(document)) not in held_digests
    ]


def instructions_document(text: str | None) -> dict[str, Any]:
    """What the pin of a server's ``instructions`` covers: the text (as ``description``, so a change
    is summarised as a description's is)."""
    return {"name": INSTRUCTIONS, "description": text or ""}


def admit_instructions(spec: ServerSpec, text: str | None) -> str | None:
    """The ``instructions`` of ``spec`` that may be relayed: ``text`` when it is the approved text
    (or the first seen), else the text last approved (``None`` when there was none, or it was not
    kept), the change held, logged once, audited, and shown by ``servers list`` and ``doctor``
    until ``servers approve`` pins it. A server's instructions reach the agent's system prompt: a
    changed one is a rug pull as a changed tool is."""
    if not spec.pin:
        return text
    document = instructions_document(text)
    try:
        holds = _gate(spec, INSTRUCTIONS, [document])
    except UserError as exc:
        log.warning(
            "server '%s': its instructions are not relayed: their pin cannot be checked: %s", spec.name, exc
        )
        return None
    if not holds:
        return text
    for hold in holds:
        _tell(spec, hold)
    entry = _table(statestore.load(RECORD), "servers").get(_server_key(spec))
    pin = _table(entry, "items").get(f"{INSTRUCTIONS}:{INSTRUCTIONS}") if isinstance(entry, dict) else None
    approved = pin.get("definition") if isinstance(pin, dict) else None
    if not isinstance(approved, dict):
        return None  # none approved, or only its hash kept
    return str(approved.get("description") or "") or None


def held(spec: ServerSpec) -> list[Hold]:
    """What is held of ``spec``, as last recorded (nothing is started); raises :class:`UserError`."""
    if not spec.pin:
        return []
    entry = _table(statestore.load(RECORD), "servers").get(_server_key(spec))
    if not isinstance(entry, dict):
        return []
    holds = []
    for item, value in sorted(_table(entry, "held").items()):
        kind, _, name = item.partition(":")
        if isinstance(value, dict):
            holds.append(Hold(spec.name, kind, name, str(value.get("sha256")), value.get("changes") or {}))
    return holds


def approve(spec: ServerSpec, holds: Sequence[Hold]) -> list[Hold]:
    """Pin each of ``holds`` that is still held with the same digest; the ones pinned."""
    approved = []
    with statestore.updating(RECORD) as record:
        entry = _table(record, "servers").get(_server_key(spec))
        if not isinstance(entry, dict):
            return []
        pending = _table(entry, "held")
        for hold in holds:
            value = pending.get(hold.key)
            if isinstance(value, dict) and value.get("sha256") == hold.sha256:
                _table(entry, "items")[hold.key] = {
                    "sha256": hold.sha256,
                    "definition": value.get("definition"),
                }
                del pending[hold.key]
                approved.append(hold)
    for hold in approved:
        _held_tools.pop(f"{spec.name}_{hold.name}", None)
    return approved


def refusal(name: str) -> str | None:
    """Why tool ``name`` is not served when this process holds it, else ``None``."""
    server = _held_tools.get(name)
    if server is None:
        return None
    return (
        f"tool '{name}' is held back: server '{server}' changed or added it after its tools were approved, "
        f"so it is not served until you review and approve it with: {approve_command(server)}"
    )
