"""The policy hooks as the call path sees them: asked through pluggy, denials attributed to a plugin."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pluggy

from awf_mcp import hookspecs
from awf_mcp.core.policy import policies_from
from awf_mcp.hookspecs import hookimpl
from awf_mcp.ports import AskUser


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


class AsksAboutPush:
    @hookimpl
    def awf_mcp_authorize_call(self, tool: str, arguments: Mapping[str, Any]) -> AskUser | None:
        return AskUser("pushes leave the machine") if "push" in str(arguments.get("command")) else None


class AsksAboutEverything:
    @hookimpl
    def awf_mcp_authorize_call(self) -> AskUser:
        return AskUser("every call is checked")


class DeniesForce:
    @hookimpl
    def awf_mcp_authorize_call(self, arguments: Mapping[str, Any]) -> str | None:
        return "no force pushes" if "--force" in str(arguments.get("command")) else None


class AsksAboutPaths:
    @hookimpl
    def awf_mcp_authorize_path(self) -> AskUser:
        return AskUser("paths are checked")


def test_asks_name_every_plugin_that_asked() -> None:
    policies = policies_from(manager(push=AsksAboutPush(), all=AsksAboutEverything()))
    assert policies.call is not None
    answer = policies.call("Bash", "builtin", {"command": "git push"})
    assert answer == AskUser("plugin 'push': pushes leave the machine; plugin 'all': every call is checked")
    assert policies.call("Bash", "builtin", {"command": "ls"}) == AskUser(
        "plugin 'all': every call is checked"
    )


def test_a_denial_wins_over_asking() -> None:
    policies = policies_from(manager(push=AsksAboutPush(), force=DeniesForce()))
    assert policies.call is not None
    answer = policies.call("Bash", "builtin", {"command": "git push --force"})
    assert answer == "call of Bash denied by plugin 'force': no force pushes"


def test_a_path_policy_that_asks_refuses() -> None:
    policies = policies_from(manager(paths=AsksAboutPaths()))
    assert policies.path is not None
    denial = policies.path("Read", "builtin", "/repo/x")
    assert denial is not None and "cannot wait" in denial and "paths are checked" in denial
