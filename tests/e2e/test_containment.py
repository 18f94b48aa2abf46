"""Kernel containment end to end: what a contained command cannot do, and what it still can.

One ``awf-mcp serve`` per (mode, backend, surface[, user]) runs, through a real SDK client,
every escape of :func:`tests.helpers.containment.attempts` against a fake home and project
(tests/helpers/containment.py): reading the credential files of the built-in deny list
(directly, through a symbolic or hard link, through another process's ``/proc`` entries),
seeing secret environment variables, writing ``~/.bashrc``, ``~/.local/bin/git``, the
project's ``.git/hooks`` and ``.git/config`` (directly and by renames), connecting to a
loopback listener (directly and through the sandbox's proxy), signalling a process the test
started. Each is judged by its effect: the marker in the result, the file written, the
connection received, the process gone.

Surfaces: ``bash`` (a foreground Bash call), ``job`` (``run_in_background`` read with
BashOutput) and ``upstream`` (the same command run by tests/upstreams/hostile_server.py, a
stdio upstream awf-mcp starts). Backends: ``AWF_MCP_SANDBOX_BACKEND=bwrap`` and
``landlock``. Every attempt must be refused, and ordinary work (git, python, temporary files,
/usr/bin, the root, ``allow_write``, ``env_pass``) must still run; ``[sandbox] mode = "off"``
is the control, where every attempt must get through (so each attempt is one that would
escape). Run as root, the Bash attempts are made again by ``nobody`` (serve started through
``setpriv``, the world owned by nobody), contained and as control.

``.venv-test/bin/python -m pytest tests/e2e/test_containment.py -q``
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.helpers.containment import (
    REFUSAL_NOTE,
    Unprivileged,
    World,
    attempts,
    before,
    build_world,
    config_text,
    ordinary_work,
    split,
    unprivileged,
)
from tests.helpers.harness import mcp_session, report, server_command, text_of

pytestmark = pytest.mark.e2e

BACKENDS = ("bwrap", "landlock")
SURFACES = ("bash", "job", "upstream")
HOSTILE = Path(__file__).resolve().parents[1] / "upstreams" / "hostile_server.py"
CALL_SECONDS = 90
JOB_POLL_SECONDS = 0.05


@dataclass
class Outcome:
    name: str
    command: str
    text: str
    result: bool
    """For an attempt: it leaked. For ordinary work: it was done."""
    enforced_by: frozenset[str] = frozenset()
    """For an attempt: the backends that promise to refuse it."""


@dataclass
class Run:
    """What one ``awf-mcp serve`` session did with every attempt and every piece of ordinary work."""

    label: str
    ready: str = ""
    attempts: list[Outcome] = field(default_factory=list)
    work: list[Outcome] = field(default_factory=list)
    write_note: str | None = None
    """The result of a refused write (``bash`` surface)."""
    host_note: str | None = None
    """The result of a refused connection (``bash`` surface)."""
    stderr: str = ""
    seconds: float = 0.0

    @property
    def is_ready(self) -> bool:
        return "READY-MARK" in self.ready

    def not_ready(self) -> str:
        return (
            f"[{self.label}] a plain `echo` did not run, so no attempt was tested:\n{self.ready[-1500:]}\n"
            f"--- awf-mcp stderr (end) ---\n{self.stderr[-1500:]}"
        )


def describe(run: Run, outcomes: Sequence[Outcome], what: str) -> str:
    lines = [f"[{run.label}] {len(outcomes)} {what}:"]
    for outcome in outcomes:
        text = (
            outcome.text if len(outcome.text) <= 700 else outcome.text[:350] + " ... " + outcome.text[-350:]
        )
        lines.append(f"- {outcome.name}\n    command: {outcome.command}\n    result: {text!r}")
    return "\n".join(lines)


# ------------------------------------------------------------------ driving one session


class Surface:
    """Runs a shell command through one surface of a session; returns the result text."""

    def __init__(self, session: ClientSession, surface: str) -> None:
        self.session, self.surface = session, surface

    async def run(self, command: str) -> str:
        with anyio.fail_after(CALL_SECONDS):
            if self.surface == "bash":
                return text_of(
                    await self.session.call_tool("Bash", {"command": command, "timeout_seconds": 60})
                )
            if self.surface == "upstream":
                return text_of(await self.session.call_tool("hostile_attempt", {"command": command}))
            return await self._job(command)

    async def _job(self, command: str) -> str:
        started = text_of(
            await self.session.call_tool(
                "Bash", {"command": command, "run_in_background": True, "timeout_seconds": 60}
            )
        )
        found = re.search(r'job_id="(bash_\d+)"', started)
        if found is None:
            return started
        pages = [started]
        while True:
            page = text_of(await self.session.call_tool("BashOutput", {"job_id": found.group(1)}))
            pages.append(page)
            first = page.splitlines()[0] if page else ""
            if not first.startswith(f"job {found.group(1)}: running") and "call BashOutput again" not in page:
                return "\n".join(pages)
            await anyio.sleep(JOB_POLL_SECONDS)


async def drive(world: World, argv: Sequence[str], env: dict[str, str], surface: str, run: Run) -> None:
    params = StdioServerParameters(command=argv[0], args=list(argv[1:]), cwd=str(world.root), env=env)
    with tempfile.TemporaryFile(mode="w+") as errlog:
        try:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(60):
                    await session.initialize()
                shell = Surface(session, surface)
                run.ready = await shell.run(f"echo {split('READY-MARK')}")
                if not run.is_ready:
                    return
                for work in ordinary_work(world, surface):
                    text = await shell.run(work.command)
                    run.work.append(Outcome(work.name, work.command, text, work.done(world, text)))
                for attempt in attempts(world):
                    then = before(world)
                    text = await shell.run(attempt.command)
                    run.attempts.append(
                        Outcome(
                            attempt.name,
                            attempt.command,
                            text,
                            attempt.leaked(world, text, then),
                            attempt.enforced_by,
                        )
                    )
                if surface == "bash":
                    run.write_note = await shell.run(f"echo refused >> {world.home / '.bashrc'}")
                    run.host_note = await shell.run(f"curl -sS --max-time 5 http://127.0.0.1:{world.port}/")
        finally:
            errlog.seek(0)
            run.stderr = errlog.read()


class Runs:
    """Each (mode, backend, surface, user) run once per module, by the first test that needs it."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.done: dict[tuple[str, str | None, str, str | None], Run] = {}
        self.worlds: list[World] = []
        self._unprivileged: Unprivileged | str | None = None

    def unprivileged(self) -> Unprivileged:
        if os.geteuid() != 0:
            pytest.skip("not running as root: the other tests already run as an unprivileged user")
        if self._unprivileged is None:
            self._unprivileged = unprivileged("nobody")
        if isinstance(self._unprivileged, str):
            pytest.skip(f"cannot run awf-mcp as nobody here: {self._unprivileged}")
        return self._unprivileged

    def get(self, mode: str, backend: str | None, surface: str, user: str | None = None) -> Run:
        key = (mode, backend, surface, user)
        if key not in self.done:
            self.done[key] = self._run(*key)
        return self.done[key]

    def _run(self, mode: str, backend: str | None, surface: str, user: str | None) -> Run:
        label = f"mode={mode} backend={backend or 'auto'} surface={surface}" + (
            f" user={user}" if user else ""
        )
        run = Run(label)
        if user:
            nobody = self.unprivileged()
            world = build_world(owner=nobody.user, run_as=nobody.prefix)
            awf, python = nobody.awf, nobody.python
        else:
            world = build_world()
            awf, python = server_command(), sys.executable
        self.worlds.append(world)
        config = world.base / "awf-mcp.toml"  # outside the working directory (ROOT): the user's own
        config.write_text(config_text(mode, [python, str(HOSTILE)] if surface == "upstream" else None))
        if user:
            subprocess.run(["chown", f"{user}:", str(config)], check=True)
        argv = [*awf, "serve", "--root", str(world.root), "--config", str(config)]
        if surface == "upstream":
            argv.append("--no-builtins")
        started = time.monotonic()
        world.start()
        try:
            anyio.run(drive, world, argv, world.serve_env(backend), surface, run)
        finally:
            world.stop()
            run.seconds = time.monotonic() - started
        promised = [backend is None or backend in outcome.enforced_by for outcome in run.attempts]
        leaked = sum(outcome.result for outcome, kept in zip(run.attempts, promised, strict=True) if kept)
        unpromised = sum(o.result for o, kept in zip(run.attempts, promised, strict=True) if not kept)
        report(
            self.config,
            f"containment {label}: {len(run.attempts)} attempts, {leaked} leaked"
            + (f" (and {unpromised} this backend does not promise to refuse)" if unpromised else "")
            + "; "
            f"{sum(o.result for o in run.work)}/{len(run.work)} ordinary work done; {run.seconds:.1f} s",
        )
        return run

    def close(self) -> None:
        for world in self.worlds:
            world.remove()
        if isinstance(self._unprivileged, Unprivileged):
            self._unprivileged.remove()


@pytest.fixture(scope="module")
def runs(request: pytest.FixtureRequest) -> Iterator[Runs]:
    cache = Runs(request.config)
    yield cache
    cache.close()


def refused_everything(run: Run, backend: str) -> None:
    assert run.is_ready, run.not_ready()
    assert len(run.attempts) >= 40, run.attempts
    leaked = [outcome for outcome in run.attempts if outcome.result and backend in outcome.enforced_by]
    assert not leaked, describe(run, leaked, "attempts got out of the sandbox")


def leaked_everything(run: Run) -> None:
    assert run.is_ready, run.not_ready()
    held = [outcome for outcome in run.attempts if not outcome.result]
    assert not held, describe(run, held, 'attempts were stopped with mode = "off", so they prove nothing')


def did_all_work(run: Run) -> None:
    assert run.is_ready, run.not_ready()
    failed = [outcome for outcome in run.work if not outcome.result]
    assert not failed, describe(run, failed, "pieces of ordinary work failed")


# ------------------------------------------------------------------ the tests


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_escape_is_refused(runs: Runs, backend: str, surface: str) -> None:
    refused_everything(runs.get("contained", backend, surface), backend)


@pytest.mark.parametrize("surface", SURFACES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_ordinary_work_runs_contained(runs: Runs, backend: str, surface: str) -> None:
    did_all_work(runs.get("contained", backend, surface))


@pytest.mark.parametrize("surface", SURFACES)
def test_with_mode_off_every_escape_gets_through(runs: Runs, surface: str) -> None:
    """The control: unconfined, each attempt does what it tries, so the refusals above mean something."""
    run = runs.get("off", None, surface)
    leaked_everything(run)
    did_all_work(run)


def ends_with_the_note(run: Run, result: str | None, what: str) -> None:
    assert run.is_ready, run.not_ready()
    assert result is not None
    last = result.rstrip().splitlines()[-1] if result.strip() else ""
    assert last.startswith(REFUSAL_NOTE), f"[{run.label}] the result of {what}:\n{result}"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_write_ends_with_the_sandbox_note(runs: Runs, backend: str) -> None:
    run = runs.get("contained", backend, "bash")
    ends_with_the_note(run, run.write_note, "a refused write (echo >> ~/.bashrc)")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refused_connection_ends_with_the_sandbox_note(runs: Runs, backend: str) -> None:
    run = runs.get("contained", backend, "bash")
    ends_with_the_note(run, run.host_note, "a refused connection (curl http://127.0.0.1:PORT/)")


@pytest.mark.parametrize("backend", [*BACKENDS, None])
def test_doctor_names_the_backend(backend: str | None) -> None:
    world = build_world()
    try:
        config = world.base / "awf-mcp.toml"
        config.write_text(config_text("contained"))
        done = subprocess.run(
            server_command("doctor", "--root", str(world.root), "--config", str(config)),
            capture_output=True,
            text=True,
            env=world.serve_env(backend),
            cwd=world.root,
            timeout=120,
            check=False,
        )
    finally:
        world.remove()
    output = (done.stdout + done.stderr).lower()
    names = [backend] if backend else list(BACKENDS)
    assert any(re.search(rf"\b{name}\b", output) for name in names), (
        f"AWF_MCP_SANDBOX_BACKEND={backend}: doctor names none of {names}:\n{done.stdout}\n{done.stderr}"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_escape_is_refused_for_an_unprivileged_user(runs: Runs, backend: str) -> None:
    refused_everything(runs.get("contained", backend, "bash", "nobody"), backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_ordinary_work_runs_contained_for_an_unprivileged_user(runs: Runs, backend: str) -> None:
    did_all_work(runs.get("contained", backend, "bash", "nobody"))


def test_with_mode_off_every_escape_gets_through_for_an_unprivileged_user(runs: Runs) -> None:
    run = runs.get("off", None, "bash", "nobody")
    leaked_everything(run)
    did_all_work(run)


def test_without_a_backend_bash_and_upstreams_are_refused_not_run_open(tmp_path: Path) -> None:
    """Fail closed: where no backend works, nothing runs, and one sentence says why and what to set.

    ``AWF_MCP_SANDBOX_BACKEND`` names a backend this machine cannot have; the control is the
    same server with ``mode = "off"``, where the command and the upstream both run.
    """
    marker = tmp_path / "ran"
    server = tmp_path / "server.py"
    server.write_text(f"import pathlib; pathlib.Path({str(marker)!r} + '-server').touch()\n")
    results: dict[str, tuple[bool, str, list[str]]] = {}

    async def drive(mode: str) -> None:
        config = tmp_path / f"{mode}.toml"
        probe = f"[servers.probe]\ncommand = {sys.executable!r}\nargs = [{str(server)!r}]\n"
        config.write_text(f'[sandbox]\nmode = "{mode}"\n{probe}')
        env = {"AWF_MCP_SANDBOX_BACKEND": "no-such-backend"}
        with tempfile.TemporaryFile(mode="w+") as errlog:
            async with mcp_session(
                "--root", str(tmp_path), "--config", str(config), env=env, errlog=errlog
            ) as session:
                result = await session.call_tool("Bash", {"command": f"touch {marker}-{mode}"})
            errlog.seek(0)
            results[mode] = (bool(result.is_error), text_of(result), errlog.read().splitlines())

    anyio.run(drive, "contained")
    assert not Path(f"{marker}-server").exists()  # the upstream was not started either
    anyio.run(drive, "off")
    refused, said, log = results["contained"]
    assert refused and "the sandbox cannot contain this process" in said and 'mode = "off"' in said, said
    assert "no-such-backend" in said
    assert not Path(f"{marker}-contained").exists()
    assert any("probe" in line and "sandbox" in line for line in log), log
    ran, said_off, _log = results["off"]
    assert not ran and Path(f"{marker}-off").exists(), said_off
    assert Path(f"{marker}-server").exists()  # the control: with mode = "off" the upstream was started


@pytest.mark.parametrize("mode", ["contained", "off"])
def test_a_repository_made_during_the_session_keeps_its_hooks_read_only(tmp_path: Path, mode: str) -> None:
    """Each Bash call's sandbox is set up ahead, while the previous call runs; one set up before
    ``git init`` made ``.git`` must not run the next command, or ``.git/hooks`` would be writable.

    bubblewrap (the backend that keeps ``.git/hooks`` read-only in a root); the control is the
    same session with ``mode = "off"``, where the hook gets written.
    """
    root = tmp_path / "project"
    root.mkdir()
    config = tmp_path / "sandbox.toml"
    config.write_text(f'[sandbox]\nmode = "{mode}"\n')
    hook = root / ".git" / "hooks" / "pre-commit"
    said: list[tuple[bool, str]] = []

    async def drive() -> None:
        env = {"AWF_MCP_SANDBOX_BACKEND": "bwrap"}
        async with mcp_session("--root", str(root), "--config", str(config), env=env) as session:
            for command in ("true", "true", "git init -q . && mkdir -p .git/hooks", f"echo evil > {hook}"):
                result = await session.call_tool("Bash", {"command": command})
                said.append((bool(result.is_error), text_of(result)))

    anyio.run(drive)
    assert not any(refused for refused, _text in said[:3]), said
    if mode == "contained":
        assert said[3][0] and not hook.exists(), said
    else:
        assert not said[3][0] and hook.read_text() == "evil\n", said


@pytest.mark.parametrize(
    ("mode", "backend"), [("contained", "bwrap"), ("contained", "landlock"), ("off", None)]
)
def test_bash_cannot_replace_the_start_up_shim_even_when_its_root_holds_it(
    tmp_path: Path, mode: str, backend: str | None
) -> None:
    """The single executable's start-up shim runs unconfined at every session's start, from
    awf-mcp's state directory (awf_mcp.processes.startshim). A root that holds the home directory
    holds that directory too: Bash still cannot read or replace the shim. The control, the same
    session with ``mode = "off"``, replaces it."""
    home = tmp_path / "home"
    shim = home / ".local" / "state" / "awf-mcp" / "bin" / "awf-mcp-shim-0.0"
    shim.parent.mkdir(parents=True)
    shim.write_text("#!/bin/sh\nexec the-real-shim\n")
    config = tmp_path / "sandbox.toml"
    config.write_text(f'[sandbox]\nmode = "{mode}"\n')
    said: list[tuple[bool, str]] = []

    async def drive() -> None:
        env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local" / "state")}
        if backend:
            env["AWF_MCP_SANDBOX_BACKEND"] = backend
        async with mcp_session("--root", str(home), "--config", str(config), cwd=home, env=env) as session:
            for command in (f"cat {shim}", f"printf '#!/bin/sh\\necho owned\\n' > {shim}"):
                result = await session.call_tool("Bash", {"command": command})
                said.append((bool(result.is_error), text_of(result)))

    anyio.run(drive)
    if mode == "contained":
        assert "the-real-shim" not in said[0][1], said
        assert said[1][0] and shim.read_text() == "#!/bin/sh\nexec the-real-shim\n", said
    else:
        assert "the-real-shim" in said[0][1], said
        assert not said[1][0] and shim.read_text() == "#!/bin/sh\necho owned\n", said
