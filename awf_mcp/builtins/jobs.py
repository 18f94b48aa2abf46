"""Background Bash jobs: dev servers, watchers and long builds that outlive one call, not the server.

Contract
--------
* ``Bash`` with ``run_in_background`` starts the command as a job and returns at once
  with its id (``bash_1``, ``bash_2``, ... never reused). A job belongs to the client
  session and the caller that started it (:attr:`~awf_mcp.ports.CallContext.owner`; the
  stateless revision has no session, so there the caller alone): only they see it, read it
  and kill it; to anyone else it does not exist. At most :data:`MAX_JOBS`
  jobs of one owner, and :data:`MAX_RUNNING` of all, run at once; a finished
  job stays listed (its output readable) until :data:`MAX_KEPT` newer ones push it out,
  and its output files go with it.
* The job runs like a foreground command: ``/bin/bash -c`` in a confined ``cwd``, stdin
  empty, the user's environment, its own session and process group. Its stdout and
  stderr go to :class:`~awf_mcp.builtins.outputs.StreamLog` files.
* ``BashOutput`` returns what each stream produced since the previous ``BashOutput`` of
  that job, within the call's output budget (the rest waits for the next call), with the
  job's state and exit code. ``KillShell`` kills the job's whole process group (SIGTERM,
  then SIGKILL after :data:`~awf_mcp.builtins.limits.BASH_KILL_GRACE` seconds).
* A job runs under the same keeper as a foreground command
  (:mod:`awf_mcp.processes.children`): when its shell exits, whatever it started ends too,
  detached or not. Jobs never outlive the server: :meth:`JobTable.close` (stdin EOF,
  SIGTERM, SIGINT) kills every group, and if the server dies, even by ``kill -9``, the
  kernel sends each keeper SIGTERM (``PR_SET_PDEATHSIG``) and it ends its job.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import IO

from awf_mcp import budget
from awf_mcp.builtins.limits import BASH_KILL_GRACE
from awf_mcp.builtins.outputs import OutputDir, StreamLog, fair_shares
from awf_mcp.builtins.shell import group_alive, signal_group
from awf_mcp.ports import ToolError, ToolResult
from awf_mcp.processes import children
from awf_mcp.processes.containment.plan import Confinement as Confining

MAX_JOBS = 8
"""Background jobs of one owner (a session and its caller) running at once."""

MAX_RUNNING = 32
"""Background jobs of all owners running at once."""

MAX_KEPT = 32
"""Jobs remembered (running or finished); the oldest finished ones are forgotten first."""

PAGE_OVERHEAD = 600
"""Bytes of a BashOutput page kept for its state line, section titles and note."""

MIN_PAGE = 200
"""Bytes of output a BashOutput page has room for at least."""

SETTLE_SECONDS = 0.5
"""How long ``BashOutput`` waits, once the shell has exited, for the rest of its output to be
read from its pipes (a process it left running may hold them open longer)."""


def _pump(pipe: IO[bytes] | None, log: StreamLog) -> None:
    """Copy one pipe of a job into its log until the pipe closes (a reader thread)."""
    if pipe is not None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := os.read(pipe.fileno(), 65536):
                log.feed(chunk)
    log.close()


@dataclass(slots=True)
class Job:
    """One background command."""

    id: str
    command: str
    process: subprocess.Popen[bytes]
    stdout: StreamLog
    stderr: StreamLog
    owner: Hashable | None = None
    started: float = field(default_factory=time.monotonic)
    readers: list[threading.Thread] = field(default_factory=list)
    killed: bool = False

    @property
    def running(self) -> bool:
        """True until the shell has exited and both streams are read to their end."""
        return self.process.poll() is None or any(reader.is_alive() for reader in self.readers)

    def settle(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the readers to reach the end of the pipes."""
        deadline = time.monotonic() + seconds
        for reader in self.readers:
            reader.join(max(0.0, deadline - time.monotonic()))

    def state(self) -> str:
        """``running for 12 s``, ``exited with code 0``, ``killed by SIGTERM``."""
        code = self.process.poll()
        if code is None:
            return f"running for {time.monotonic() - self.started:.0f} s"
        if self.killed:
            return "killed (KillShell)"
        if code < 0 or (code > 128 and code - 128 in signal.Signals._value2member_map_):
            number = -code if code < 0 else code - 128
            return f"killed by {signal.Signals(number).name}"
        return f"exited with code {code}"


class JobTable:
    """The server's background jobs."""

    def __init__(self, outputs: OutputDir, spawn_env: Callable[[], Mapping[str, str]]) -> None:
        self.outputs = outputs
        self.spawn_env = spawn_env
        self._jobs: dict[str, Job] = {}
        self._counter = 0
        self._lock = threading.Lock()

    def start(
        self,
        shell: str,
        command: str,
        cwd_fd: int,
        owner: Hashable | None = None,
        confinement: Confining | None = None,
    ) -> ToolResult:
        """Start ``command`` in ``cwd_fd`` (closed here) as a job of ``owner``, contained by
        ``confinement`` (:func:`~awf_mcp.builtins.shell.contained`); the result names it.

        Call it from the event loop's thread: a keeper's death signal follows the thread that
        started it, and worker threads come and go.
        """
        try:
            return self._start(shell, command, cwd_fd, owner, confinement)
        finally:
            os.close(cwd_fd)

    def _start(
        self, shell: str, command: str, cwd_fd: int, owner: Hashable | None, confinement: Confining | None
    ) -> ToolResult:
        with self._lock:
            running = [job for job in self._jobs.values() if job.running]
            own = [job.id for job in running if job.owner == owner]
            if len(own) >= MAX_JOBS:
                raise ToolError(
                    f"{MAX_JOBS} background jobs are running already ({', '.join(own)}): "
                    "stop one with KillShell first"
                )
            if len(running) >= MAX_RUNNING:
                raise ToolError(
                    f"{MAX_RUNNING} background jobs are running already"
                    + (f" ({', '.join(own)} of this one)" if own else "")
                    + ": stop one with KillShell first, or wait"
                )
            self._counter += 1
            job_id = f"bash_{self._counter}"
        stdout = self.outputs.new_log(f"{job_id}.stdout", 64 * 1024)
        stderr = self.outputs.new_log(f"{job_id}.stderr", 64 * 1024)
        keeper, env = children.kept_command(
            [shell, "-c", command], self.spawn_env(), cwd_fd=cwd_fd, confinement=confinement
        )
        try:
            process = subprocess.Popen(keeper, **children.spawn_options(env, cwd_fd))
        except OSError as exc:
            for log in (stdout, stderr):
                log.close()
                self.outputs.remove(log)
            raise ToolError(f"cannot start the shell: {exc.strerror or exc}") from exc
        job = Job(job_id, command, process, stdout, stderr, owner)
        for pipe, log in ((process.stdout, stdout), (process.stderr, stderr)):
            reader = threading.Thread(target=_pump, args=(pipe, log), name=f"awf-mcp {job_id}", daemon=True)
            reader.start()
            job.readers.append(reader)
        with self._lock:
            self._jobs[job_id] = job
            self._forget_old()
        return ToolResult.text(
            f"started background job {job_id} (process group {process.pid}); read its output with "
            f'BashOutput job_id="{job_id}", stop it with KillShell job_id="{job_id}". '
            f"Output files: {stdout.path} and {stderr.path}."
        )

    def _forget_old(self) -> None:
        """Forget the oldest finished jobs over :data:`MAX_KEPT`, and remove their output files."""
        finished = [job_id for job_id, job in self._jobs.items() if not job.running]
        while len(self._jobs) > MAX_KEPT and finished:
            job = self._jobs.pop(finished.pop(0))
            self.outputs.remove(job.stdout)
            self.outputs.remove(job.stderr)

    def _job(self, job_id: object, owner: Hashable | None) -> Job:
        """The job ``job_id`` of ``owner``: another owner's job is no job of this one."""
        with self._lock:
            job = self._jobs.get(job_id) if isinstance(job_id, str) else None
            if job is None or job.owner != owner:
                own = [j for j in self._jobs.values() if j.owner == owner]
                known = ", ".join(f"{j.id} ({j.state()})" for j in own) or "none"
                raise ToolError(
                    f"no background job {job_id!r}; the jobs are: {known}. A job lives as long as the "
                    "session that started it: a new session (a restarted server, or a client that opens "
                    "one per call) has none of the last one's jobs"
                )
            return job

    def output(self, job_id: object, owner: Hashable | None = None) -> ToolResult:
        """New output of job ``job_id`` of ``owner`` since the last call, within the budget; its state."""
        job = self._job(job_id, owner)
        if job.process.poll() is not None:
            job.settle(SETTLE_SECONDS)  # the shell has exited: its last output is on its way
        running = job.running  # decided before reading, so a final read sees everything
        parts = [f"job {job.id}: {job.state()}"]
        streams = (("stdout", job.stdout), ("stderr", job.stderr))
        room = max(budget.current_budget() - PAGE_OVERHEAD, MIN_PAGE)
        shares = fair_shares({name: log.unread for name, log in streams}, room)
        waiting = 0
        notes = []
        for name, log in streams:
            text, left = log.read_new(shares[name])
            waiting += left
            if text:
                parts.append(f"--- {name} (new) ---\n{text.removesuffix(chr(10))}")
                if not text.endswith("\n"):
                    notes.append(f"the last {name} line " + ("goes on" if left else "has no line end yet"))
            if log.removed:
                notes.append(f"its {name} file was removed to make room for newer output")
            elif log.dropped and not left and not running:
                notes.append(f"its {name} after the first {log.written:,} bytes was not kept")
        if len(parts) == 1:
            parts.append("(no new output)")
        if waiting:
            notes.append(f"{waiting:,} more bytes of output wait: call BashOutput again")
        elif running and job.process.poll() is not None:
            notes.append("a process it started still holds its output open: call BashOutput again")
        if notes:
            parts.append(budget.note("; ".join(notes)))
        code = job.process.poll()
        failed = not running and (job.killed or code not in (0, None))
        return ToolResult(content=ToolResult.text("\n".join(parts)).content, is_error=failed)

    def kill(self, job_id: object, owner: Hashable | None = None) -> ToolResult:
        """Kill the whole process group of job ``job_id`` of ``owner``."""
        job = self._job(job_id, owner)
        if job.process.poll() is not None and not group_alive(job.process.pid):
            return ToolResult.text(f"job {job.id} had already ended: {job.state()}")
        job.killed = True
        _stop(job.process)
        return ToolResult.text(f"job {job.id} killed (its whole process group)")

    def close(self) -> None:
        """End every job: SIGTERM to each group (its keeper ends and reaps the rest), then SIGKILL."""
        with self._lock:
            jobs = [job for job in self._jobs.values() if job.process.poll() is None]
        for job in jobs:
            signal_group(job.process.pid, signal.SIGTERM)
        for job in jobs:
            _await_keeper(job.process)


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the job's group: its keeper ends and reaps everything the job started."""
    signal_group(process.pid, signal.SIGTERM)
    _await_keeper(process)


def _await_keeper(process: subprocess.Popen[bytes]) -> None:
    """Wait for a signalled keeper (it ends its descendants within its grace); SIGKILL it if it hangs."""
    try:
        process.wait(timeout=2 * BASH_KILL_GRACE + 1)
    except subprocess.TimeoutExpired:
        signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=BASH_KILL_GRACE)
