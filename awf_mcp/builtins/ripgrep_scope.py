"""The tree ``rg`` searches: whether it may search it, the ignore rules it gets, the paths it prints.

Contract
--------
* :func:`usable_for_tree` says whether ripgrep can stand in for the pure-Python
  walk below ``target``: ``rg`` is found, and (when ``.gitignore`` files apply)
  the rules of every ``.gitignore`` between the root and ``target`` can be
  rewritten exactly for ``target`` (:func:`ancestor_rules`). ``rg`` is never
  allowed to read ignore files above the searched tree (they may lie outside
  the roots): those files are read here, through the sandbox, and their rules
  handed to ``rg`` in a file of their own (:func:`ignore_rules_file`).
* :func:`listed_path` maps a path ``rg`` printed (``./rel``, relative to the
  directory it was started in) back to a real path below that directory, and
  refuses one that could leave it (``/../``, ``/./``). It is only the first of
  the checks each printed path goes through before it is used (see
  :mod:`awf_mcp.builtins.ripgrep_matches` and
  :class:`awf_mcp.builtins.ripgrep_search._FileStats`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from typing import Any

from awf_mcp.builtins.ripgrep import ripgrep_binary
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.builtins.walk import gitignore_lines
from awf_mcp.ports import ToolError

_MAGIC = frozenset("*?[\\")


def _rebase_rule(line: str, below: list[str]) -> str | None:
    """Gitignore ``line`` of an ancestor, rewritten for the directory ``below`` it ("" to drop it).

    ``None`` when the rule cannot be rewritten exactly (a wildcard in the part
    of an anchored rule that names ``below``'s path, or a rule that ignores
    ``below`` or one of its parents).
    """
    stripped = line.rstrip("\r")
    if not stripped.strip() or stripped.startswith("#"):
        return ""
    negated = stripped.startswith("!")
    body = stripped[1:] if negated else stripped
    core = body.rstrip("/")
    if "/" not in core or core.lstrip("/").startswith("**/"):
        return stripped  # matches at any depth: the same rule below
    parts = core.lstrip("/").split("/")
    prefix = parts[: len(below)]
    if any(_MAGIC.intersection(part) for part in prefix):
        return None
    if len(parts) <= len(below):
        return None if parts == below[: len(parts)] else ""
    if prefix != below:
        return ""
    rebased = "/" + "/".join(parts[len(below) :]) + ("/" if body.endswith("/") else "")
    return ("!" if negated else "") + rebased


def ancestor_rules(sandbox: Sandbox, target: str) -> list[str] | None:
    """The ``.gitignore`` rules of ``target``'s ancestors up to its root, rebased onto ``target``.

    Shallower files come first, so a deeper rule (later) overrides a shallower
    one as in git. ``None`` when a rule cannot be rebased exactly.
    """
    root = sandbox.root_of(target)
    if target == root:
        return []
    names = target[len(root.rstrip("/")) + 1 :].split("/")
    rules: list[str] = []
    for depth in range(len(names)):
        directory = os.path.join(root, *names[:depth])
        try:
            fd = sandbox.open_dir(directory)
        except ToolError:
            return None
        try:
            lines = gitignore_lines(fd)
        finally:
            os.close(fd)
        for line in lines or ():
            rebased = _rebase_rule(line, names[depth:])
            if rebased is None:
                return None
            if rebased:
                rules.append(rebased)
    return rules


def usable_for_tree(sandbox: Sandbox, target: str, *, gitignore: bool) -> tuple[str, list[str]] | None:
    """``rg`` and the ancestors' rules when ripgrep can search below ``target``, else ``None``.

    ``rg`` never reads ignore files above the searched directory (they may lie
    outside the roots): the ``.gitignore`` files between the root and
    ``target`` are read here, through the sandbox, and handed to ``rg``
    rebased. When one cannot be rebased exactly, the pure-Python engine runs.
    """
    binary = ripgrep_binary()
    if binary is None:
        return None
    if not gitignore:
        return binary, []
    rules = ancestor_rules(sandbox, target)
    return None if rules is None else (binary, rules)


def ignore_rules_file(rules: Sequence[str]) -> Any:
    """A temporary ignore file holding ``rules`` (closed, and so removed, by the caller)."""
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", suffix=".gitignore")  # noqa: SIM115
    handle.write("\n".join(rules) + "\n")
    handle.flush()
    return handle


def listed_path(prefix: str, raw: bytes) -> str | None:
    """The real path of ``./rel`` as ``rg`` printed it below ``prefix``, when it stays below it."""
    relative = os.fsdecode(raw)
    if not relative.startswith("./") or "/../" in relative or "/./" in relative[1:]:
        return None
    return prefix + relative[2:]
