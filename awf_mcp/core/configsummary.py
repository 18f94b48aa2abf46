"""What a config file would do, in words: the phrases of the trust prompt (``awf-mcp trust``) and of
the notice of a file ignored (:class:`awf_mcp.core.config.IgnoredConfig`).

:func:`describe` takes the fields :func:`awf_mcp.core.config.parse_file` returned and says, one
phrase each and most dangerous first, the commands the file starts, the hosts it connects to and
what it widens; :func:`sandbox_widening` says what a ``[sandbox]`` table allows beyond the default.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

from awf_mcp.processes.containment.policy import SandboxPolicy


def sandbox_widening(policy: SandboxPolicy, subject: str = "Bash and the upstream servers") -> list[str]:
    """What a ``[sandbox]`` table allows ``subject`` beyond the default, one phrase each (for the
    trust prompt: widening the sandbox needs the user's approval)."""
    phrases = []
    if not policy.contained:
        phrases.append(f'run {subject} uncontained (mode = "off")')
    if policy.network:
        phrases.append(f"let {subject} reach {', '.join(policy.network)}")
    if policy.allow_write:
        phrases.append(f"let {subject} write {', '.join(policy.allow_write)}")
    if policy.env_pass:
        phrases.append(f"pass {subject} the secret variables {', '.join(policy.env_pass)}")
    if policy.deny_read:
        phrases.append(f"hide {', '.join(policy.deny_read)}")
    return phrases


def describe(fields: Mapping[str, Any]) -> list[str]:
    """What a parsed config file (:func:`parse_file`'s fields) would do, one phrase each, most
    dangerous first: the commands it starts and the hosts it connects to, then what it widens."""
    lines: list[str] = []
    if "sandbox" in fields:
        lines += sandbox_widening(fields["sandbox"])
    for spec in fields.get("servers", ()):
        if not spec.enabled:
            continue
        env = f" (env: {', '.join(sorted(spec.env))})" if spec.env else ""
        if spec.url:
            lines.append(f"connect to server {spec.name} at {spec.written_url}{env}")
        else:
            lines.append(f"start server {spec.name}: {shlex.join([spec.command, *spec.written_args])}{env}")
        if spec.sandbox:
            lines += sandbox_widening(SandboxPolicy().for_server(spec.sandbox), f"server {spec.name}")
    if fields.get("roots"):
        lines.append(f"confine the tools to {', '.join(fields['roots'])}")
    if fields.get("builtins") is False:
        lines.append("turn the built-in tools off")
    for key in ("only", "exclude"):
        if fields.get(key):
            lines.append(f"{key} {', '.join(fields[key])}")
    if fields.get("renames"):
        lines.append(f"rename {', '.join(f'{a} to {b}' for a, b in sorted(fields['renames'].items()))}")
    for name, table in sorted(fields.get("plugin_settings", {}).items()):
        lines.append(f"set plugin {name}'s {', '.join(sorted(table))}")
    if fields.get("plugin_tools"):
        lines.append(f"expose plugin tools of {', '.join(sel.plugin for sel in fields['plugin_tools'])}")
    return lines
