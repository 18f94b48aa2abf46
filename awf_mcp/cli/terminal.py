"""Text from elsewhere (an upstream's tool names and descriptions, a failure's reason) as rich prints it.

:func:`shown` makes it inert (:func:`~awf_mcp.ports.inert_text`: control characters, ANSI
escapes and bidirectional overrides become visible escapes) and escapes rich's markup, so
that ``[red]`` in a description is printed as written, not obeyed.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.markup import escape

from awf_mcp.ports import inert_text


def shown(text: str) -> str:
    """``text`` for a rich table cell or a rich ``print``: inert, its markup escaped."""
    return escape(inert_text(text))


Cell = str | Sequence[str]
"""A table cell: one value, or its lines (a value's own line breaks are shown as escapes)."""


def _lines(cell: Cell) -> list[str]:
    return [cell] if isinstance(cell, str) else list(cell)


def print_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[Cell]]) -> None:
    """Print a listing: a rich table on a terminal; else whole values, tab-separated, one row a line.

    The one convention of every listing (``tools list``, ``plugins list``, ``servers list``,
    ``prompts list``, ``resources list``): in a pipe nothing is cut to the width, so a name or a
    status can be grepped and copied. The first line names the columns; the lines of a cell are
    joined with ``"; "``. Every value is made inert here (:func:`~awf_mcp.ports.inert_text`: a
    line break, tab or escape in an upstream's name shows as ``\\x0a``...), so a row is one line
    whatever it holds; ``--json`` is the form for programs.
    """
    import sys

    if not sys.stdout.isatty():
        lines = ["\t".join(columns)]
        for row in rows:
            lines.append("\t".join("; ".join(inert_text(line) for line in _lines(cell)) for cell in row))
        print("\n".join(lines))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(*columns, title=title, title_justify="left")
    for row in rows:
        table.add_row(*("\n".join(shown(line) for line in _lines(cell)) for cell in row))
    Console(highlight=False).print(table)
