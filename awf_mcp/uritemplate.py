"""URI templates (RFC 6570, levels 1 to 3) as awf-mcp matches them: in one pass, never backtracking.

A resource template (``sqlite://schema/{table}``) is parsed once (:func:`parse_template`) into its
literal parts and expressions; a URI then matches it or not (:func:`template_match`), in time
linear in the URI's length times the template's parts, so neither a template an upstream server
lists nor a URI a client sends can make matching slow. A template with more than
:data:`MAX_TEMPLATE_EXPRESSIONS` expressions, or a malformed one, parses to ``None``: it is
listed but never matched.

Users: the ``@resource`` authoring API (:mod:`awf_mcp.authoring`) and the catalog that routes
reads (:mod:`awf_mcp.core.catalog`). Imports: the standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

MAX_TEMPLATE_EXPRESSIONS = 32
"""A resource template with more expressions than this is listed but never matched."""

_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class TemplatePart:
    """A literal part of a URI template, or one expression (``operator`` and variable ``names``)."""

    literal: str = ""
    operator: str = ""
    names: tuple[str, ...] = ()


def parse_template(template: str) -> list[TemplatePart] | None:
    """The literal parts and expressions of an RFC 6570 template, or ``None`` when it is malformed
    or has more than :data:`MAX_TEMPLATE_EXPRESSIONS` expressions."""
    parts: list[TemplatePart] = []
    at = 0
    for found in _EXPRESSION.finditer(template):
        if found.start() > at:
            parts.append(TemplatePart(literal=template[at : found.start()]))
        names = tuple(name.strip().rstrip("*").split(":")[0] for name in found.group(2).split(","))
        if not all(names):
            return None
        parts.append(TemplatePart(operator=found.group(1), names=names))
        at = found.end()
        if sum(1 for part in parts if part.names) > MAX_TEMPLATE_EXPRESSIONS:
            return None
    rest = template[at:]
    if "{" in rest or "}" in rest:
        return None
    if rest:
        parts.append(TemplatePart(literal=rest))
    return parts


def template_match(parts: Sequence[TemplatePart], uri: str) -> dict[str, str] | None:
    """The variables of ``uri`` under a parsed template, or ``None`` when it does not match.

    One pass, left to right: an expression takes the text up to the next occurrence of the
    literal after it (all the rest when none follows); a simple expression (no ``+`` or ``#``)
    takes no ``/``, ``?`` or ``#``. Linear in the URI's length times the template's parts, so a
    template (or a URI) chosen to backtrack cannot.
    """
    values: dict[str, str] = {}
    at = 0
    for index, part in enumerate(parts):
        if not part.names:
            if not uri.startswith(part.literal, at):
                return None
            at += len(part.literal)
            continue
        following = parts[index + 1] if index + 1 < len(parts) else None
        if following is None:
            end = len(uri)
        elif not following.names:
            end = uri.find(following.literal, at)
            if end < 0:
                return None
        else:
            end = _expression_end(uri, at, part)
        value = uri[at:end]
        if part.operator == "" and any(c in value for c in "/?#"):
            return None
        values[part.names[0]] = value
        at = end
    return values if at == len(uri) else None


def _expression_end(uri: str, at: int, part: TemplatePart) -> int:
    """Where an expression followed directly by another ends: its simple value stops at a ``/``."""
    if part.operator in ("+", "#"):
        return len(uri)
    stop = [i for i in (uri.find(c, at) for c in "/?#") if i >= 0]
    return min(stop) if stop else len(uri)
