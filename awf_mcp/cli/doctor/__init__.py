"""``awf-mcp doctor``: check everything an agent needs of awf-mcp, and say how to fix what is wrong.

Contract
--------
:func:`diagnose` runs every check in :data:`CHECKS` against one :class:`Context` (the
working directory, home, environment, settings and option values) and returns a
:class:`Report`: one :class:`Finding` per thing checked, in the order of :data:`CHECKS`.
A check is an ``async`` function ``check(ctx) -> list[Finding]``; adding a check is
adding one function to :data:`CHECKS`. The checks run concurrently (starting servers
is what takes time); what several of them need (the loaded plugins, the started
upstream servers, the merged registry) is computed once by :meth:`Context.loaded`.

The checks:

``configuration``
    the settings load (``--config``, ``./awf-mcp.toml``, ``--root`` ...) exactly as
    ``awf-mcp serve`` loads them; when they do not, the checks that need them are skipped.
``clients``
    every client profile in :data:`awf_mcp.clients.clientconfig.PROFILES` that has files,
    every scope, read by :func:`awf_mcp.clients.clientconfig.server_files`: the awf entry
    (named ``awf``, or any entry whose command runs ``awf-mcp ... serve``), whether it
    is disabled, whether its command exists, and whether it starts and answers
    ``tools/list`` within ``--timeout`` seconds, started as the client starts it (its
    command, arguments and ``env``, in the working directory) through the SDK client
    (:mod:`awf_mcp.wire.client`). stdio entries only; an HTTP entry is noted. An entry
    in a project-scope file (which may have come with a cloned repository) is started
    only when its command is an awf-mcp installed outside the project; any other is
    reported, not run. (Like ``serve`` and ``servers list``, doctor trusts the
    configuration it loads: the upstream servers of ``./awf-mcp.toml`` are started.)
``plugins``
    every plugin: loaded (with its tools), failed (with the reason), or disabled.
``servers``
    every upstream MCP server in the configuration, started as ``serve`` starts it:
    running (with its tools), failed (with the reason), or disabled; and a warning for
    each of its tools held back (:mod:`awf_mcp.core.pins`: changed since approved, or new)
    naming the ``awf-mcp servers approve NAME`` that approves it. An ``auth = "oauth"``
    server also shows its sign-in: signed in (the token's expiry), needs sign-in (an error
    whose fix is ``awf-mcp servers login NAME``) or refused.
``tools``
    the plugins' and servers' tools merge into one registry (a name collision stops
    ``serve``), and names too long for some clients.
``roots``
    every root exists, is a directory, and can be listed.
``build``
    what this awf-mcp is (:mod:`awf_mcp.install.buildinfo`): version, commit, the Python and
    C library it runs on, its ``rg`` and the platform it was built for.
``search``
    the ``rg`` Grep and Glob run (:func:`awf_mcp.builtins.ripgrep.ripgrep_binary`):
    where it comes from and its version, or the pure-Python engine.
``sandbox``
    how Bash, its jobs and stdio upstreams are contained (:mod:`awf_mcp.processes.containment`):
    the backend in force (``bwrap`` or ``landlock``), what it enforces, and why another was
    not used; an error when none works here and ``[sandbox] mode`` is ``contained``.
``plugin-directories``
    the plugin directories (:func:`awf_mcp.install.plugindirs.plugin_dirs`): what the
    single executable loads plugins from and ``plugins install`` writes to, and the
    Python ``plugins install`` runs pip with.

Statuses: ``ok``; ``info`` (nothing to do); ``warning`` (works, but not as well as it
could); ``error`` (something is broken). The command exits 1 when any finding is an
error, 0 otherwise. ``--json`` prints :meth:`Report.as_data` (keys in docs/doctor.md):
``{"version", "ok", "counts": {status: n}, "findings": [{"check", "status", "subject",
"detail", "fix", "data"}]}``. Nothing secret is shown: a client entry's ``env`` by key
only, an upstream server as :meth:`~awf_mcp.core.servers.ServerSpec.public` shows it.

Where things are
----------------
* :mod:`~awf_mcp.cli.doctor.report`  :class:`Finding`, :class:`Report`, the statuses;
* :mod:`~awf_mcp.cli.doctor.context`  :class:`Context` (and :class:`Loaded`: plugins and servers
  started once for all checks);
* one module per subject, each holding its checks: :mod:`~awf_mcp.cli.doctor.configuration`,
  :mod:`~awf_mcp.cli.doctor.clients`, :mod:`~awf_mcp.cli.doctor.plugins` (and the plugin
  directories), :mod:`~awf_mcp.cli.doctor.servers` (and the merged tools),
  :mod:`~awf_mcp.cli.doctor.roots`, :mod:`~awf_mcp.cli.doctor.search`,
  :mod:`~awf_mcp.cli.doctor.sandbox`,
  :mod:`~awf_mcp.cli.doctor.build`;
* this module: :data:`CHECKS`, :func:`run_checks`, :func:`diagnose`, the printed report and the
  Typer command.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated

import typer

from awf_mcp.cli.doctor.build import check_build
from awf_mcp.cli.doctor.clients import check_clients, probe_commands
from awf_mcp.cli.doctor.configuration import check_configuration
from awf_mcp.cli.doctor.context import DEFAULT_TIMEOUT_SECONDS, Check, Context, Loaded
from awf_mcp.cli.doctor.plugins import (
    check_plugin_directories,
    check_plugins,
    installer_python_finding,
    plugin_directory_findings,
)
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, STATUSES, WARNING, Finding, Report, counted
from awf_mcp.cli.doctor.roots import check_roots, root_findings
from awf_mcp.cli.doctor.sandbox import check_sandbox
from awf_mcp.cli.doctor.search import check_search, search_findings
from awf_mcp.cli.doctor.servers import check_servers, check_tools, held_findings
from awf_mcp.cli.options import with_options
from awf_mcp.core.config import ServeOptions

__all__ = [
    "CHECKS",
    "DEFAULT_TIMEOUT_SECONDS",
    "ERROR",
    "INFO",
    "OK",
    "STATUSES",
    "WARNING",
    "Check",
    "Context",
    "Finding",
    "Loaded",
    "Report",
    "check_build",
    "check_clients",
    "check_configuration",
    "check_plugin_directories",
    "check_plugins",
    "check_roots",
    "check_sandbox",
    "check_search",
    "check_servers",
    "check_tools",
    "diagnose",
    "doctor_command",
    "held_findings",
    "installer_python_finding",
    "plugin_directory_findings",
    "print_report",
    "probe_commands",
    "root_findings",
    "run_checks",
    "search_findings",
]


CHECKS: tuple[Check, ...] = (
    check_build,
    check_configuration,
    check_clients,
    check_plugins,
    check_servers,
    check_tools,
    check_roots,
    check_search,
    check_sandbox,
    check_plugin_directories,
)
"""Every check, in report order."""


async def run_checks(ctx: Context, checks: Sequence[Check] = CHECKS) -> Report:
    """Run ``checks`` concurrently; their findings in check order."""
    import anyio

    from awf_mcp.errors import describe_exception

    results: list[list[Finding]] = [[] for _ in checks]

    async def run(index: int, check: Check) -> None:
        name = getattr(check, "__name__", "check").removeprefix("check_").replace("_", "-")
        try:
            results[index] = await check(ctx)
        except Exception as exc:  # one check's bug must not hide the others' findings
            results[index] = [
                Finding(name, ERROR, name, f"the check itself failed: {describe_exception(exc)}", "report it")
            ]

    try:
        async with anyio.create_task_group() as group:
            for index, check in enumerate(checks):
                group.start_soon(run, index, check)
    finally:
        await ctx.close()
    return Report([finding for found in results for finding in found])


def diagnose(
    options: ServeOptions,
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    cwd: Path | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Report:
    """Load the settings from ``options`` as ``serve`` does, and run every check."""
    import anyio

    ctx = Context(
        cwd=Path.cwd() if cwd is None else cwd,
        home=Path.home() if home is None else home,
        env=os.environ if env is None else env,
        options=options,
        timeout=timeout,
    )
    ctx.load_settings()
    return anyio.run(run_checks, ctx)


# --------------------------------------------------------------------------- output

_BADGES = {OK: "[green]ok[/]   ", INFO: "[blue]info[/] ", WARNING: "[yellow]warn[/] ", ERROR: "[red]error[/]"}


def print_report(report: Report) -> None:
    """One line per finding (status, check, what was found), its fix on a line of its own (not
    wrapped, so a command can be copied whole), then the counts."""
    from rich.console import Console

    from awf_mcp.cli.terminal import shown

    console = Console(highlight=False)
    for finding in report.findings:
        line = f"{_BADGES[finding.status]} {finding.check}: {shown(finding.subject)}: {shown(finding.detail)}"
        console.print(line)
        if finding.fix:  # a line of its own, never wrapped: a command stays whole and copyable
            console.print(f"      [bold]fix:[/] {shown(finding.fix)}", soft_wrap=True)
    counts = report.counts()
    problems = f"{counted(counts[WARNING], WARNING)}, {counted(counts[ERROR], ERROR)}"
    summary = f"{counts[OK]} ok, {counts[INFO]} info, {problems}"
    verdict = "[red]something is broken[/]" if report.broken else "[green]nothing is broken[/]"
    console.print(f"\n{summary}: {verdict}")


@with_options("roots", "no_builtins", "only", "exclude", "config", "strict")
def doctor_command(
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as stable JSON.")] = False,
    timeout: Annotated[
        float,
        typer.Option(
            "--timeout", help="Seconds each client's awf entry may take to start and list its tools."
        ),
    ] = DEFAULT_TIMEOUT_SECONDS,
    *,
    options: ServeOptions,
) -> None:
    """Check the clients' awf entries, plugins, upstream servers, roots and search engine.

    Each finding says how to fix it; exits 1 when something is broken.
    """
    from awf_mcp.cli.runtime import say
    from awf_mcp.core.observability import configure_logging
    from awf_mcp.errors import UserError

    if timeout <= 0:
        raise UserError(f"--timeout must be a positive number of seconds, not {timeout:g}")
    configure_logging("CRITICAL")
    say("checking the clients' awf entries, the plugins, the upstream servers, the roots ...")
    report = diagnose(options, timeout=timeout)
    if json_output:
        print(json.dumps(report.as_data(), indent=2, sort_keys=True))
    else:
        print_report(report)
    if report.broken:
        raise typer.Exit(1)
