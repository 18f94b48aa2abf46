"""Doctor's ``sandbox`` check: how Bash, its jobs and stdio upstreams are contained here.

See :mod:`awf_mcp.cli.doctor` for the contract. The finding names the backend in force, what
it enforces, and why each other backend was not used; where none works and the policy says
``contained``, it is an error: Bash and the upstreams are refused until the kernel allows one
or the user sets ``mode = "off"``.
"""

from __future__ import annotations

from awf_mcp.cli.doctor.context import Context
from awf_mcp.cli.doctor.report import ERROR, INFO, OK, WARNING, Finding

SUBJECT = "sandbox of Bash and the upstreams"


async def check_sandbox(ctx: Context) -> list[Finding]:
    """The backend in force (``bwrap`` or ``landlock``), or why Bash and upstreams are refused."""
    from awf_mcp.processes.containment import policy
    from awf_mcp.processes.containment.backends import BACKEND_VARIABLE, select
    from awf_mcp.processes.containment.layout import layout

    if ctx.settings is None:
        return []
    data: dict[str, object]
    active = ctx.settings.sandbox
    if not active.contained:
        detail = 'mode = "off": Bash, its jobs and stdio upstreams run with your full rights'
        fix = 'remove mode = "off" from [sandbox] to contain them'
        return [Finding("sandbox", WARNING, SUBJECT, detail, fix, {"mode": "off", "backend": None})]
    selection = select()
    passed_over = {name: why for name, why in selection.passed_over}
    others = "; ".join(f"{name} not used: {why}" for name, why in selection.passed_over)
    if selection.backend is None:
        fix = (
            f"unset {BACKEND_VARIABLE} to let awf-mcp choose"
            if selection.forced
            else "allow unprivileged user namespaces (bwrap) or use Linux 6.7+ (Landlock), or set "
            'mode = "off" in [sandbox] to run Bash and upstreams uncontained'
        )
        data = {"mode": "contained", "backend": None, "passed_over": passed_over}
        return [Finding("sandbox", ERROR, SUBJECT, selection.unavailable(), fix, data)]
    backend = selection.backend
    shell = layout("shell", active, ctx.settings.roots)
    hosts = ", ".join(shell.hosts) if shell.network == "proxy" else shell.network
    detail = f"{backend.name}: {backend.enforces()}. Bash's network: {hosts}"
    if others:
        detail += f" ({others})"
    data = {
        "mode": "contained",
        "backend": backend.name,
        "forced": selection.forced,
        "passed_over": passed_over,
        "network": list(shell.hosts),
        "writable": list(shell.writable),
        "hidden": list(shell.hidden),
        "deny_read": list(policy.deny_read(active)),
    }
    return [Finding("sandbox", OK if not selection.forced else INFO, SUBJECT, detail, "", data)]
