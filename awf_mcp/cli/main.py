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

from awf_mcp import __version__

TYPE_CHECKING = False  # not typing's: every import here is paid by each agent session's shim
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any


def exit_now_if_threads_linger(code: int) -> None:
    """Exit at once when an abandoned worker thread (a hung tool) would hold the process open."""
    import threading

    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stderr.flush()
        from awf_mcp.cli import shim

        shim.end_session(code)  # a session of the shared server tells its shim first
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
    from awf_mcp.cli.options import log_level, parse_serve

    options, launch = parse_serve(argv)
    from awf_mcp.core import config
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.errors import UserError

    configure_logging(log_level(launch), launch.log_format, launch.log_file)
    if launch.transport == "stdio" and sys.stdin.isatty():
        print(TERMINAL_NOTE, file=sys.stderr, flush=True)
    settings = config.load(options)
    from awf_mcp.cli import shim

    shim.report(settings)  # in a session of the shared server: its [shared] settings
    if settings.servers and launch.transport == "stdio" and not shim.in_session():
        # before the imports below, so that the starts overlap (a shared session's are shared)
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
        anyio.run(runtime.serve_stdio, settings, __version__, observer, options)
    else:
        from awf_mcp.state.httptoken import NamedTokens
        from awf_mcp.wire.http import LOOPBACK_HOSTS

        auth = config.http_auth(
            settings.http_auth,
            issuer=launch.auth_issuer,
            audience=launch.auth_audience,
            scopes=launch.auth_scopes,
            claims=launch.auth_claims,
        )
        host, token = launch.host, launch.token
        from pathlib import Path

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
            from awf_mcp.state.httptoken import kept_token

            (token, token_file), show_token = kept_token(), True
        from awf_mcp.state.statekey import state_keys

        keys = state_keys(launch.state_key_file)

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
                state_keys=keys,
                options=options,
            )

        anyio.run(run_http)
    exit_now_if_threads_linger(0)


def follow_the_bootloader() -> bool:
    """In the frozen binary on Linux, end with the bootloader above; return whether one is there.

    The one-file binary runs as two processes: PyInstaller's bootloader, which unpacks the
    bundle and forwards signals, and its child, this interpreter. The portable binary is
    two as well: staticx's static bootloader unpacks the loader, libc and PyInstaller's
    one-directory build into ``$STATICX_BUNDLE_DIR`` and runs it, this interpreter
    (:func:`unpacked_by_the_wrapper`). SIGKILL cannot be forwarded: without this, ``kill -9``
    of the process a client started would leave the real server running, orphaned (a stdio
    server notices EOF and exits, an HTTP server would serve on). ``PR_SET_PDEATHSIG`` has
    the kernel send SIGTERM instead, which shuts the server down cleanly.

    The bootloader also removes what it unpacked (about 50 MB in the temporary directory)
    once this process has exited. Killed, it cannot: then this process removes it as it
    exits (:func:`remove_the_bundle_if_orphaned`, registered with :mod:`atexit`). A plain
    one-directory build is a single process: nothing to follow.
    """
    bundle = getattr(sys, "_MEIPASS", None)
    if not sys.platform.startswith("linux") or not getattr(sys, "frozen", False) or bundle is None:
        return False
    from pathlib import Path

    if Path(bundle).resolve().is_relative_to(Path(sys.executable).resolve().parent):
        unpacked = unpacked_by_the_wrapper()
        if unpacked is None:
            return False
    elif Path(bundle).name.startswith("_MEI"):  # only a directory named as the bootloader names them
        unpacked = bundle
    else:
        unpacked = None
    bootloader = os.getppid()
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if unpacked is not None:
        import atexit

        global _unpacked
        _unpacked = (unpacked, bootloader)
        atexit.register(remove_the_bundle_if_orphaned)
    if os.getppid() != bootloader:  # it died before the death signal was asked for
        os.kill(os.getpid(), signal.SIGTERM)
    return True


def unpacked_by_the_wrapper() -> str | None:
    """``$STATICX_BUNDLE_DIR`` when staticx's bootloader, this process's parent, unpacked this build.

    None (this one-directory build runs on its own, or as a Bash keeper under the server)
    unless this interpreter runs from that directory, named as staticx names it, and the
    parent process is the very file ``$STATICX_PROG_PATH`` names.
    """
    from pathlib import Path

    directory = os.environ.get("STATICX_BUNDLE_DIR", "")
    started = os.environ.get("STATICX_PROG_PATH", "")
    if not directory or not started or not Path(directory).name.startswith("staticx-"):
        return None
    if not Path(sys.executable).resolve().is_relative_to(Path(directory).resolve()):
        return None
    try:
        return directory if os.path.samefile(f"/proc/{os.getppid()}/exe", started) else None
    except OSError:
        return None


_unpacked: tuple[str, int] | None = None
"""The directory a bootloader unpacked this process from, and that bootloader's pid."""


def remove_the_bundle_if_orphaned() -> None:
    """At exit: remove the unpacked bundle when its bootloader has died, as nobody else will.

    While the bootloader lives, this process is its child and it removes the bundle itself.
    """
    import shutil

    if _unpacked is not None and os.getppid() != _unpacked[1]:
        shutil.rmtree(_unpacked[0], ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: ``serve`` through the shared server (:mod:`awf_mcp.cli.shim`,
    standard library only until it connects) or here, every other command through Typer."""
    follow_the_bootloader()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"] and not {"-h", "--help"} & set(args[1:]):
        from awf_mcp.cli import shim

        if shim.wanted(args[1:]):
            shim.run(args[1:])  # returns only when the shared server cannot be used
    dispatch(args)


def dispatch(args: list[str]) -> None:
    """Run ``awf-mcp ARGS`` in this process: ``serve`` here, every other command through Typer;
    an :class:`~awf_mcp.errors.AwfError` becomes its one line on stderr and its exit code."""
    from awf_mcp.errors import AwfError
    from awf_mcp.ports import inert_text

    try:
        if args[:1] == ["serve"] and not {"-h", "--help"} & set(args[1:]):
            serve(args[1:])
            return
        from awf_mcp.cli.commands import run  # serve --help too: it looks like every other help

        run(args)
    except AwfError as exc:
        print(f"awf-mcp: error: {inert_text(str(exc))}", file=sys.stderr)  # may quote an upstream
        raise SystemExit(exc.exit_code) from None
