"""Every ``serve`` option, defined once, and everything generated from that definition.

:data:`SERVE_OPTIONS` describes each option of ``awf-mcp serve`` one time: its flag,
its type, its help text and the config-file key it overrides. From
that table come:

* :func:`serve_parser` — the :mod:`argparse` parser of the fast ``serve`` path
  (Typer, click and rich never load when an agent starts the server);
* :func:`with_options` — the same options as parameters of a Typer command
  (``tools list``, ``tools call``, ``config``, ...), which receives their values
  as one typed :class:`~awf_mcp.core.config.ServeOptions`;
* :func:`with_serve_options` — every option, for the help of ``awf-mcp serve --help``,
  which Typer shows (only the help: serve itself is parsed by :func:`serve_parser`);
* :func:`serve_argv` — the argv after ``serve`` that ``awf-mcp config CLIENT``
  writes into an agent's configuration, paths made absolute.

An option that shapes the tool set (:data:`SETTINGS`) lands in a
:class:`~awf_mcp.core.config.ServeOptions` field of the same name, which
:func:`awf_mcp.core.config.load` merges with the config file. The others
(:data:`LAUNCH`: logging, audit, transport) only exist for ``serve`` and land in a
:class:`LaunchOptions`. A value left out is ``None`` (or empty, or ``False``):
the config file or the default decides.

This module imports no Typer at module level: :func:`with_options` imports it
when a Typer command is being defined.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from awf_mcp.core.config import ServeOptions
from awf_mcp.errors import did_you_mean

SERVE_DESCRIPTION = (
    "Serve MCP over stdin/stdout (or Streamable HTTP): the command an agent's MCP configuration runs."
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True, slots=True)
class Option:
    """One option: ``flag`` sets ``field`` of a :class:`ServeOptions` or a :class:`LaunchOptions`.

    ``kind`` is the value type (``bool`` for a switch that takes no value); the
    default is the dataclass field's, so it is written down once;
    ``repeat`` lets the flag be given several times, collecting a tuple; ``path``
    marks a file or directory, made absolute when the option is written into a
    client's configuration; ``config_key`` is the config-file key it overrides.
    """

    field: str
    flag: str
    kind: type
    help: str
    metavar: str | None = None
    repeat: bool = False
    choices: tuple[str, ...] | None = None
    path: bool = False
    config_key: str | None = None


SETTINGS: tuple[Option, ...] = (
    Option(
        "roots",
        "--root",
        str,
        "Directory the built-in tools are confined to "
        "(repeatable; the first is the base for relative paths; default: the working directory).",
        metavar="DIR",
        repeat=True,
        path=True,
        config_key="roots",
    ),
    Option("no_builtins", "--no-builtins", bool, "Serve plugin tools only.", config_key="intercept_builtins"),
    Option(
        "only",
        "--only",
        str,
        "Serve only tools matching NAME or GLOB (repeatable).",
        metavar="NAME|GLOB",
        repeat=True,
        config_key="only",
    ),
    Option(
        "exclude",
        "--exclude",
        str,
        "Do not serve tools matching NAME or GLOB (repeatable).",
        metavar="NAME|GLOB",
        repeat=True,
        config_key="exclude",
    ),
    Option(
        "config",
        "--config",
        str,
        "Config file: AWF proxy JSON or TOML (default: ./awf-mcp.toml).",
        metavar="FILE",
        path=True,
    ),
    Option(
        "strict", "--strict", bool, "Make any plugin or upstream server failure fatal.", config_key="strict"
    ),
    Option(
        "call_timeout_seconds",
        "--call-timeout",
        float,
        "Per-call time limit in seconds (default 620).",
        metavar="SECONDS",
        config_key="call_timeout_seconds",
    ),
    Option(
        "output_budget",
        "--output-budget",
        int,
        "UTF-8 bytes of result text per call (default: by client; Claude Code 40,000, "
        "Gemini CLI 32,000, Codex and others 10,000).",
        metavar="BYTES",
        config_key="output_budget",
    ),
)
"""The options that shape what is served: fields of :class:`~awf_mcp.core.config.ServeOptions`."""

LAUNCH: tuple[Option, ...] = (
    Option(
        "log_level",
        "--log-level",
        str,
        "DEBUG, INFO (one record per call), WARNING or ERROR. Default: $AWF_MCP_LOG_LEVEL, else "
        "WARNING on stdio's stderr (an agent passes it to its own console), INFO into --log-file "
        "or over HTTP; the per-call record of a stdio server is --audit-log FILE.",
        metavar="LEVEL",
    ),
    Option(
        "log_format",
        "--log-format",
        str,
        "Log lines as text (default) or json.",
        choices=("text", "json"),
    ),
    Option("log_file", "--log-file", str, "Write logs to FILE instead of stderr.", metavar="FILE", path=True),
    Option(
        "audit_log",
        "--audit-log",
        str,
        "Append one JSONL record per call, arguments included, to FILE.",
        metavar="FILE",
        path=True,
    ),
    Option("debug", "--debug", bool, "Log tracebacks of failing tools to stderr."),
    Option(
        "no_shared",
        "--no-shared",
        bool,
        "stdio: serve in this process, not through the user's shared awf-mcp (as AWF_MCP_SHARED=0).",
    ),
    Option(
        "transport",
        "--transport",
        str,
        "stdio (what agents start; the default) or http (Streamable HTTP at /mcp).",
        choices=("stdio", "http"),
    ),
    Option(
        "host",
        "--host",
        str,
        "HTTP: address to bind (default: 127.0.0.1, loopback).",
    ),
    Option(
        "port",
        "--port",
        int,
        "HTTP: port to listen on (default 8765; 0 picks a free one).",
    ),
    Option(
        "token_file",
        "--token-file",
        str,
        "HTTP: accept the named tokens of FILE, one 'NAME TOKEN' per line (chmod 600; "
        "read again on SIGHUP); each caller is recorded by name.",
        metavar="FILE",
        path=True,
    ),
    Option(
        "auth_issuer",
        "--auth-issuer",
        str,
        "HTTP: accept the access tokens of this OAuth authorization server (its issuer URL; "
        "also issuer in the config file's http.auth table).",
        metavar="URL",
    ),
    Option(
        "auth_audience",
        "--auth-audience",
        str,
        "HTTP: this server's resource URL, which an access token's audience must name "
        "(e.g. https://mcp.example.com/mcp).",
        metavar="URL",
    ),
    Option(
        "auth_scopes",
        "--auth-scope",
        str,
        "HTTP: a scope every access token must grant (repeatable).",
        metavar="SCOPE",
        repeat=True,
    ),
    Option(
        "auth_claims",
        "--auth-claim",
        str,
        "HTTP: an access-token claim the caller carries into the audit log and the policy "
        "(repeatable; default: groups).",
        metavar="CLAIM",
        repeat=True,
    ),
    Option(
        "allow_shell",
        "--allow-shell",
        bool,
        "HTTP on a non-loopback address: serve Bash anyway, to every caller, with this host's rights.",
    ),
    Option(
        "token",
        "--token",
        str,
        "HTTP: require 'Authorization: Bearer TOKEN' on every request (default: $AWF_MCP_TOKEN, "
        "else a token awf-mcp keeps in its state directory and prints).",
    ),
    Option(
        "no_token",
        "--no-token",
        bool,
        "HTTP on loopback: require no token (every user of this machine can then run every tool as you).",
    ),
    Option(
        "state_key_file",
        "--state-key-file",
        str,
        "HTTP: the key replicas share to seal request_state, one hex key per line, the first seals "
        "(default: $AWF_MCP_STATE_KEY, else a key of this process).",
        metavar="FILE",
        path=True,
    ),
)
"""The options only ``serve`` has: fields of :class:`LaunchOptions`."""

SERVE_OPTIONS: tuple[Option, ...] = SETTINGS + LAUNCH
"""Every option of ``awf-mcp serve``, in ``--help`` order."""

_BY_FIELD = {option.field: option for option in SERVE_OPTIONS}


@dataclass(frozen=True, slots=True)
class LaunchOptions:
    """How ``serve`` runs: logging, the audit log and the transport."""

    log_level: str | None = None
    """``None``: :func:`log_level` decides."""
    log_format: Literal["text", "json"] = "text"
    log_file: str | None = None
    audit_log: str | None = None
    debug: bool = False
    no_shared: bool = False
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8765
    token_file: str | None = None
    auth_issuer: str | None = None
    auth_audience: str | None = None
    auth_scopes: tuple[str, ...] = ()
    auth_claims: tuple[str, ...] = ()
    allow_shell: bool = False
    token: str | None = None
    no_token: bool = False
    state_key_file: str | None = None


FLAG_HINTS = {"--http": "--transport http", "--stdio": "--transport stdio", "--sse": "--transport http"}
"""Flags other servers take, and what ``serve`` calls them."""


class _ServeParser(argparse.ArgumentParser):
    """argparse, with a way forward for an option it does not know."""

    def error(self, message: str) -> Any:
        if message.startswith("unrecognized arguments:"):
            known = [option.flag for option in SERVE_OPTIONS]
            hints = []
            for word in message.split(":", 1)[1].split():
                flag = word.split("=")[0]
                hint = f"use '{FLAG_HINTS[flag]}'" if flag in FLAG_HINTS else did_you_mean(flag, known)
                if flag.startswith("--") and hint:
                    hints.append(f"{flag}: {hint}")
            if hints:
                message += " (" + "; ".join(hints) + ")"
        return super().error(message)


@functools.cache
def serve_parser() -> argparse.ArgumentParser:
    """The :mod:`argparse` parser of ``awf-mcp serve``, generated from :data:`SERVE_OPTIONS`
    (made once: the shared server makes it before it forks its sessions)."""
    parser = _ServeParser(prog="awf-mcp serve", description=SERVE_DESCRIPTION)
    for option in SERVE_OPTIONS:
        if option.kind is bool:
            parser.add_argument(option.flag, dest=option.field, action="store_true", help=option.help)
            continue
        parser.add_argument(
            option.flag,
            dest=option.field,
            type=option.kind,
            action="append" if option.repeat else "store",
            metavar=option.metavar,
            choices=option.choices,
            help=option.help,
        )
    return parser


def _values(raw: dict[str, Any], options: Sequence[Option]) -> dict[str, Any]:
    """Option values as dataclass fields: a repeated option as a tuple, a missing one left out."""
    values: dict[str, Any] = {}
    for option in options:
        value = raw.get(option.field)
        if value is None:
            continue
        values[option.field] = tuple(value) if option.repeat else value
    return values


LOG_LEVEL_VARIABLE = "AWF_MCP_LOG_LEVEL"


def log_level(launch: LaunchOptions, environ: Mapping[str, str] | None = None) -> str:
    """The level ``serve`` logs at: ``--debug``, ``--log-level``, ``$AWF_MCP_LOG_LEVEL``, else WARNING
    on stdio's stderr (what the agent does with it is its business: some pass it to a console), and
    INFO into a ``--log-file`` or over HTTP (a service's log)."""
    if launch.debug:
        return "DEBUG"
    environ = os.environ if environ is None else environ
    chosen = launch.log_level or environ.get(LOG_LEVEL_VARIABLE, "").strip()
    return chosen or ("INFO" if launch.transport == "http" or launch.log_file else "WARNING")


def parse_serve(argv: Sequence[str]) -> tuple[ServeOptions, LaunchOptions]:
    """``awf-mcp serve ARGV...`` parsed; argparse exits with a usage message on a bad flag."""
    raw = vars(serve_parser().parse_args(list(argv)))
    launch = _values(raw, LAUNCH)
    launch.setdefault("token", os.environ.get("AWF_MCP_TOKEN") or None)
    return ServeOptions(**_values(raw, SETTINGS)), LaunchOptions(**launch)


def _typer_parameter(option: Option) -> inspect.Parameter:
    import typer

    kind: Any = bool if option.kind is bool else option.kind | None
    if option.repeat:
        kind = list[option.kind] | None  # type: ignore[name-defined]
    metavar = option.metavar or ("|".join(option.choices) if option.choices else None)
    info = typer.Option(option.flag, help=option.help, metavar=metavar)
    default = False if option.kind is bool else None
    return inspect.Parameter(
        option.field, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[kind, info]
    )


def with_options(*fields: str) -> Callable[[F], F]:
    """Give a Typer command the named :data:`SETTINGS` options, as ``options: ServeOptions``.

    The decorated command declares a keyword parameter ``options``; Typer sees one
    parameter per named option instead (same flag and help as ``serve``), and the
    command is called with their values gathered into one :class:`ServeOptions`.
    """
    chosen = [_BY_FIELD[name] for name in fields]
    unknown = [option.field for option in chosen if option not in SETTINGS]
    if unknown:
        raise ValueError(f"not a settings option: {', '.join(unknown)}")

    def decorate(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        kept = [p for name, p in signature.parameters.items() if name != "options"]
        added = [_typer_parameter(option) for option in chosen]

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            raw = {option.field: kwargs.pop(option.field) for option in chosen}
            return command(*args, options=ServeOptions(**_values(raw, chosen)), **kwargs)

        parameters = kept + added
        run.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in parameters}
        return run  # type: ignore[return-value]

    return decorate


def with_serve_options(command: F) -> F:
    """Give a Typer command every option of ``serve`` (:data:`SERVE_OPTIONS`), for its help.

    ``awf-mcp serve`` itself is parsed by :func:`serve_parser`; this only lets Typer show
    ``awf-mcp serve --help`` as it shows every other command's. The values are dropped.
    """
    parameters = [_typer_parameter(option) for option in SERVE_OPTIONS]

    @functools.wraps(command)
    def run(**values: Any) -> Any:
        return command()

    run.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in parameters}
    return run  # type: ignore[return-value]


def serve_argv(options: ServeOptions, base: Path | None = None) -> list[str]:
    """The argv after ``serve`` that reproduces ``options``; paths made absolute against ``base``.

    This is what ``awf-mcp config CLIENT`` writes into a client's configuration, so
    the agent's server serves what ``tools list`` with the same options shows.
    """
    argv: list[str] = []
    for option in SETTINGS:
        value = getattr(options, option.field)
        if value is None or value is False or value == ():
            continue
        if option.kind is bool:
            argv.append(option.flag)
            continue
        for item in value if option.repeat else (value,):
            text = str(item)
            if option.path:
                text = str(((base or Path.cwd()) / Path(text).expanduser()).absolute())
            argv += [option.flag, text]
    return argv
