"""The limits of the built-in tools, in one place so descriptions and code agree."""

from __future__ import annotations

MIB = 1024 * 1024
"""One mebibyte."""

MAX_FILE_BYTES = 5 * MIB
"""Read returns at most this much text; Write and Edit refuse content (or files) over it."""

READ_RESULT_BYTES = 6 * MIB
"""The most bytes the text of one Read result may take on the wire (as a JSON string).

Counted while the result is built: UTF-8 bytes plus JSON escapes, so a Latin-1
file (each byte one 3-byte U+FFFD) or control characters (6-byte ``\\u00XX``) do
not triple the frame. A little over :data:`MAX_FILE_BYTES`, so that ordinary text
(each newline two bytes as ``\\n``) still gets its full 5 MiB page.
One parameter, so that a per-client budget can replace it.
"""

MAX_IMAGE_BYTES = 5 * MIB
"""The largest image Read returns as image content."""

READ_DEFAULT_LINES = 2000
"""Lines Read returns when no ``limit`` is given."""

BINARY_SNIFF_BYTES = 8192
"""A NUL byte in this many leading bytes marks a file as binary."""

BASH_DEFAULT_TIMEOUT = 120
"""Seconds a Bash command may run when no ``timeout_seconds`` is given."""

BASH_MAX_TIMEOUT = 600
"""The largest ``timeout_seconds`` Bash accepts."""

BASH_FILE_BYTES = 64 * MIB
"""Bytes of stdout, and separately of stderr, that Bash keeps in its output file for Read."""

BASH_OUTPUT_DIR_BYTES = 256 * MIB
"""Bytes all of a server's Bash output files take together: the files of finished commands and
jobs are removed, oldest first, to make room for new output."""

BASH_KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when Bash stops a process group."""

GLOB_MAX_RESULTS = 1000
"""Paths Glob returns at most."""

GREP_MAX_LINES = 10_000
"""Output lines Grep returns at most in ``content`` mode (a page; ``offset`` reaches the next)."""

LINE_SHOW_CHARS = 2_000
"""Characters of one line Read and Grep show; the rest is cut with a marker that counts it."""

GREP_MAX_LINE_BYTES = MIB
"""Lines longer than this are not searched by Grep."""

GREP_MAX_CONTEXT = 100
"""The largest ``context``/``before_context``/``after_context`` Grep accepts."""

MAX_BRACE_EXPANSIONS = 1000
"""The most alternatives a ``{a,b}`` pattern may expand to."""

SEARCH_OUTPUT_BYTES = 2 * MIB
"""Bytes of text Glob and Grep return at most (UTF-8, newlines counted); the output stops with a
note once it is spent. The one parameter of their output budget."""

GREP_SHOWN_LINE_BYTES = LINE_SHOW_CHARS
"""Bytes of a matching (or context) line Grep shows (as many as Read shows characters); the rest is
cut with a marker."""

MAX_BRACE_DEPTH = 32
"""The deepest nesting of ``{a,b}`` groups a pattern may have."""

MAX_GLOB_FILTER_CHARS = 4096
"""The longest ``glob`` filter Grep accepts (the Glob tool's patterns are path arguments)."""

MAX_BRACE_EXPANDED_CHARS = 64 * 1024
"""The most characters the alternatives of a ``{a,b}`` pattern may add up to."""

MAX_GLOB_OFFSET = 100_000
"""The largest ``offset`` Glob accepts: the newest matches up to it are held while walking."""
