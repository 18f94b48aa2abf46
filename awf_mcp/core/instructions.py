"""The server's ``instructions``: what the agent's model is told about awf-mcp before its first call.

Clients put a server's instructions into the model's context (Claude Code adds them to its
system prompt), so they carry what a model needs to use the tools well and nothing else:
the roots and path rules, the output budget and how every shortened result pages, and one
paragraph per plugin that asks for it (hook ``awf_mcp_instructions``). They are sent in the
``initialize`` result and, on the stateless revision, in ``server/discover``.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pluggy

from awf_mcp.budget import CLIENT_BUDGETS, DEFAULT_BUDGET
from awf_mcp.core.config import Settings

log = logging.getLogger("awf_mcp.core.instructions")

MAX_PLUGIN_PARAGRAPH = 1_000
"""Characters of one plugin's paragraph; a longer one is cut (instructions cost every request context)."""


def _budget_sentence(settings: Settings) -> str:
    if settings.output_budget is not None:
        limit = f"at most {settings.output_budget:,} bytes of text"
    else:
        known = ", ".join(f"{name} {budget:,}" for name, budget in CLIENT_BUDGETS.items())
        limit = (
            f"at most the output budget of your client in bytes of text ({known}; others {DEFAULT_BUDGET:,})"
        )
    return (
        f"Every result is {limit}. A shortened result ends with one note '[awf-mcp: ...]' that says "
        "what was left out and exactly how to get it: Read continues at the `offset` the note names; "
        "Grep and Glob take `offset` to page on; Bash keeps the start and the end of each stream and "
        "names a file holding the complete output, which Read accepts."
    )


def server_instructions(settings: Settings, plugin_paragraphs: Sequence[str] = ()) -> str:
    """The instructions text for ``settings`` and the plugins' paragraphs."""
    parts: list[str] = []
    if settings.builtins and settings.roots:
        roots = ", ".join(settings.roots)
        parts.append(
            f"awf-mcp's file and shell tools (Read, Write, Edit, Bash, Glob, Grep) are confined to "
            f"these roots: {roots}. Relative paths are relative to {settings.roots[0]}; an absolute "
            "path must lie inside a root; a path that leaves the roots, symlinks included, is refused. "
            "Read line numbers are 1-based and match Grep's."
        )
        parts.append(
            "Every process a foreground Bash command starts ends with the call. For dev servers, "
            "watchers and long builds, run Bash with run_in_background: it returns a job id at once; "
            "BashOutput reads the job's new output and state, KillShell stops it. Jobs end when the "
            "server does."
        )
    parts.append(_budget_sentence(settings))
    parts.extend(paragraph[:MAX_PLUGIN_PARAGRAPH] for paragraph in plugin_paragraphs if paragraph)
    return "\n\n".join(parts)


def plugin_paragraphs(manager: pluggy.PluginManager) -> list[str]:
    """Each registered plugin's ``awf_mcp_instructions`` paragraph, in registration order.

    Each plugin's hook is called on its own, so one that fails costs only its own paragraph.
    """
    paragraphs: list[str] = []
    for name, plugin in manager.list_name_plugin():
        if not manager.get_hookcallers(plugin):
            continue
        others = [p for p in manager.get_plugins() if p is not plugin]
        caller = manager.subset_hook_caller("awf_mcp_instructions", remove_plugins=others)
        try:
            answers = caller()
        except Exception as exc:
            log.warning("plugin '%s' failed to give its instructions: %s", name, exc)
            continue
        paragraphs.extend(str(answer).strip() for answer in answers if answer)
    return paragraphs
