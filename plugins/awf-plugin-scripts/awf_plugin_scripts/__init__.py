"""awf-mcp plugin ``scripts``: each executable script in a directory becomes a tool.

A dynamic :class:`~awf_mcp.ToolProvider`, the counterpart of ``@tool`` functions
for tool sets that are only known at start-up.

Discovery (once, at start-up)
-----------------------------
The directory is the ``dir`` setting (``[plugins.scripts]`` in ``awf-mcp.toml``
or ``AWF_MCP_PLUGIN_SCRIPTS_DIR``), default ``.awf-tools``; a relative path is
resolved against the server's first root. Every regular, executable file in it
(not in subdirectories, not hidden) becomes tool ``scripts_<stem>``, the stem
lower-cased and every run of characters outside ``[a-z0-9_]`` replaced by
``_``. Its description is the text after ``description:`` on a comment line
(``#`` or ``//``) within the first 20 lines, else a generic sentence. Scripts
whose names clash after sanitizing, or would make a name over 64 characters,
are skipped with a warning on stderr. A missing directory means no tools.

Consent (threat model: the agent can write files in the roots)
-------------------------------------------------------------
The agent's Write and Edit can change an existing script (keeping its exec
bit), and it can write ``awf-mcp.toml``, so a script runs only with content the
user approved explicitly. Approvals are SHA-256 digests kept in a JSON file
outside the roots (``approvals`` setting, default
``$XDG_STATE_HOME/awf-mcp/scripts-approved.json``, i.e. ``~/.local/state/...``),
recorded by the user with ``python -m awf_plugin_scripts approve DIR``
(:mod:`awf_plugin_scripts.__main__`). Before every run the script's current
content is hashed and compared with its approval, re-read from the file, so an
approval takes effect without a restart; a script never approved, or whose
content differs, is refused with a sentence saying how to approve it after a
review. Nothing is approved automatically: pointing ``approvals`` at a new file
approves nothing. An approvals file inside a root (where the agent could write
it) is refused: no script runs until ``approvals`` names a file outside the
roots. Without a store (``ScriptTools(..., approvals=None)``, for tests and
embedding) the digests taken at construction are the approval. The check and
the ``exec`` are by name, so a change made in the instant between them is not
caught.

Calls
-----
Input ``{"args": [string, ...]}``. The script runs directly (no shell), with
those arguments, the first root as working directory and stdin closed. Output
is capped (``max_output_bytes``, default 1 MiB per stream; the rest is read and
dropped), the run is killed after ``timeout_seconds`` (default 60) or when the
call is cancelled. The result text is stdout, then stderr under a marker, then
``exit code N``; a non-zero exit or a timeout is an ``isError`` result.
Structured content carries ``exit_code``, ``stdout``, ``stderr``,
``truncated`` and ``timed_out``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import signal
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream

from awf_mcp import PluginContext, ToolContent, ToolDefinition, ToolError, ToolResult, hookimpl

__all__ = [
    "ApprovalStore",
    "Script",
    "ScriptTools",
    "default_approvals_path",
    "digest",
    "discover",
    "sanitize",
]

log = logging.getLogger("awf_plugin_scripts")

PLUGIN = "scripts"
DEFAULT_DIR = ".awf-tools"
DEFAULT_TIMEOUT_SECONDS = 60.0
DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
MAX_NAME_LENGTH = 64
MAX_SCRIPT_BYTES = 16 * 1024 * 1024
APPROVE_COMMAND = "python -m awf_plugin_scripts approve"
HEADER_LINES = 20
_DESCRIPTION = re.compile(r"^\s*(?:#|//)\s*description:\s*(?P<text>.+?)\s*$", re.IGNORECASE)

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "args": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Command-line arguments passed to the script as they are (no shell).",
        }
    },
    "additionalProperties": False,
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "exit_code": {"type": ["integer", "null"]},
        "stdout": {"type": "string"},
        "stderr": {"type": "string"},
        "truncated": {"type": "boolean"},
        "timed_out": {"type": "boolean"},
    },
    "required": ["exit_code", "stdout", "stderr", "truncated", "timed_out"],
}


def sanitize(stem: str) -> str:
    """A script's stem as a tool-name part: lower-case, runs outside ``[a-z0-9_]`` become ``_``."""
    return re.sub(r"[^a-z0-9_]+", "_", stem.lower()).strip("_")


def read_description(path: Path) -> str | None:
    """The ``description:`` comment within the script's first lines, if any."""
    try:
        with path.open("r", encoding="utf-8", errors="replace") as handle:
            for _, line in zip(range(HEADER_LINES), handle, strict=False):
                match = _DESCRIPTION.match(line)
                if match:
                    return match["text"]
    except OSError:
        return None
    return None


@dataclass(frozen=True, slots=True)
class Script:
    """One discovered script and the tool it becomes."""

    path: Path
    definition: ToolDefinition


def discover(directory: Path, source: str = f"plugin:{PLUGIN}") -> list[Script]:
    """The executable scripts directly in ``directory`` as tools, sorted by name."""
    if not directory.is_dir():
        log.info("scripts: no directory %s, so no script tools", directory)
        return []
    found: dict[str, Script] = {}
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or not path.is_file() or not os.access(path, os.X_OK):
            continue
        stem = sanitize(path.stem)
        name = f"{PLUGIN}_{stem}"
        if not stem or len(name) > MAX_NAME_LENGTH:
            log.warning("scripts: skipping %s: it gives no usable tool name (got %r)", path, name)
            continue
        if name in found:
            log.warning("scripts: skipping %s: %s already comes from %s", path, name, found[name].path.name)
            continue
        description = read_description(path) or f"Run the script {path.name} from {directory}."
        definition = ToolDefinition(
            name=name,
            description=description,
            input_schema=INPUT_SCHEMA,
            source=source,
            output_schema=OUTPUT_SCHEMA,
        )
        found[name] = Script(path=path, definition=definition)
    return [found[name] for name in sorted(found)]


def digest(path: Path) -> str | None:
    """The SHA-256 of a script's content (hex), or ``None`` when it cannot be read or is too big."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_SCRIPT_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_SCRIPT_BYTES:
        return None
    return hashlib.sha256(data).hexdigest()


def default_approvals_path() -> Path:
    """``$XDG_STATE_HOME/awf-mcp/scripts-approved.json`` (``~/.local/state`` when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state) / "awf-mcp" / "scripts-approved.json"


class ApprovalStore:
    """The user's approvals: script path -> SHA-256 of the content approved, in a JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> dict[str, str]:
        """The approvals; a missing or unreadable file approves nothing."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            log.warning("scripts: cannot read approvals %s (%s); no script is approved", self.path, exc)
            return {}
        return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}

    def approve(self, entries: Mapping[str, str]) -> None:
        """Record ``entries`` (path -> digest), replacing the file atomically (mode 0600)."""
        approvals = {**self.load(), **entries}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            json.dump(dict(sorted(approvals.items())), handle, indent=1)
        os.replace(temporary, self.path)


def _inside(path: Path, roots: tuple[Path, ...]) -> Path | None:
    for root in roots:
        if path == root or root in path.parents:
            return root
    return None


async def _drain(stream: ByteReceiveStream | None, limit: int, sink: bytearray) -> bool:
    """Read ``stream`` to its end, keeping ``limit`` bytes; True when some were dropped."""
    dropped = False
    if stream is None:
        return dropped
    async for chunk in stream:
        room = limit - len(sink)
        if room > 0:
            sink.extend(chunk[:room])
        if len(chunk) > max(room, 0):
            dropped = True
    return dropped


class ScriptTools:
    """The provider: discovers scripts when constructed, runs one per call."""

    def __init__(
        self,
        directory: Path,
        *,
        cwd: Path,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES,
        approvals: ApprovalStore | None = None,
        roots: tuple[Path, ...] = (),
    ) -> None:
        self.directory = directory
        self.cwd = cwd
        self.timeout_seconds = timeout_seconds
        self.max_output_bytes = max_output_bytes
        self.scripts = {script.definition.name: script for script in discover(directory)}
        self.approvals = approvals
        self.store_problem: str | None = None
        found = {str(s.path): digest(s.path) for s in self.scripts.values()}
        self._startup_digests = found
        if approvals is None:
            return
        store = approvals.path.resolve()
        root = _inside(store, tuple(r.resolve() for r in roots))
        if root is not None:
            self.store_problem = (
                f"the scripts approvals file {store} is inside root {root}, where the agent can change it; "
                "set the plugin's 'approvals' setting to a file outside the roots"
            )
            log.warning("scripts: %s", self.store_problem)
            return
        known = approvals.load()
        for path, value in found.items():
            if known.get(path) != value:
                log.warning(
                    "scripts: %s is not approved in its current content; it will not run until "
                    "the user approves it (%s %s)",
                    path,
                    APPROVE_COMMAND,
                    directory,
                )

    def approved_digest(self, path: Path) -> str | None:
        """The digest the user approved for ``path`` (``None``: not approved)."""
        if self.approvals is None:
            return self._startup_digests.get(str(path))
        return self.approvals.load().get(str(path))

    def refusal(self, script: Script) -> str | None:
        """Why ``script`` may not run now, or ``None`` when its content is the approved one."""
        if self.store_problem:
            return self.store_problem
        current = digest(script.path)
        approved = self.approved_digest(script.path)
        if current is not None and current == approved:
            return None
        if self.approvals is None:
            how = "restart the server to approve its new content"
        else:
            how = f"after reviewing it, approve it with `{APPROVE_COMMAND} {self.directory}`"
        state = "was never approved" if approved is None else "changed since it was approved"
        return f"script {script.path.name} {state}, so it was not run; the user must review it: {how}"

    @classmethod
    def from_plugin(cls, plugin: PluginContext) -> ScriptTools:
        """A provider configured from the plugin's settings and roots."""
        base = Path(plugin.roots[0]) if plugin.roots else Path.cwd()
        directory = Path(str(plugin.setting("dir", DEFAULT_DIR))).expanduser()
        if not directory.is_absolute():
            directory = base / directory
        approvals = Path(str(plugin.setting("approvals", default_approvals_path()))).expanduser()
        if not approvals.is_absolute():
            approvals = Path.cwd() / approvals
        return cls(
            directory.resolve(),
            cwd=base,
            timeout_seconds=float(plugin.setting("timeout_seconds", DEFAULT_TIMEOUT_SECONDS)),
            max_output_bytes=int(plugin.setting("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)),
            approvals=ApprovalStore(approvals),
            roots=tuple(Path(root) for root in plugin.roots),
        )

    def list_tools(self) -> list[ToolDefinition]:
        """One tool per discovered script, sorted by name."""
        return [script.definition for script in self.scripts.values()]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run the script with ``arguments["args"]``; see the module docstring."""
        script = self.scripts.get(name)
        if script is None:
            raise ToolError(f"no script tool named {name}")
        refusal = self.refusal(script)
        if refusal:
            raise ToolError(refusal)
        args = [str(arg) for arg in arguments.get("args") or ()]
        stdout, stderr = bytearray(), bytearray()
        truncated = timed_out = False
        process = await anyio.open_process(
            [str(script.path), *args],
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            with anyio.move_on_after(self.timeout_seconds) as scope:
                async with anyio.create_task_group() as group:

                    async def collect(stream: ByteReceiveStream | None, sink: bytearray) -> None:
                        nonlocal truncated
                        truncated = await _drain(stream, self.max_output_bytes, sink) or truncated

                    group.start_soon(collect, process.stdout, stdout)
                    group.start_soon(collect, process.stderr, stderr)
                    await process.wait()
            timed_out = scope.cancelled_caught
        finally:
            if process.returncode is None:
                _kill_group(process.pid)
                with anyio.CancelScope(shield=True):
                    await process.wait()
            await process.aclose()
        return _result(script, process.returncode, stdout, stderr, truncated, timed_out, self.timeout_seconds)

    def close(self) -> None:
        """Nothing to release: each call's process is finished before the call returns."""


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _result(
    script: Script,
    exit_code: int | None,
    stdout: bytearray,
    stderr: bytearray,
    truncated: bool,
    timed_out: bool,
    timeout_seconds: float,
) -> ToolResult:
    out = stdout.decode("utf-8", errors="replace")
    err = stderr.decode("utf-8", errors="replace")
    parts = [out.rstrip("\n")] if out else []
    if err:
        parts.append(f"[stderr]\n{err.rstrip()}")
    if truncated:
        parts.append("[output truncated]")
    if timed_out:
        parts.append(f"script {script.path.name} timed out after {timeout_seconds:g} s and was killed")
    else:
        parts.append(f"exit code {exit_code}")
    return ToolResult(
        content=[ToolContent.of_text("\n".join(parts))],
        is_error=timed_out or exit_code != 0,
        structured_content={
            "exit_code": None if timed_out else exit_code,
            "stdout": out,
            "stderr": err,
            "truncated": truncated,
            "timed_out": timed_out,
        },
    )


@hookimpl
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Contribute one tool per executable script in the configured directory."""
    plugin.register(ScriptTools.from_plugin(plugin))
