"""The Bash tool: one shell command in its own process group, bounded in time and output.

Contract
--------
* ``command`` runs as ``/bin/bash -c command`` (``/bin/sh`` where there is no
  bash) with stdin from ``/dev/null``, in ``cwd`` (confined by the sandbox,
  default: the first root), under a keeper (:mod:`awf_mcp.processes.children`) in a
  new session and so a new process group. ``cwd`` is opened once through the
  sandbox (``O_DIRECTORY|O_NOFOLLOW`` from the root) and the keeper ``fchdir``s
  into that descriptor: a directory swapped for a symbolic link after the check
  cannot move the command outside.
* ``timeout_seconds`` (default :data:`BASH_DEFAULT_TIMEOUT`, 1 to
  :data:`BASH_MAX_TIMEOUT`) bounds the whole call, including waiting for
  background processes that keep stdout or stderr open.
* stdout and stderr are read as they come into :class:`~awf_mcp.builtins.outputs.StreamLog`
  files (the whole stream, for Read) while only their start and end stay in memory;
  the result shows each within the call's output budget (see
  :func:`~awf_mcp.builtins.outputs.render_streams`).
* Nothing a command starts outlives its call. When the shell exits, the keeper
  ends every process it left (``&``, ``nohup``, ``setsid``, ``setsid -f``, double
  forks: the keeper is their subreaper), SIGTERM then SIGKILL after
  :data:`BASH_KILL_GRACE` seconds. On timeout, on cancellation (the call's scope
  cancelled, or its ``cancelled`` flag set) and on :meth:`ShellRunner.close`, the
  keeper's process group gets SIGTERM and the keeper does the same. When the
  server dies, even by ``kill -9``, the kernel sends the keeper SIGTERM
  (``PR_SET_PDEATHSIG``) and it does the same. The server is a subreaper too, and
  ends whatever a killed keeper left (its environment carries the call's marker).
* The result starts with ``exit code N`` (``isError`` when N is not 0), or says
  the command timed out / was killed by a signal, followed by the captured
  ``--- stdout ---`` and ``--- stderr ---`` sections.

* The command runs contained by the kernel (:mod:`awf_mcp.processes.containment`): reads
  everywhere but the credential stores, writes only in the roots, a private ``$TMPDIR`` and
  the package caches, no network unless hosts are named, no process outside visible. A
  failed command that the sandbox refused ends with one ``[awf-mcp: the sandbox refused
  ...]`` note naming what the user can allow. Where no backend works, the call is refused.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import anyio
import anyio.abc
import anyio.to_thread

from awf_mcp import budget
from awf_mcp.builtins.args import int_argument, required_string, string_argument
from awf_mcp.builtins.limits import BASH_DEFAULT_TIMEOUT, BASH_KILL_GRACE, BASH_MAX_TIMEOUT
from awf_mcp.builtins.outputs import OutputDir, StreamLog, render_streams
from awf_mcp.builtins.sandbox import Sandbox
from awf_mcp.ports import CallContext, ToolError, ToolResult, current_call
from awf_mcp.processes import children, leftovers
from awf_mcp.processes.childenv import child_environment
from awf_mcp.processes.containment.asking import HostQuestions
from awf_mcp.processes.containment.plan import Confinement, SandboxUnavailable, prepare

_POLL_SECONDS = 0.2
_FINAL_DRAIN_SECONDS = 1.0
_KEEPER_ENVIRONMENT = {
    name: value for name, value in os.environ.items() if name in ("LANG", "LC_ALL", "LC_CTYPE")
}
"""A waiting keeper's own environment: its command brings the command's."""
CALL_MARKER = "AWF_MCP_BASH_CALL"
"""The environment variable naming the call in every process a Bash command starts."""


def can_ask(call: CallContext) -> bool:
    """Whether a host outside the sandbox's list can be put to the user of ``call``: its client
    answers elicitations on a session (not the stateless revision); see
    :mod:`awf_mcp.processes.containment.asking`."""
    return call.session is not None and call.channel.supports("elicitation")


def contained(sandbox: Sandbox, *, asking: bool = False) -> Confinement | None:
    """How a Bash command (or job) of the running call is contained; ``None`` when the policy is off.

    ``asking``: its connections go through the proxy, which asks the user about a host outside
    the list (:func:`can_ask`). Refused (:class:`~awf_mcp.ports.ToolError`, naming the cause)
    where no backend works.
    """
    try:
        return prepare("shell", sandbox.roots, asking=asking)
    except SandboxUnavailable as exc:
        raise ToolError(str(exc)) from None


def shell_path() -> str:
    """``/bin/bash`` when it is executable here, else ``/bin/sh``."""
    return "/bin/bash" if os.access("/bin/bash", os.X_OK) else "/bin/sh"


async def _drain(stream: anyio.abc.ByteReceiveStream | None, capture: StreamLog) -> None:
    if stream is None:
        return
    try:
        async for chunk in stream:
            capture.feed(chunk)
    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
        return


def signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to process group ``pgid``; a group that is gone is no error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def group_alive(pgid: int) -> bool:
    """True while any process of group ``pgid`` exists."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def stop_group(process: anyio.abc.Process) -> None:
    """SIGTERM the keeper's process group, SIGKILL it when the keeper outlives its grace; reap it."""
    with anyio.CancelScope(shield=True):
        signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(2 * BASH_KILL_GRACE + 1):
            await process.wait()
        signal_group(process.pid, signal.SIGKILL)
        await process.wait()


class ShellRunner:
    """Runs Bash commands and remembers their process groups until they are gone."""

    def __init__(self, outputs: OutputDir | None = None) -> None:
        self._running: dict[int, anyio.abc.Process] = {}
        self._lingering: set[int] = set()
        self.outputs = outputs or OutputDir()
        self._subreaper = False
        self._calls = 0
        self._warm: tuple[anyio.abc.Process, socket.socket, tuple[object, ...] | None] | None = None
        self._closed = False
        self._prewarming = False
        self._questions = HostQuestions()

    def checked(self, sandbox: Sandbox, arguments: Mapping[str, Any]) -> tuple[str, str]:
        """The command and the resolved working directory of a Bash call, or :class:`ToolError`."""
        command = required_string(arguments, "command")
        if not command.strip():
            raise ToolError("command must not be empty")
        if "\x00" in command:
            raise ToolError("command contains a NUL byte")
        return command, sandbox.resolve_dir(string_argument(arguments, "cwd", required=False), "cwd")

    async def run(self, sandbox: Sandbox, arguments: Mapping[str, Any]) -> ToolResult:
        """Run the Bash tool."""
        command, cwd = self.checked(sandbox, arguments)
        timeout = int_argument(
            arguments, "timeout_seconds", BASH_DEFAULT_TIMEOUT, minimum=1, maximum=BASH_MAX_TIMEOUT
        )
        call = current_call()
        if not self._subreaper:
            self._subreaper = children.become_subreaper()
        self._calls += 1
        marker = f"{os.getpid()}-{self._calls}"
        confinement = contained(sandbox, asking=can_ask(call))
        token = ""
        if confinement is not None and confinement.proxy is not None and can_ask(call):
            token = confinement.proxy.admit(self._questions.asker(call.session, call.channel.ask))
        try:
            return await self._run(sandbox, command, cwd, timeout, call, marker, confinement, token)
        finally:
            if token and confinement is not None and confinement.proxy is not None:
                confinement.proxy.dismiss(token)

    async def _run(
        self,
        sandbox: Sandbox,
        command: str,
        cwd: str,
        timeout: int,
        call: CallContext,
        marker: str,
        confinement: Confinement | None,
        proxy_token: str,
    ) -> ToolResult:
        started_at = time.monotonic()
        argv, env = [shell_path(), "-c", command], {**child_environment(), CALL_MARKER: marker}
        cwd_fd = sandbox.open_dir(cwd)
        try:
            process = await self._warm_keeper(argv, env, (cwd_fd, cwd), confinement, proxy_token)
            if process is None:
                if confinement is not None:
                    argv, env = confinement.command(argv, env, proxy_token=proxy_token)
                process = await self._cold_keeper(argv, env, cwd_fd)
        finally:
            os.close(cwd_fd)
        self._running[process.pid] = process
        await self._prewarm(confinement)
        keep = budget.current_budget()
        stdout = self.outputs.new_log("bash.stdout", keep)
        stderr = self.outputs.new_log("bash.stderr", keep)
        try:
            outcome = await self._supervise(process, stdout, stderr, timeout, call, marker)
        finally:
            with anyio.CancelScope(shield=True):
                if process.returncode is None:
                    await stop_group(process)
                await process.aclose()
                self._running.pop(process.pid, None)
                if group_alive(process.pid):
                    self._lingering.add(process.pid)
                stdout.close()
                stderr.close()
                if self._subreaper and process.returncode == -signal.SIGKILL:
                    await anyio.to_thread.run_sync(leftovers.end_marked, CALL_MARKER, marker, process.pid)
        note = None
        if confinement is not None and (outcome != "exited" or process.returncode != 0):
            start, end, _whole = stderr.text()
            note = confinement.refusal_note(start + end, started_at)
        return _result(outcome, process.returncode, timeout, stdout, stderr, note)

    async def _cold_keeper(self, argv: list[str], env: dict[str, str], cwd_fd: int) -> anyio.abc.Process:
        """A keeper started now for ``argv``."""
        keeper, keeper_env = children.kept_command(argv, env, cwd_fd=cwd_fd, grace=BASH_KILL_GRACE)
        try:
            return await anyio.open_process(keeper, **children.spawn_options(keeper_env, cwd_fd))
        except OSError as exc:
            raise ToolError(f"cannot start the shell: {exc.strerror or exc}") from exc

    async def _warm_keeper(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: tuple[int, str],
        confinement: Confinement | None,
        proxy_token: str = "",
    ) -> anyio.abc.Process | None:
        """The waiting keeper handed ``argv`` in ``cwd`` (a descriptor of it, and its real path);
        ``None`` when there is none, it is gone, or it waits in another sandbox than
        ``confinement``'s (then it is stopped and reaped).

        Uncontained, the keeper (:func:`~awf_mcp.processes.children.warm_keeper`) gets the
        command with the working directory as a descriptor. Contained, what waits is already
        inside the sandbox (:func:`~awf_mcp.processes.children.warm_sandbox`), so its setup is no
        part of the call; it gets the working directory by name, which it can only reach as the
        sandbox lets it."""
        warm, self._warm = self._warm, None
        if warm is None:
            return None
        process, control, key = warm
        try:
            wanted = None if confinement is None else confinement.key
            if process.returncode is None and key == wanted:
                if confinement is None:
                    children.send_command(control, argv, env, cwd[0])
                else:
                    environment = confinement.environment(env, proxy_token=proxy_token)
                    children.send_command(control, argv, environment, cwd[1])
                return process
        except OSError:
            pass
        finally:
            control.close()
        await stop_group(process)
        await process.aclose()
        return None

    async def _prewarm(self, confinement: Confinement | None) -> None:
        """Start the keeper of the next call now, while this call's command runs: inside a sandbox
        like ``confinement`` when there is one."""
        if self._warm is not None or self._closed or self._prewarming:
            return  # one waiting keeper at most, even with calls started side by side
        self._prewarming = True
        try:
            await self._start_waiting_keeper(confinement)
        finally:
            self._prewarming = False

    async def _start_waiting_keeper(self, confinement: Confinement | None) -> None:
        grace = BASH_KILL_GRACE
        if confinement is None:
            keeper, env, control, fd = children.warm_keeper(_KEEPER_ENVIRONMENT, grace)
        else:
            keeper, env, control, fd = children.warm_sandbox(confinement, _KEEPER_ENVIRONMENT, grace)
        try:
            process = await anyio.open_process(
                keeper,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                pass_fds=(fd,),
            )
        except OSError:
            control.close()
            return
        finally:
            os.close(fd)
        if self._closed:  # closed while it started: it waits for nothing
            control.close()
            await stop_group(process)
            await process.aclose()
            return
        self._warm = (process, control, None if confinement is None else confinement.key)

    async def _supervise(
        self,
        process: anyio.abc.Process,
        stdout: StreamLog,
        stderr: StreamLog,
        timeout: int,
        call: CallContext,
        marker: str,
    ) -> str:
        """Wait for the command; ``"exited"``, ``"timeout"`` or ``"cancelled"``."""
        started = anyio.current_time()
        deadline = anyio.CancelScope(deadline=started + timeout)
        flagged = False

        async def watch() -> None:
            nonlocal flagged
            reported = 0
            while True:
                await anyio.sleep(_POLL_SECONDS)
                if call.cancelled.is_set():
                    flagged = True
                    deadline.cancel()
                    return
                elapsed = int(anyio.current_time() - started)
                if elapsed > reported:
                    reported = elapsed
                    call.report_progress(elapsed, timeout, f"running for {elapsed}s")

        async with anyio.create_task_group() as watchers:
            watchers.start_soon(watch)
            with deadline:
                async with anyio.create_task_group() as readers:
                    readers.start_soon(_drain, process.stdout, stdout)
                    readers.start_soon(_drain, process.stderr, stderr)
                    await process.wait()
                    if self._subreaper and process.returncode == -signal.SIGKILL:
                        # The keeper was killed before it could clean up: end what it left
                        # (it may hold the pipes open).
                        await anyio.to_thread.run_sync(leftovers.end_marked, CALL_MARKER, marker, process.pid)
            watchers.cancel_scope.cancel()
        if not deadline.cancelled_caught:
            return "exited"
        await stop_group(process)
        with anyio.move_on_after(_FINAL_DRAIN_SECONDS, shield=True):
            async with anyio.create_task_group() as readers:
                readers.start_soon(_drain, process.stdout, stdout)
                readers.start_soon(_drain, process.stderr, stderr)
        return "cancelled" if flagged else "timeout"

    async def close(self) -> None:
        """Stop every process group still running, and those left behind by finished commands."""
        self._closed = True
        if self._warm is not None:
            process, control, _key = self._warm
            self._warm = None
            control.close()  # an idle keeper exits at EOF
            await stop_group(process)
            await process.aclose()
        for process in list(self._running.values()):
            await stop_group(process)
        for pgid in list(self._lingering):
            signal_group(pgid, signal.SIGKILL)
        self._lingering.clear()
        if self._subreaper:
            for call in range(1, self._calls + 1):
                leftovers.end_marked(CALL_MARKER, f"{os.getpid()}-{call}")


def _result(
    outcome: str,
    returncode: int | None,
    timeout: int,
    stdout: StreamLog,
    stderr: StreamLog,
    note: str | None = None,
) -> ToolResult:
    if outcome == "timeout":
        header = f"timed out after {timeout} s; the command's process group was killed"
        failed = True
    elif outcome == "cancelled":
        header = "cancelled; the command's process group was killed"
        failed = True
    elif returncode is not None and returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        header = f"killed by {name} (exit code {returncode})"
        failed = True
    else:
        header = f"exit code {returncode}"
        failed = returncode != 0
    body = render_streams(header, [("stdout", stdout), ("stderr", stderr)], budget.current_budget())
    if note and failed:
        body = f"{body}\n{note}"
    return ToolResult.error(body) if failed else ToolResult.text(body)
