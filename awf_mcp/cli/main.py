"""The ``awf-mcp`` entry point, and ``awf-mcp serve`` without Typer.

Every agent session starts ``awf-mcp serve``, so its start-up is paid constantly.
:func:`main` sends ``serve`` straight to :func:`serve` — an :mod:`argparse` parser
and the serve loop — and everything else to the Typer application in
:mod:`awf_mcp.cli.commands`, which is imported only then. Typer, click and rich never load
on the serve path (``tests/test_architecture.py`` checks it); ``awf-mcp serve``
through the Typer app (``awf-mcp --help`` lists it) forwards its arguments here,
so there is one definition of the serve options.

Also here, shared with :mod:`awf_mcp.cli.commands`: :func:`fail` (an :class:`AwfError` →
one ``awf-mcp: error: ...`` line on stderr and its exit code),
:func:`configure_logging`, :func:`load_settings` and :func:`guarded`.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from awf_mcp import __version__
from awf_mcp.errors import AwfError, UserError

T = TypeVar("T")

SERVE_DESCRIPTION = (
    "Serve MCP over stdin/stdout (or Streamable HTTP): the command an agent's MCP configuration runs."
)


def fail(exc: AwfError) -> NoReturn:
    """Print ``awf-mcp: error: EXC`` on stderr and exit with the error's exit code."""
    print(f"awf-mcp: error: {exc}", file=sys.stderr)
    raise SystemExit(exc.exit_code)


def guarded(action: Callable[[], T]) -> T:
    """``action()``, with an :class:`AwfError` turned into :func:`fail`."""
    try:
        return action()
    except AwfError as exc:
        fail(exc)


def configure_logging(level: str, log_format: str = "text", log_file: str | None = None) -> None:
    """Send the ``awf_mcp`` loggers to stderr (or ``log_file``), as text or JSON lines."""
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        fail(UserError(f"unknown log level '{level}'; use DEBUG, INFO, WARNING or ERROR"))
    if log_format not in ("text", "json"):
        fail(UserError(f"unknown log format '{log_format}'; use text or json"))
    handler: logging.Handler
    if log_file:
        try:
            handler = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            fail(UserError(f"cannot open log file {log_file}: {exc.strerror or exc}"))
    else:
        handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        from awf_mcp.core.observability import JsonLogFormatter

        handler.setFormatter(JsonLogFormatter())
    else:
        handler.setFormatter(logging.Formatter("awf-mcp: %(levelname)s: %(message)s"))
    root = logging.getLogger("awf_mcp")
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    root.propagate = False


def load_settings(**options: Any) -> Any:
    """:func:`awf_mcp.core.config.load` from command-line option values (``None`` = not given)."""
    from awf_mcp.core import config

    return config.load(
        config=options.get("config"),
        roots=options.get("root") or (),
        no_builtins=options.get("no_builtins", False),
        only=options.get("only") or (),
        exclude=options.get("exclude") or (),
        strict=options.get("strict", False),
        call_timeout_seconds=options.get("call_timeout"),
        output_budget=options.get("output_budget"),
    )


def exit_now_if_threads_linger(code: int) -> None:
    """Exit at once when an abandoned worker thread (a hung tool) would hold the process open."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.stderr.flush()
        os._exit(code)


def serve_parser() -> argparse.ArgumentParser:
    """The options of ``awf-mcp serve`` (``--root``, ``--only`` and ``--exclude`` repeat)."""
    parser = argparse.ArgumentParser(prog="awf-mcp serve", description=SERVE_DESCRIPTION)
    add = parser.add_argument
    add(
        "--root",
        action="append",
        metavar="DIR",
        help="Directory the built-in tools are confined to "
        "(repeatable; the first is the base for relative paths; default: the working directory).",
    )
    add("--no-builtins", action="store_true", help="Serve plugin tools only.")
    add("--only", action="append", metavar="NAME|GLOB", help="Serve only matching tools (repeatable).")
    add("--exclude", action="append", metavar="NAME|GLOB", help="Do not serve matching tools (repeatable).")
    add("--config", metavar="FILE", help="Config file: AWF proxy JSON or TOML (default: ./awf-mcp.toml).")
    add("--strict", action="store_true", help="Make any plugin failure fatal.")
    add(
        "--log-level",
        default="INFO",
        metavar="LEVEL",
        help="DEBUG, INFO (one record per call; the default), WARNING or ERROR.",
    )
    add("--log-format", default="text", choices=("text", "json"), help="Log lines as text (default) or json.")
    add("--log-file", metavar="FILE", help="Write logs to FILE instead of stderr.")
    add("--audit-log", metavar="FILE", help="Append one JSONL record per call, arguments included, to FILE.")
    add("--debug", action="store_true", help="Log tracebacks of failing tools to stderr.")
    add("--call-timeout", type=float, metavar="SECONDS", help="Per-call time limit (default 620).")
    add(
        "--output-budget",
        type=int,
        metavar="BYTES",
        help="UTF-8 bytes of result text per call (default: by client; Claude Code 40,000, "
        "Gemini CLI 32,000, Codex and others 10,000).",
    )
    add(
        "--transport",
        default="stdio",
        choices=("stdio", "http"),
        help="stdio (what agents start; the default) or http (Streamable HTTP at /mcp).",
    )
    add("--host", default="127.0.0.1", help="HTTP: address to bind (default: 127.0.0.1, loopback).")
    add("--port", type=int, default=8765, help="HTTP: port to listen on (default 8765; 0 picks a free one).")
    add(
        "--token",
        default=os.environ.get("AWF_MCP_TOKEN") or None,
        help="HTTP: require 'Authorization: Bearer TOKEN' on every request (default: $AWF_MCP_TOKEN).",
    )
    return parser


def serve(argv: Sequence[str]) -> None:
    """``awf-mcp serve ARGV...``: parse, load plugins, serve until EOF or a signal, exit."""
    options = serve_parser().parse_args(list(argv))
    configure_logging("DEBUG" if options.debug else options.log_level, options.log_format, options.log_file)
    settings = guarded(
        lambda: load_settings(
            root=options.root,
            no_builtins=options.no_builtins,
            only=options.only,
            exclude=options.exclude,
            config=options.config,
            strict=options.strict,
            call_timeout=options.call_timeout,
            output_budget=options.output_budget,
        )
    )
    if settings.servers and options.transport == "stdio":  # before the imports below: starts overlap
        from awf_mcp.core.servers import launch_early

        launch_early(settings.servers, settings.roots)
    import anyio

    from awf_mcp.cli import runtime

    observer: Callable[[Any], None] = runtime.log_call
    if options.audit_log:
        from awf_mcp.core.observability import AuditLog

        try:
            audit = AuditLog(options.audit_log)
        except OSError as exc:
            fail(UserError(f"cannot open audit log {options.audit_log}: {exc.strerror or exc}"))
        observer = runtime.observers(runtime.log_call, audit)
    if options.transport == "stdio":
        guarded(lambda: anyio.run(runtime.serve_stdio, settings, __version__, observer))
    else:
        from awf_mcp.wire.server import LOOPBACK_HOSTS

        host, token = options.host, options.token
        if host not in LOOPBACK_HOSTS and not token:
            fail(
                UserError(
                    f"binding to {host} exposes every tool (Bash included) to the network: "
                    "pass --token TOKEN (or set AWF_MCP_TOKEN) to require bearer authentication"
                )
            )

        async def run_http() -> None:
            await runtime.serve_http(
                settings, __version__, host=host, port=options.port, token=token, observer=observer
            )

        guarded(lambda: anyio.run(run_http))
    exit_now_if_threads_linger(0)


def follow_the_bootloader() -> bool:
    """In the one-file binary on Linux, end with the bootloader; return whether that applies.

    The one-file binary runs as two processes: PyInstaller's bootloader, which unpacks the
    bundle and forwards signals, and its child, this interpreter. SIGKILL cannot be
    forwarded: without this, ``kill -9`` of the process a client started would leave the
    real server running, orphaned (a stdio server notices EOF and exits, an HTTP server
    would serve on). ``PR_SET_PDEATHSIG`` has the kernel send SIGTERM instead, which
    shuts the server down cleanly.
    """
    bundle = getattr(sys, "_MEIPASS", None)
    if not sys.platform.startswith("linux") or not getattr(sys, "frozen", False) or bundle is None:
        return False
    if Path(bundle).resolve().is_relative_to(Path(sys.executable).resolve().parent):
        return False  # the one-directory build: a single process, nothing to follow
    import ctypes
    import signal

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    return True


def main(argv: Sequence[str] | None = None) -> None:
    """Console-script entry point: ``serve`` here, every other command through Typer."""
    follow_the_bootloader()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["__awf_mcp_keeper__"]:  # the one-file binary running a Bash keeper
        from awf_mcp.ops.childenv import child_environment
        from awf_mcp.ops.children import main as keep

        # This process's bootloader pointed the library path at the bundle again: the command
        # the keeper runs gets the user's environment, as every child does.
        user_environment = child_environment()
        os.environ.clear()
        os.environ.update(user_environment)
        keep(args[1:])
    if args[:1] == ["serve"]:
        serve(args[1:])
        return
    from awf_mcp.cli.commands import app

    app(args=args, prog_name="awf-mcp")
