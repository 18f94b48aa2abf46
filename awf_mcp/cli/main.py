"""The ``awf-mcp`` entry point, and ``awf-mcp serve`` without Typer.

Every agent session starts ``awf-mcp serve``, so its start-up is paid constantly.
:func:`main` sends ``serve`` straight to :func:`serve` — the :mod:`argparse` parser
generated from :mod:`awf_mcp.cli.options` and the serve loop — and everything else to
the Typer application in :mod:`awf_mcp.cli.commands`, which is imported only then
(``serve -h``/``--help`` too, so that its help looks like every other command's).
Typer, click and rich never load on the serve path (``tests/unit/test_architecture.py``
checks it). Started on a terminal rather than by an agent, ``serve`` says on stderr what
it waits for (:data:`TERMINAL_NOTE`); stdout stays JSON-RPC only.

Errors become exit codes here and nowhere else: any command raises
:class:`~awf_mcp.errors.AwfError`, and :func:`main` prints it as one
``awf-mcp: error: ...`` line on stderr and exits with its code (see
:mod:`awf_mcp.errors`).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from awf_mcp import __version__
from awf_mcp.cli.options import parse_serve
from awf_mcp.errors import AwfError, UserError
from awf_mcp.ports import inert_text


def exit_now_if_threads_linger(code: int) -> None:
    """Exit at once when an abandoned worker thread (a hung tool) would hold the process open."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stderr.flush()
        remove_the_bundle_if_orphaned()  # os._exit runs no atexit handler
        os._exit(code)


TERMINAL_NOTE = (
    "awf-mcp serve: waiting for an MCP client on stdin. This is the command an agent starts "
    "(JSON-RPC on stdin/stdout), not an interactive prompt: set an agent up with "
    "`awf-mcp config claude` (or gemini, codex, ...), try a tool with "
    '`awf-mcp tools call Read \'{"path": "README.md"}\'`. Ctrl-D or Ctrl-C stops it.'
)
"""What ``serve`` says on stderr when a person started it on a terminal, so it does not look hung."""


def serve(argv: Sequence[str]) -> None:
    """``awf-mcp serve ARGV...``: parse, load plugins, serve until EOF or a signal, exit."""
    options, launch = parse_serve(argv)
    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging

    configure_logging("DEBUG" if launch.debug else launch.log_level, launch.log_format, launch.log_file)
    if launch.transport == "stdio" and sys.stdin.isatty():
        print(TERMINAL_NOTE, file=sys.stderr, flush=True)
    settings = config.load(options)
    if settings.servers and launch.transport == "stdio":  # before the imports below: starts overlap
        from awf_mcp.core.servers import launch_early

        launch_early(settings.servers, settings.roots)
    import anyio

    from awf_mcp.cli import runtime

    observer: Callable[[Any], None] = runtime.log_call
    if launch.audit_log:
        from awf_mcp.core.observability import AuditLog, send_audit_events_to

        try:
            audit = AuditLog(launch.audit_log)
        except OSError as exc:
            raise UserError(f"cannot open audit log {launch.audit_log}: {exc.strerror or exc}") from None
        observer = runtime.observers(runtime.log_call, audit)
        send_audit_events_to(audit.event)  # an upstream tool held back is recorded too
    if launch.transport == "stdio":
        anyio.run(runtime.serve_stdio, settings, __version__, observer)
    else:
        from awf_mcp.ops.httptoken import NamedTokens
        from awf_mcp.wire.http import LOOPBACK_HOSTS

        auth = config.http_auth(
            settings.http_auth,
            issuer=launch.auth_issuer,
            audience=launch.auth_audience,
            scopes=launch.auth_scopes,
            claims=launch.auth_claims,
        )
        host, token = launch.host, launch.token
        named = Path(launch.token_file) if launch.token_file else None
        given = bool(token or named or auth)
        if host not in LOOPBACK_HOSTS and not given:
            raise UserError(
                f"binding to {host} exposes every tool (Bash included) to the network: "
                "pass --token TOKEN (or set AWF_MCP_TOKEN), --token-file FILE or --auth-issuer URL "
                "to require bearer authentication"
            )
        if launch.no_token and given:
            raise UserError(
                "--no-token contradicts the tokens given (--token, AWF_MCP_TOKEN, --token-file or "
                "--auth-issuer): drop one"
            )
        token_file, show_token = None, False
        if not given and not launch.no_token:
            from awf_mcp.ops.httptoken import kept_token

            (token, token_file), show_token = kept_token(), True

        async def run_http() -> None:
            await runtime.serve_http(
                settings,
                __version__,
                host=host,
                port=launch.port,
                token=token,
                show_token=show_token,
                token_file=token_file,
                tokens=None if launch.no_token else NamedTokens(token, named),
                auth=auth,
                allow_shell=launch.allow_shell,
                observer=observer,
            )

        anyio.run(run_http)
    exit_now_if_threads_linger(0)


def follow_the_bootloader() -> bool:
    """In the one-file binary on Linux, end with the bootloader; return whether that applies.

    The one-file binary runs as two processes: PyInstaller's bootloader, which unpacks the
    bundle and forwards signals, and its child, this interpreter. SIGKILL cannot be
    forwarded: without this, ``kill -9`` of the process a client started would leave the
    real server running, orphaned (a stdio server notices EOF and exits, an HTTP server
    would serve on). ``PR_SET_PDEATHSIG`` has the kernel send SIGTERM instead, which
    shuts the server down cleanly.

    The bootloader also removes the unpacked bundle (50 MB in the temporary directory)
    once this process has exited. Killed, it cannot: then this process removes it as it
    exits (:func:`remove_the_bundle_if_orphaned`, registered with :mod:`atexit`).
    """
    bundle = getattr(sys, "_MEIPASS", None)
    if not sys.platform.startswith("linux") or not getattr(sys, "frozen", False) or bundle is None:
        return False
    if Path(bundle).resolve().is_relative_to(Path(sys.executable).resolve().parent):
        return False  # the one-directory build: a single process, nothing to follow
    import atexit
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if Path(bundle).name.startswith("_MEI"):  # only a directory named as the bootloader names them
        global _unpacked
        _unpacked = (bundle, os.getppid())
        atexit.register(remove_the_bundle_if_orphaned)
    follow_the_wrapper()
    return True


_unpacked: tuple[str, int] | None = None
"""The one-file binary's unpacked bundle and the pid of the bootloader that owns it."""


def remove_the_bundle_if_orphaned() -> None:
    """At exit: remove the unpacked bundle when its bootloader has died, as nobody else will.

    While the bootloader lives, this process is its child and it removes the bundle itself.
    The same holds for the portable binary's outermost process and what it unpacked.
    """
    import shutil

    if _unpacked is not None and os.getppid() != _unpacked[1]:
        shutil.rmtree(_unpacked[0], ignore_errors=True)
    if _wrapper is not None and not _wrapper.alive():
        shutil.rmtree(_wrapper.directory, ignore_errors=True)


class Wrapper:
    """The portable binary's outermost process: staticx's bootloader, and the directory it unpacked.

    Known by a pidfd where the kernel has them (Linux 5.3), else by the pid it had while it
    was, checked to be the parent of this process's parent.
    """

    def __init__(self, pid: int, directory: str, bootloader: int) -> None:
        self.pid, self.directory, self.bootloader = pid, directory, bootloader
        try:
            self.pidfd: int | None = os.pidfd_open(pid)
        except OSError:
            self.pidfd = None

    def alive(self, timeout: float | None = 0) -> bool:
        """Whether it still runs; ``timeout=None`` waits until it has ended, then says False."""
        import select
        import time

        if self.pidfd is not None:
            return not select.select([self.pidfd], [], [], timeout)[0]
        while parent_pid(self.bootloader) == self.pid:
            if timeout is not None:
                return True
            time.sleep(0.5)
        return False

    def end_with_it(self) -> None:
        """In a daemon thread: wait for the wrapper to end, then SIGTERM this process.

        Not when the bootloader in between has died first: its death signal already asked
        this process to stop (the wrapper ends because it did), and a second SIGTERM in the
        middle of shutting down would cut the cleanup short.
        """
        import signal

        def wait() -> None:
            self.alive(timeout=None)
            if os.getppid() == self.bootloader:
                os.kill(os.getpid(), signal.SIGTERM)

        threading.Thread(target=wait, name="awf-mcp-wrapper-watch", daemon=True).start()


_wrapper: Wrapper | None = None
"""The portable binary's staticx bootloader, when this process runs under one."""


def parent_pid(pid: int) -> int | None:
    """The parent of process ``pid`` per ``/proc`` (None when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        return int(stat.rsplit(b")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def follow_the_wrapper() -> None:
    """In the portable binary, also end with the outermost process, staticx's bootloader.

    The portable one file runs as three processes: staticx's static bootloader unpacks the
    loader, libc and PyInstaller's binary into ``$STATICX_BUNDLE_DIR`` and runs that binary,
    the bootloader :func:`follow_the_bootloader` follows, whose child is this interpreter.
    SIGKILL of the outermost process orphans the other two and leaves its directory behind.
    So a daemon thread here waits for it to end and then sends this process SIGTERM, and the
    directory is removed at exit once its owner is gone. Nothing happens unless the process
    two levels up is the very file ``$STATICX_PROG_PATH`` names and this interpreter runs
    from ``$STATICX_BUNDLE_DIR``.
    """
    directory = os.environ.get("STATICX_BUNDLE_DIR", "")
    started = os.environ.get("STATICX_PROG_PATH", "")
    if not directory or not started or not Path(directory).name.startswith("staticx-"):
        return
    if not Path(sys.executable).resolve().is_relative_to(Path(directory).resolve()):
        return
    bootloader = os.getppid()
    outermost = parent_pid(bootloader)
    try:
        if outermost is None or not os.path.samefile(f"/proc/{outermost}/exe", started):
            return
    except OSError:
        return
    wrapper = Wrapper(outermost, directory, bootloader)
    if parent_pid(bootloader) != outermost and wrapper.pidfd is not None:
        os.close(wrapper.pidfd)  # it ended before its pidfd was opened: the pid may be another's now
        wrapper.pidfd = None
    global _wrapper
    _wrapper = wrapper
    wrapper.end_with_it()


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: ``serve`` here, every other command through Typer."""
    follow_the_bootloader()
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["serve"] and not {"-h", "--help"} & set(args[1:]):
            serve(args[1:])
            return
        from awf_mcp.cli.commands import run  # serve --help too: it looks like every other help

        run(args)
    except AwfError as exc:
        print(f"awf-mcp: error: {inert_text(str(exc))}", file=sys.stderr)  # may quote an upstream
        raise SystemExit(exc.exit_code) from None
