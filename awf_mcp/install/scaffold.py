"""``awf-mcp plugins init NAME``: write a new, working plugin distribution from the templates.

Contract
--------
:func:`scaffold_plugin` creates ``<destination>/awf-plugin-<name>/`` with a
``pyproject.toml`` declaring the entry point ``<name> = "awf_plugin_<name>"``
in group ``awf_mcp``, the package ``awf_plugin_<name>`` (one ``@tool``
function, ``<name>_hello``, and the ``awf_mcp_register_tools`` hook), a README,
a ``.gitignore`` and ``tests/test_<name>.py``, which passes under pytest once
the directory is installed (``pip install -e``). It returns the new directory.

It raises :class:`ScaffoldError` (a :class:`ValueError`) with one sentence when
the name is not a valid plugin name or the directory already exists; nothing
is written in either case. Files are written only after every template has
been rendered, into a directory that did not exist before.

The templates live in ``awf_mcp/install/templates/plugin/`` (package data): every file
ends in ``.tmpl``, so neither pytest nor ruff mistakes them for project code.
In a path, ``__package__`` becomes ``awf_plugin_<name>``, ``__name__`` becomes
``<name>`` and a leading ``gitignore`` becomes ``.gitignore``; in the text,
``{{name}}``, ``{{NAME}}`` and ``{{awf_version}}`` are replaced.

Imports: the standard library only.
"""

from __future__ import annotations

import re
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

TEMPLATE_SUFFIX = ".tmpl"
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")
MAX_NAME_LENGTH = 32
RESERVED_NAMES = frozenset({"builtin"})
"""Plugin names awf-mcp keeps for itself."""


class ScaffoldError(ValueError):
    """The plugin cannot be scaffolded: a bad name or an existing directory."""


def suggested_name(name: str) -> str | None:
    """The valid plugin name ``name`` most likely meant, or ``None``.

    ``awf-plugin-demo`` (the distribution's name) means ``demo``; ``My-Tools`` means ``my_tools``.
    """
    bare = re.sub(r"^awf[-_]plugin[-_]", "", name.strip().lower())
    bare = re.sub(r"[^a-z0-9_]+", "_", bare).strip("_")
    if bare and bare != name and NAME_PATTERN.match(bare) and len(bare) <= MAX_NAME_LENGTH:
        return bare if bare not in RESERVED_NAMES else None
    return None


def check_plugin_name(name: str) -> None:
    """Raise :class:`ScaffoldError` unless ``name`` can name a plugin (and prefix its tools)."""
    if not NAME_PATTERN.match(name):
        suggestion = suggested_name(name)
        example = (
            f"did you mean {suggestion!r}? awf-mcp plugins init {suggestion}"
            if suggestion
            else "for example: my_tools"
        )
        raise ScaffoldError(
            f"plugin name {name!r} is invalid: use lowercase letters, digits and '_', "
            f"starting with a letter ({example})"
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ScaffoldError(
            f"plugin name {name!r} is too long: use at most {MAX_NAME_LENGTH} characters, "
            "since it prefixes every tool name"
        )
    if name in RESERVED_NAMES:
        raise ScaffoldError(f"plugin name {name!r} is reserved for awf-mcp's own tools: choose another")


def _templates() -> Traversable:
    return resources.files("awf_mcp.install").joinpath("templates", "plugin")


def _walk(node: Traversable, parts: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Traversable]]:
    found: list[tuple[tuple[str, ...], Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda item: item.name):
        if child.is_dir():
            if child.name != "__pycache__":
                found.extend(_walk(child, (*parts, child.name)))
        elif child.name.endswith(TEMPLATE_SUFFIX):
            found.append(((*parts, child.name), child))
    return found


def _target_part(part: str, name: str) -> str:
    part = part.removesuffix(TEMPLATE_SUFFIX)
    if part == "gitignore":
        return ".gitignore"
    return part.replace("__package__", f"awf_plugin_{name}").replace("__name__", name)


def _render(text: str, name: str) -> str:
    from awf_mcp import __version__

    replacements = {"{{name}}": name, "{{NAME}}": name.upper(), "{{awf_version}}": __version__}
    for marker, value in replacements.items():
        text = text.replace(marker, value)
    return text


def scaffold_plugin(name: str, destination: Path) -> Path:
    """Create ``destination/awf-plugin-<name>/`` from the templates; see the module docstring."""
    check_plugin_name(name)
    root = Path(destination) / f"awf-plugin-{name}"
    if root.exists():
        raise ScaffoldError(f"{root} already exists: choose another name or --dir, or remove it first")
    rendered = [
        (Path(*(_target_part(part, name) for part in parts)), _render(item.read_text(encoding="utf-8"), name))
        for parts, item in _walk(_templates())
    ]
    if not rendered:
        raise ScaffoldError("the plugin templates are missing from this awf-mcp installation; reinstall it")
    root.mkdir(parents=True)
    for relative, text in rendered:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
