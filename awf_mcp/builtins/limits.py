"""The limits of the built-in tools, in one place so descriptions and code agree."""

from __future__ import annotations

MIB = 1024 * 1024
"""One mebibyte."""

MAX_FILE_BYTES = 5 * MIB
"""Read returns at most this much text; Write and Edit refuse content (or files) over it."""

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

BASH_OUTPUT_BYTES = MIB
"""Bytes of stdout, and separately of stderr, that Bash keeps."""

BASH_KILL_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL when Bash stops a process group."""

GLOB_MAX_RESULTS = 1000
"""Paths Glob returns at most."""

GREP_MAX_LINES = 10_000
"""Output lines Grep returns at most in ``content`` mode."""

GREP_MAX_LINE_BYTES = MIB
"""Lines longer than this are not searched by Grep."""

GREP_MAX_CONTEXT = 100
"""The largest ``context``/``before_context``/``after_context`` Grep accepts."""

MAX_BRACE_EXPANSIONS = 1000
"""The most alternatives a ``{a,b}`` pattern may expand to."""

SEARCH_OUTPUT_BYTES = 2 * MIB
"""Bytes of text Glob and Grep return at most (UTF-8, newlines counted); the output stops with a
note once it is spent. The one parameter of their output budget."""

GREP_SHOWN_LINE_BYTES = 2000
"""Bytes of a matching (or context) line Grep shows; the rest is cut with a marker."""

MAX_BRACE_DEPTH = 32
"""The deepest nesting of ``{a,b}`` groups a pattern may have."""

MAX_GLOB_FILTER_CHARS = 4096
"""The longest ``glob`` filter Grep accepts (the Glob tool's patterns are path arguments)."""

MAX_BRACE_EXPANDED_CHARS = 64 * 1024
"""The most characters the alternatives of a ``{a,b}`` pattern may add up to."""
