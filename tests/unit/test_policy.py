"""The policy hooks as the call path sees them: asked through pluggy, denials attributed to a plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

from awf_mcp import hookspecs
from awf_mcp.core.policy import policies_from
from awf_mcp.hookspecs import hookimpl


class Quiet:
    @hookimpl
    def awf_mcp_authorize_call(self, tool: str) -> str | None:
        return None


class NoSecrets:
    @hookimpl
    def awf_mcp_authorize_path(self, path: str) -> str | None:
        return "secrets stay put" if path.endswith("/.env") else None


class Broken:
    @hookimpl
    def awf_mcp_authorize_path(self, tool: str, source: str, path: str) -> str | None:
        raise RuntimeError("boom")


def manager(**plugins: Any) -> pluggy.PluginManager:
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name, plugin in plugins.items():
        pm.register(plugin, name=name)
    return pm


def test_no_implementation_means_no_policy() -> None:
    policies = policies_from(manager())
    assert policies.call is None and policies.path is None


def test_path_denials_name_their_plugin() -> None:
    policies = policies_from(manager(quiet=Quiet(), guard=NoSecrets()))
    assert policies.call is not None and policies.path is not None
    arguments: Mapping[str, Any] = {"path": ".env"}
    assert policies.call("Read", "builtin", arguments) is None
    assert policies.path("Read", "builtin", "/repo/app.py") is None
    assert policies.path("Read", "builtin", "/repo/.env") == (
        "Read access denied by plugin 'guard': secrets stay put"
    )


def test_a_failing_path_policy_denies() -> None:
    policies = policies_from(manager(broken=Broken()))
    assert policies.path is not None
    denial = policies.path("Grep", "builtin", "/repo/x")
    assert denial is not None and "policy plugin 'broken' failed (RuntimeError: boom)" in denial
