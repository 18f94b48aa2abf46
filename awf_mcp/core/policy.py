"""The policy hooks, as the two callables the call path asks: one per call, one per path.

Contract
--------
:func:`policies_from` reads a loaded plugin manager once, at start-up:

* ``call`` (a :data:`~awf_mcp.core.calls.Policy`) asks every
  ``awf_mcp_authorize_call`` implementation about (tool, source, arguments, kind, caller):
  ``caller`` is the :class:`~awf_mcp.ports.Caller` who made the call; ``kind`` is
  ``tool`` for a tool call, ``prompt`` for ``prompts/get`` (``tool`` is the prompt's name) and
  ``resource`` for ``resources/read`` (``tool`` is the URI, ``arguments`` ``{"uri": ...}``);
* ``path`` (a :data:`~awf_mcp.core.calls.PathPolicy`) asks every
  ``awf_mcp_authorize_path`` implementation about (tool, source, resolved path).

Each is ``None`` when no plugin implements its hook, so an unguarded server pays
nothing. Implementations are called through pluggy, one plugin at a time
(``subset_hook_caller``), so a denial, or a failure, names the plugin it came
from; the first denial wins. A plugin that raises denies (fail closed).

A call plugin may also answer :class:`~awf_mcp.ports.AskUser`: when no plugin denies,
the call policy answers one :class:`~awf_mcp.ports.AskUser` whose reason names every
plugin that asked, and the call path asks the user (:mod:`awf_mcp.core.calls`). A path
plugin's :class:`~awf_mcp.ports.AskUser` is a refusal: a path cannot wait for the user.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pluggy

from awf_mcp.core.calls import PathPolicy, Policy
from awf_mcp.errors import describe_exception
from awf_mcp.ports import LOCAL_CALLER, AskUser, Caller


@dataclass(frozen=True, slots=True)
class Policies:
    """The call policy and the path policy; ``None`` where no plugin has a say."""

    call: Policy | None = None
    path: PathPolicy | None = None


def _per_plugin(manager: pluggy.PluginManager, hook_name: str) -> list[tuple[str, Callable[..., list[Any]]]]:
    """(plugin name, a hook caller reaching only that plugin) for each implementation of ``hook_name``."""
    hook = getattr(manager.hook, hook_name)
    plugins = [impl.plugin for impl in hook.get_hookimpls()]
    callers: list[tuple[str, Callable[..., list[Any]]]] = []
    for plugin in dict.fromkeys(plugins):
        others = [other for other in plugins if other is not plugin]
        callers.append((manager.get_name(plugin) or "?", manager.subset_hook_caller(hook_name, others)))
    return callers


def _first_denial(
    callers: list[tuple[str, Callable[..., list[Any]]]], what: str, kwargs: Mapping[str, Any]
) -> str | AskUser | None:
    """The first plugin's denial; else, when plugins asked, one :class:`AskUser` naming them all."""
    asks: list[str] = []
    for plugin, caller in callers:
        try:
            reasons = caller(**kwargs)
        except Exception as exc:
            return f"{what} denied: policy plugin '{plugin}' failed ({describe_exception(exc)})"
        for reason in reasons:
            if isinstance(reason, AskUser):
                asks.append(f"plugin '{plugin}': {reason.reason}")
            elif reason:
                return f"{what} denied by plugin '{plugin}': {reason}"
    return AskUser("; ".join(asks)) if asks else None


def policies_from(manager: pluggy.PluginManager) -> Policies:
    """The :class:`Policies` of the plugins loaded into ``manager``."""
    call_callers = _per_plugin(manager, "awf_mcp_authorize_call")
    path_callers = _per_plugin(manager, "awf_mcp_authorize_path")

    def authorize_call(
        tool: str,
        source: str,
        arguments: Mapping[str, Any],
        kind: str = "tool",
        caller: Caller = LOCAL_CALLER,
    ) -> str | AskUser | None:
        what = {"tool": "call of", "prompt": "prompt", "resource": "read of"}.get(kind, kind)
        return _first_denial(
            call_callers,
            f"{what} {tool}",
            {"tool": tool, "source": source, "arguments": arguments, "kind": kind, "caller": caller},
        )

    authorize_call.takes_kind = True  # type: ignore[attr-defined]  # read by ToolInvoker.over
    authorize_call.takes_caller = True  # type: ignore[attr-defined]  # read by ToolInvoker.call

    def authorize_path(tool: str, source: str, path: str) -> str | None:
        answer = _first_denial(path_callers, f"{tool} access", {"tool": tool, "source": source, "path": path})
        if isinstance(answer, AskUser):
            return (
                f"{tool} access needs the user's confirmation, which a path cannot wait for ({answer.reason})"
            )
        return answer

    return Policies(
        call=authorize_call if call_callers else None, path=authorize_path if path_callers else None
    )
