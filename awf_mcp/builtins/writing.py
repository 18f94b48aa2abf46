"""The Write and Edit tools: whole-file writes and literal replacements, both atomic.

Contract
--------
* Write stores ``content`` (UTF-8) at ``path``, creating missing parent
  directories inside the root, refusing content over :data:`MAX_FILE_BYTES`.
  The result starts with ``OK`` and says whether the file was created or
  overwritten and how many bytes it now holds.
* Edit replaces the literal text ``old`` by ``new``: exactly one occurrence, or
  all of them with ``replace_all``. Absent ``old``, an ambiguous ``old``, an
  empty ``old``, ``old == new`` and files (before or after) over
  :data:`MAX_FILE_BYTES` are refused without touching the file. Bytes that are
  not valid UTF-8 survive an edit unchanged.
* Both go through :func:`~awf_mcp.builtins.fileio.writing`: an Edit reads,
  changes and writes the file holding its writer lock, so concurrent Edits and
  Writes of one file run one after another and every ``OK`` is true. A reader
  sees the old content or the new one, never a mix (except for a file with
  several hard links, rewritten in place), and a failure leaves the original
  intact and no temporary file behind. Owner, group and extended attributes are
  kept; setuid, setgid and file capabilities are cleared as the kernel does on a
  write.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from awf_mcp.builtins.args import bool_argument, optional_int, required_string
from awf_mcp.builtins.editing import MAX_SHOWN, describe_change, explain_miss
from awf_mcp.builtins.fileio import atomic_write, open_regular, read_at_most, writing
from awf_mcp.builtins.limits import MAX_FILE_BYTES, MIB
from awf_mcp.builtins.sandbox import Sandbox, printable, quote_path
from awf_mcp.ports import ToolError, ToolResult

_LIMIT_TEXT = f"{MAX_FILE_BYTES // MIB} MiB"


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        raise ToolError(f"{what} is not valid Unicode text: {exc.reason} at index {exc.start}") from None


def write_file(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Write tool."""
    shown = required_string(arguments, "path")
    content = required_string(arguments, "content")
    real = sandbox.resolve(shown)
    sandbox.check_writable(real, shown)
    data = _encode(content, "content")
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            f"content is {len(data):,} bytes; Write accepts at most {_LIMIT_TEXT} ({MAX_FILE_BYTES:,} bytes)"
        )
    outcome = atomic_write(sandbox, real, data, shown, make_parents=True)
    verb = "created" if outcome.created else "overwrote"
    return ToolResult.text(f"OK: {verb} {printable(sandbox.display(real))} ({outcome.size:,} bytes)")


def edit_file(sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
    """Run the Edit tool."""
    shown = required_string(arguments, "path")
    old = required_string(arguments, "old")
    new = required_string(arguments, "new")
    replace_all = bool_argument(arguments, "replace_all")
    expected = optional_int(arguments, "expected_replacements", minimum=1)
    if not old:
        raise ToolError("old must not be empty: to create or overwrite a whole file use Write")
    if old == new:
        raise ToolError("old and new are identical: there is nothing to change")
    real = sandbox.resolve(shown)
    sandbox.check_writable(real, shown)
    with writing(sandbox, real, shown, make_parents=False) as target:
        count, text = _apply_edit(target.replace, sandbox, real, shown, old, new, replace_all, expected)
    noun = "occurrence" if count == 1 else "occurrences"
    shown_places = "" if count <= MAX_SHOWN else f" (the first {MAX_SHOWN} shown)"
    summary = f"OK: replaced {count} {noun} in {printable(sandbox.display(real))}{shown_places}"
    return ToolResult.text(f"{summary}\n{describe_change(text, old, new)}")


def _apply_edit(
    store: Callable[[bytes], object],
    sandbox: Sandbox,
    real: str,
    shown: str,
    old: str,
    new: str,
    replace_all: bool,
    expected: int | None,
) -> tuple[int, str]:
    """Read the file, replace ``old`` by ``new``, ``store`` the result; the count and the text before."""
    fd, info = open_regular(sandbox, real, shown)
    try:
        if info.st_size > MAX_FILE_BYTES:
            raise ToolError(
                f"{quote_path(shown)} is {info.st_size:,} bytes; Edit refuses files over {_LIMIT_TEXT}"
            )
        raw = read_at_most(fd, MAX_FILE_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        raise ToolError(f"{quote_path(shown)} is over {_LIMIT_TEXT}; Edit refuses files over {_LIMIT_TEXT}")
    text = raw.decode("utf-8", "surrogateescape")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"old text not found in {quote_path(shown)}: {explain_miss(text, old)}")
    if expected is not None and count != expected:
        raise ToolError(
            f"old text occurs {count} times in {quote_path(shown)}, but expected_replacements is {expected}; "
            "nothing was changed"
        )
    if count > 1 and not replace_all and expected is None:
        raise ToolError(
            f"old text occurs {count} times in {quote_path(shown)}; add surrounding lines to make it "
            "unique, or set replace_all=true to replace every occurrence"
        )
    data = _encode(text.replace(old, new), "the edited file")
    if len(data) > MAX_FILE_BYTES:
        raise ToolError(
            f"the edited file would be {len(data):,} bytes; Edit refuses to produce files over {_LIMIT_TEXT}"
        )
    store(data)
    return count, text
