"""Signing in to an OAuth server through the agent, by URL elicitation, on both protocol families.

The agent is the SDK's client with an elicitation callback (it declares ``elicitation.url``); the
callback plays the user: it follows the link with an HTTP client, as a browser would, and the test
authorization server (``tests/upstreams/remote_upstream.py``) approves at once and redirects to
awf-mcp's loopback callback.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.subscriptions import ToolsListChanged, listen
from mcp.shared.exceptions import MCPError

from awf_mcp.state import tokenstore
from tests.e2e.test_remote_upstreams import awf, oauth_table
from tests.e2e.test_upstream import NO_PLUGINS, write_config
from tests.helpers.harness import call_answering, mcp_session, text_of
from tests.helpers.remote import remote_upstream

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


class User:
    """The agent's user: follows each sign-in link (or declines), and remembers what was asked."""

    def __init__(self, action: str = "accept") -> None:
        self.action = action
        self.asked: list[types.ElicitRequestURLParams] = []
        self.pages: list[httpx2.Response] = []

    async def elicit(self, ctx: ClientRequestContext, params: Any) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params)
        if self.action == "accept":
            async with httpx2.AsyncClient(timeout=30) as browser:
                self.pages.append(await browser.get(params.url, follow_redirects=True))
        return types.ElicitResult(action=self.action)  # type: ignore[arg-type]


class Notified:
    """The handshake-era client's notifications: ``tools/list_changed``, and the ``elicitationId`` of
    each ``elicitation/complete``."""

    def __init__(self) -> None:
        self.tools_changed = anyio.Event()
        self.completed: list[str] = []

    async def handle(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed.set()
        if isinstance(message, types.ElicitCompleteNotification):
            self.completed.append(message.params.elicitation_id)


async def names(session: ClientSession) -> set[str]:
    return {tool.name for tool in (await session.list_tools()).tools}


@asynccontextmanager
async def signing_in(
    tmp_path: Path, user: User, *, stateless: bool = False, **callbacks: Any
) -> AsyncIterator[tuple[ClientSession, str]]:
    """``serve`` over an OAuth server nobody signed in to, to an agent declaring URL elicitation."""
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        async with mcp_session(
            "--config",
            config,
            "--no-builtins",
            cwd=tmp_path,
            env=NO_PLUGINS,
            stateless=stateless,
            elicitation_callback=user.elicit,
            **callbacks,
        ) as session:
            yield session, base


async def revoke(tmp_path: Path) -> None:
    """Revoke the sign-in at the server (logout revokes every token of the client): refreshing fails too."""
    config = str(tmp_path / "awf-mcp.toml")
    done = await anyio.to_thread.run_sync(
        lambda: awf(tmp_path, "servers", "logout", "remote", "--config", config)
    )
    assert "the server revoked them" in done.stdout, done.stdout + done.stderr


def check_link(user: User, base: str) -> None:
    """The link the agent showed: the server's own authorization page, redirecting to loopback."""
    (asked,) = {(params.url, params.elicitation_id) for params in user.asked}
    url, _ = asked
    assert url.startswith(f"{base}/authorize?")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert query["redirect_uri"][0].startswith("http://127.0.0.1:")
    assert query["code_challenge_method"] == ["S256"]
    assert user.pages and user.pages[-1].status_code == 200


async def test_a_handshake_era_agent_signs_in_by_url_and_the_tools_appear_through_list_changed(
    tmp_path: Path,
) -> None:
    user, notified = User(), Notified()
    async with signing_in(tmp_path, user, message_handler=notified.handle) as (session, base):
        assert await names(session) == {"remote_sign_in"}
        result = await session.call_tool("remote_sign_in", {})
        assert not result.is_error, text_of(result)
        assert "signed in to server 'remote': its 2 tools (remote_*) are now served" in text_of(result)
        relayed = "The server's instructions for its tools:\n\nCall echo to hear a message back;"
        assert relayed in text_of(result), text_of(result)  # remote_upstream.INSTRUCTIONS
        with anyio.fail_after(10):
            await notified.tools_changed.wait()
        assert await names(session) == {"remote_echo", "remote_whoami"}
        echoed = await session.call_tool("remote_echo", {"message": "after sign-in"})
        assert text_of(echoed) == "echo: after sign-in"
        check_link(user, base)
        # The sign-in's end was told with the id the question carried, before the call answered.
        assert notified.completed == [user.asked[0].elicitation_id]
    assert '"access_token"' in tokenstore.record_path().read_text()


async def test_a_stateless_agent_signs_in_through_input_required_and_is_told_on_its_listen_stream(
    tmp_path: Path,
) -> None:
    user = User()
    async with signing_in(tmp_path, user, stateless=True) as (session, base):
        assert await names(session) == {"remote_sign_in"}
        async with listen(session, tools_list_changed=True) as changes:
            first = await session.call_tool("remote_sign_in", {}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            [request] = first.input_requests.values()
            assert request.method == "elicitation/create"
            result = await call_answering(session, "remote_sign_in", {})
            assert not result.is_error, text_of(result)
            assert "signed in to server 'remote'" in text_of(result)
            with anyio.fail_after(10):
                assert await changes.__anext__() == ToolsListChanged()
        assert await names(session) == {"remote_echo", "remote_whoami"}
        echoed = await session.call_tool("remote_echo", {"message": "stateless"})
        assert text_of(echoed) == "echo: stateless"
        check_link(user, base)
        # The first round and the retry showed the user the same link: one sign-in, not two.
        assert len(user.pages) == 1


async def test_a_sign_in_revoked_mid_session_is_offered_again_and_the_tools_come_back(
    tmp_path: Path,
) -> None:
    user, notified = User(), Notified()
    async with signing_in(tmp_path, user, message_handler=notified.handle) as (session, _):
        assert not (await session.call_tool("remote_sign_in", {})).is_error
        assert text_of(await session.call_tool("remote_echo", {"message": "one"})) == "echo: one"
        await revoke(tmp_path)
        notified.tools_changed = anyio.Event()
        refused = await session.call_tool("remote_echo", {"message": "two"})
        assert refused.is_error
        assert "run awf-mcp servers login remote" in text_of(refused)
        assert "or call remote_sign_in" in text_of(refused)
        with anyio.fail_after(10):
            await notified.tools_changed.wait()
        assert await names(session) == {"remote_sign_in"}
        notified.tools_changed = anyio.Event()
        again = await session.call_tool("remote_sign_in", {})
        assert not again.is_error, text_of(again)
        with anyio.fail_after(10):
            await notified.tools_changed.wait()
        assert await names(session) == {"remote_echo", "remote_whoami"}
        assert text_of(await session.call_tool("remote_echo", {"message": "three"})) == "echo: three"
        assert len(user.pages) == 2 and len(notified.completed) == 2


async def test_a_stateless_agent_is_offered_a_sign_in_revoked_mid_session_again(tmp_path: Path) -> None:
    user = User()
    async with signing_in(tmp_path, user, stateless=True) as (session, _):
        assert not (await call_answering(session, "remote_sign_in", {})).is_error
        async with listen(session, tools_list_changed=True) as changes:
            await revoke(tmp_path)
            refused = await session.call_tool("remote_echo", {"message": "two"})
            assert refused.is_error and "or call remote_sign_in" in text_of(refused)
            with anyio.fail_after(10):
                assert await changes.__anext__() == ToolsListChanged()
            assert await names(session) == {"remote_sign_in"}
            again = await call_answering(session, "remote_sign_in", {})
            assert not again.is_error, text_of(again)
        assert await names(session) == {"remote_echo", "remote_whoami"}
        assert text_of(await session.call_tool("remote_echo", {"message": "three"})) == "echo: three"
        assert len(user.pages) == 2


async def test_a_declined_sign_in_stores_nothing_and_keeps_offering_it(tmp_path: Path) -> None:
    user = User("decline")
    async with signing_in(tmp_path, user) as (session, _):
        result = await session.call_tool("remote_sign_in", {})
        assert not result.is_error
        assert text_of(result) == (
            "not signed in to server 'remote': the user declined the sign-in; ask again, or sign in "
            "in a terminal: awf-mcp servers login remote"
        )
        assert await names(session) == {"remote_sign_in"}
    stored = tokenstore.record_path()
    assert not stored.exists() or "access_token" not in stored.read_text()


async def test_an_agent_without_url_elicitation_is_not_offered_the_sign_in(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        errors = tmp_path / "stderr.txt"
        with errors.open("w") as errlog:
            async with mcp_session(
                "--config", config, cwd=tmp_path, env=NO_PLUGINS, errlog=errlog
            ) as session:
                listed = await names(session)
                with pytest.raises(MCPError, match="unknown tool 'remote_sign_in'"):
                    await session.call_tool("remote_sign_in", {})
    assert not any(name.startswith("remote_") for name in listed)
    assert "server 'remote' needs sign-in: run awf-mcp servers login remote" in errors.read_text()
    assert "remote_sign_in" not in errors.read_text()
