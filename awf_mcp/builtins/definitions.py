"""What the six built-in tools look like in ``tools/list``: descriptions, schemas, annotations.

Argument names are those of the Go original (``path, offset, limit``;
``path, content``; ``path, old, new, replace_all``; ``command, cwd,
timeout_seconds``; ``pattern, cwd``; ``pattern, path, glob, output_mode,
case_insensitive``), Grep adding ``context``, ``before_context``,
``after_context``, ``head_limit`` and ``include_ignored``. Every limit quoted
here comes from :mod:`awf_mcp.builtins.limits`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from awf_mcp.builtins.limits import (
    BASH_DEFAULT_TIMEOUT,
    BASH_MAX_TIMEOUT,
    GLOB_MAX_RESULTS,
    GREP_MAX_CONTEXT,
    GREP_MAX_LINE_BYTES,
    GREP_MAX_LINES,
    GREP_SHOWN_LINE_BYTES,
    LINE_SHOW_CHARS,
    MAX_FILE_BYTES,
    MAX_IMAGE_BYTES,
    MIB,
    READ_DEFAULT_LINES,
)
from awf_mcp.ports import BUILTIN_SOURCE, ToolAnnotations, ToolDefinition

_FILE_MIB = MAX_FILE_BYTES // MIB
_PATH_RULE = (
    "Relative paths are relative to the workspace root; absolute paths must lie inside it "
    "(symbolic links are followed and must stay inside too)."
)


def _schema(properties: dict[str, dict[str, Any]], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _string(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _integer(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "integer", "description": description, **extra}


def _boolean(description: str) -> dict[str, Any]:
    return {"type": "boolean", "description": description, "default": False}


READ = ToolDefinition(
    name="Read",
    description=(
        "Read a file from the workspace. Text comes back as stored (UTF-8), starting at 0-based line "
        f"`offset` (default 0; Grep's line N is offset N-1) and holding at most `limit` lines (default "
        f"{READ_DEFAULT_LINES}) and at most this client's output budget, in whole lines. "
        "`line_numbers` prefixes each line with its 1-based number and a tab. "
        f"A line over {LINE_SHOW_CHARS:,} characters is cut with a marker; `column` reads one long line "
        "(minified code, one-line JSON) from that character on, page by page. When more remains, a "
        "final note in square brackets says what was shown and the `offset` (or `column`) to pass next. "
        f"PNG, JPEG, GIF and WebP files (up to {MAX_IMAGE_BYTES // MIB} MiB) come back as an image. "
        "Other binary files are reported as 'binary file, N bytes' instead of being dumped. " + _PATH_RULE
    ),
    input_schema=_schema(
        {
            "path": _string("The file to read. " + _PATH_RULE),
            "offset": _integer("0-based line to start at (default 0).", minimum=0),
            "limit": _integer(
                f"Maximum number of lines to return (default {READ_DEFAULT_LINES}).", minimum=1
            ),
            "line_numbers": _boolean("Prefix each line with its 1-based line number and a tab."),
            "column": _integer(
                "Read only line `offset`, from this 0-based character on (for lines too long to show "
                "whole); the note names the next column.",
                minimum=0,
            ),
        },
        ["path"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Read file", read_only=True, destructive=False, idempotent=True, open_world=False
    ),
)

WRITE = ToolDefinition(
    name="Write",
    description=(
        "Create or overwrite a file with `content` (UTF-8). Missing parent directories are created. "
        "The write is atomic: readers see the old content or the new, never a mix; an existing file "
        f"keeps its permissions. Content over {_FILE_MIB} MiB is refused. Returns 'OK: created ...' "
        "or 'OK: overwrote ...' with the byte count. To change part of a file, prefer Edit. " + _PATH_RULE
    ),
    input_schema=_schema(
        {
            "path": _string("The file to write. " + _PATH_RULE),
            "content": _string(f"The complete new content of the file (at most {_FILE_MIB} MiB)."),
        },
        ["path", "content"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Write file", read_only=False, destructive=True, idempotent=True, open_world=False
    ),
)

EDIT = ToolDefinition(
    name="Edit",
    description=(
        "Replace the exact text `old` with `new` in a file (literal, not a regular expression; "
        "whitespace and indentation must match). `old` must occur exactly once unless `replace_all` "
        "is true; otherwise the call fails saying how many times it occurs, and you should add "
        "surrounding lines to make it unique. Fails without touching the file when `old` is absent, "
        f"empty or equal to `new`, or the file is over {_FILE_MIB} MiB. When `old` is not found, the error "
        "gives the line of the closest match and what differs (line endings, tabs, indentation, trailing "
        "whitespace, or the one differing line). `expected_replacements` makes the edit fail unless "
        "`old` occurs exactly that many times (then all are replaced). Atomic; permissions kept. "
        "Returns how many occurrences were replaced and a small diff with line numbers. " + _PATH_RULE
    ),
    input_schema=_schema(
        {
            "path": _string("The file to edit. " + _PATH_RULE),
            "old": _string("The exact text to find (must not be empty)."),
            "new": _string("The text to put in its place (must differ from old)."),
            "replace_all": _boolean("Replace every occurrence instead of requiring exactly one."),
            "expected_replacements": _integer(
                "How many times `old` must occur; the edit is refused otherwise (all are replaced).",
                minimum=1,
            ),
        },
        ["path", "old", "new"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Edit file", read_only=False, destructive=True, idempotent=False, open_world=False
    ),
)

BASH = ToolDefinition(
    name="Bash",
    description=(
        "Run a shell command with /bin/bash -c in `cwd` (default: the workspace root; must lie inside "
        "it), stdin empty. The command runs in its own process group; after `timeout_seconds` "
        f"(default {BASH_DEFAULT_TIMEOUT}, at most {BASH_MAX_TIMEOUT}) or when the call is cancelled, "
        "the whole group is killed. The result starts with 'exit code N' and then shows "
        "'--- stdout ---' and '--- stderr ---'. Output over this client's output budget keeps each "
        "stream's start and end; a note names a file with the whole stream, which Read accepts, and the "
        "offset where the cut starts. A non-zero exit code, a timeout or a kill is reported as an error. "
        "For dev servers, watchers and long builds set `run_in_background`: the call returns at once "
        "with a job id for BashOutput and KillShell."
    ),
    input_schema=_schema(
        {
            "command": _string("The shell command line to run."),
            "cwd": _string("Working directory (default: the workspace root). " + _PATH_RULE),
            "timeout_seconds": _integer(
                f"Seconds before the command is killed (default {BASH_DEFAULT_TIMEOUT}, "
                f"1 to {BASH_MAX_TIMEOUT}).",
                minimum=1,
                maximum=BASH_MAX_TIMEOUT,
            ),
            "run_in_background": _boolean(
                "Start the command as a background job and return its id at once (no timeout); read "
                "its output with BashOutput, stop it with KillShell."
            ),
        },
        ["command"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Run shell command", read_only=False, destructive=True, idempotent=False, open_world=True
    ),
)


def contained_bash(network: Sequence[str] | None) -> ToolDefinition:
    """:data:`BASH` with what its sandbox allows said in the description (``network``: the hosts
    reachable through the proxy, ``["*"]`` all, empty none)."""
    if network and "*" in network:
        reach = "The network is open."
    elif network:
        reach = (
            "The network is off except these hosts, through a proxy that HTTP_PROXY and HTTPS_PROXY "
            f"name: {', '.join(network)}. Where the client can ask the user, a request to another host "
            "through that proxy asks the user first."
        )
    else:
        reach = (
            "The network is off. Where the client can ask the user, HTTP_PROXY and HTTPS_PROXY name a "
            "proxy, and a request through it asks the user first."
        )
    note = (
        " It runs in a sandbox: it reads everything but credential stores (~/.ssh, ~/.aws, ...), and "
        "writes only inside the workspace roots, $TMPDIR (a private temporary directory; /tmp itself "
        "is read-only) and package caches (~/.npm, ~/.cache/pip, ...); .git/hooks and .git/config "
        f"stay read-only. {reach} Secret environment variables are not passed. A 'Permission "
        "denied', 'Read-only file system' or refused connection outside these is the sandbox, not a "
        "broken machine: tell the user, who can allow it in the [sandbox] table of the awf-mcp config."
    )
    return dataclasses.replace(BASH, description=BASH.description + note)


_JOB_ID = {"job_id": _string("The id Bash returned for the background job, e.g. 'bash_1'.")}

BASH_OUTPUT = ToolDefinition(
    name="BashOutput",
    description=(
        "Read the output a background job (Bash with run_in_background) produced since the last "
        "BashOutput of that job, within this client's output budget (the rest waits for the next "
        "call), and its state: running, or exited with its exit code. An exited job with a non-zero "
        "code is reported as an error."
    ),
    input_schema=_schema(_JOB_ID, ["job_id"]),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Read background job output",
        read_only=True,
        destructive=False,
        idempotent=False,
        open_world=False,
    ),
)

KILL_SHELL = ToolDefinition(
    name="KillShell",
    description=(
        "Stop a background job (Bash with run_in_background): its whole process group gets SIGTERM, "
        "then SIGKILL. Its output stays readable with BashOutput."
    ),
    input_schema=_schema(_JOB_ID, ["job_id"]),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Stop background job", read_only=False, destructive=True, idempotent=True, open_world=False
    ),
)

_ESCAPED_NAMES = (
    "File names that are not valid UTF-8 or hold control characters are shown with those bytes "
    "escaped as \\xNN (e.g. caf\\xe9.txt), and a path argument may name them so."
)

GLOB = ToolDefinition(
    name="Glob",
    description=(
        "Find files by glob pattern, e.g. '**/*.py', 'src/**/*.{ts,tsx}', 'docs/*.md'. `*` and `?` "
        "match within one path segment (names starting with a dot included), `**` matches any number "
        "of directories, `[abc]` is a character class, `{a,b}` lists alternatives; a pattern ending in "
        "'/' matches directories instead of files; backslashes are refused (write `[*]` for a literal "
        "`*`). The pattern is relative to `cwd` (default: the workspace root); an absolute pattern is "
        "allowed only without `cwd` and inside the workspace. "
        "Hidden files are included, .git is skipped, .gitignore does not apply, and symbolic links are "
        "neither followed nor listed. Returns matching paths "
        f"relative to the workspace root, one a line, newest first, at most {GLOB_MAX_RESULTS:,} "
        "and this client's output budget a page; a note then says how many matched and the `offset` "
        "of the next page. " + _ESCAPED_NAMES
    ),
    input_schema=_schema(
        {
            "pattern": _string("The glob pattern, relative to cwd."),
            "cwd": _string("Directory to search from (default: the workspace root). " + _PATH_RULE),
            "offset": _integer("Skip this many matches first: the next page (default 0).", minimum=0),
        },
        ["pattern"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Find files", read_only=True, destructive=False, idempotent=True, open_world=False
    ),
)

GREP = ToolDefinition(
    name="Grep",
    description=(
        "Search file contents with a regular expression (RE2 syntax: like Perl/Python but without "
        "lookaround or backreferences; always linear time). Searches `path` (a file or a directory, "
        "default: the workspace root) recursively, hidden files included, skipping .git, symbolic links, "
        "binary files (a NUL byte near the start) and files ignored by .gitignore (set include_ignored=true "
        "to search those too; .ignore, .rgignore and global git excludes are not used). `output_mode`: "
        "'content' "
        "(default) prints 'path:line:text' per matching line, with 'path-line-text' context lines and "
        "'--' between groups; 'files_with_matches' prints matching file paths; 'count' prints "
        f"'path:N'. Paths are relative to the workspace root. Lines over {GREP_MAX_LINE_BYTES // MIB} "
        f"MiB are not searched; shown lines are cut after {GREP_SHOWN_LINE_BYTES:,} bytes. Output pages: "
        f"it stops after {GREP_MAX_LINES:,} lines, `head_limit`, or this client's output budget, and a "
        "final note gives the `offset` that shows the next page. " + _ESCAPED_NAMES
    ),
    input_schema=_schema(
        {
            "pattern": _string("The regular expression (RE2 syntax), matched against each line."),
            "path": _string("File or directory to search (default: the workspace root). " + _PATH_RULE),
            "glob": _string(
                "Only search files matching this glob: without '/' it matches the file name "
                "('*.py', '*.{ts,tsx}'), with '/' the path below `path` ('src/**/*.go'); a leading '!' "
                "excludes matching files instead."
            ),
            "output_mode": _string(
                "'content' (default), 'files_with_matches' or 'count'.",
                enum=["content", "files_with_matches", "count"],
            ),
            "case_insensitive": _boolean("Match letters regardless of case."),
            "context": _integer(
                f"Lines of context before and after each match (content mode; 0 to {GREP_MAX_CONTEXT}).",
                minimum=0,
                maximum=GREP_MAX_CONTEXT,
            ),
            "before_context": _integer(
                "Lines of context before each match; overrides `context` for that side.",
                minimum=0,
                maximum=GREP_MAX_CONTEXT,
            ),
            "after_context": _integer(
                "Lines of context after each match; overrides `context` for that side.",
                minimum=0,
                maximum=GREP_MAX_CONTEXT,
            ),
            "head_limit": _integer(
                "Return at most this many output lines (content) or entries (other modes).", minimum=1
            ),
            "offset": _integer(
                "Skip this many output lines (content) or entries (other modes) first: the next page "
                "starts where the previous note says (default 0).",
                minimum=0,
            ),
            "include_ignored": _boolean("Also search files that .gitignore files exclude."),
        },
        ["pattern"],
    ),
    source=BUILTIN_SOURCE,
    annotations=ToolAnnotations(
        title="Search file contents", read_only=True, destructive=False, idempotent=True, open_world=False
    ),
)

DEFINITIONS: tuple[ToolDefinition, ...] = tuple(
    sorted(
        (READ, WRITE, EDIT, BASH, BASH_OUTPUT, KILL_SHELL, GLOB, GREP), key=lambda definition: definition.name
    )
)
"""The built-in tool definitions, sorted by name."""
