"""The :class:`BuiltinTools` provider: the six built-in tools behind one ``ToolProvider``.

Contract
--------
* :meth:`BuiltinTools.list_tools` returns the definitions of
  :mod:`awf_mcp.builtins.definitions`, sorted by name; it imports nothing heavy.
  The module of each file tool is imported on that tool's first call: a
  session that never greps pays nothing for Grep.
* :meth:`BuiltinTools.call_tool` is a coroutine. The file tools run in a worker
  thread (:func:`awf_mcp.concurrency.in_worker_thread`: in the caller's call
  context, abandoned on cancellation; a long walk also stops at the call's
  ``cancelled`` flag); Bash runs as a native anyio subprocess. Expected
  failures are raised as :class:`~awf_mcp.ports.ToolError`, whose message
  the model reads verbatim; a non-zero Bash exit is an ``isError`` result.
* :meth:`BuiltinTools.close` kills the process groups of Bash commands still
  running (and those they left behind).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import anyio.to_thread

from awf_mcp.builtins.definitions import DEFINITIONS, contained_bash
from awf_mcp.builtins.jobs import JobTable
from awf_mcp.builtins.outputs import OutputDir
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.builtins.shell import ShellRunner, contained, shell_path
from awf_mcp.concurrency import in_worker_thread
from awf_mcp.ports import ToolDefinition, ToolError, ToolResult, current_call
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.containment.policy import active

_FileTool = Callable[[Sandbox, Mapping[str, Any]], ToolResult]

_FILE_TOOLS: dict[str, tuple[str, str]] = {
    "Read": ("awf_mcp.builtins.reading", "read_file"),
    "Write": ("awf_mcp.builtins.writing", "write_file"),
    "Edit": ("awf_mcp.builtins.writing", "edit_file"),
    "Glob": ("awf_mcp.builtins.globbing", "glob_files"),
    "Grep": ("awf_mcp.builtins.grepping", "grep"),
}
"""Each file tool's implementation, as (module, function): imported on first call."""


@functools.cache
def file_tool(name: str) -> _FileTool | None:
    """The implementation of file tool ``name`` (imported once), or ``None`` for another name."""
    where = _FILE_TOOLS.get(name)
    if where is None:
        return None
    function: _FileTool = getattr(importlib.import_module(where[0]), where[1])
    return function


class BuiltinTools:
    """The built-in Read, Write, Edit, Bash, Glob and Grep tools, confined to ``sandbox``."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        self._outputs = OutputDir(on_create=sandbox.allow_reading)
        self._shell = ShellRunner(self._outputs)
        self._jobs = JobTable(self._outputs, child_environment)

    def list_tools(self) -> Sequence[ToolDefinition]:
        """The tool definitions, sorted by name; Bash's says what its sandbox allows."""
        policy = active()
        if not policy.contained:
            return DEFINITIONS
        bash = contained_bash(policy.network or ())
        return tuple(bash if definition.name == "Bash" else definition for definition in DEFINITIONS)

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run tool ``name`` with ``arguments``; raises :class:`ToolError` for expected failures."""
        if not isinstance(arguments, Mapping):
            raise ToolError(f"arguments of {name} must be an object")
        if name == "Bash":
            if arguments.get("run_in_background") is True:
                command, cwd = self._shell.checked(self.sandbox, arguments)
                owner = current_call().owner
                confinement = contained(self.sandbox)
                return self._jobs.start(shell_path(), command, self.sandbox.open_dir(cwd), owner, confinement)
            return await self._shell.run(self.sandbox, arguments)
        if name in ("BashOutput", "KillShell"):
            job_call = self._jobs.output if name == "BashOutput" else self._jobs.kill
            return await anyio.to_thread.run_sync(job_call, arguments.get("job_id"), current_call().owner)
        tool = file_tool(name)
        if tool is None:
            raise ToolError(f"unknown built-in tool {name!r}")
        return await in_worker_thread(tool, self.sandbox, arguments)

    async def close(self) -> None:
        """Kill the process groups of Bash commands and jobs still running; remove their output files."""
        await self._shell.close()
        await anyio.to_thread.run_sync(self._jobs.close)
        self._outputs.close()
