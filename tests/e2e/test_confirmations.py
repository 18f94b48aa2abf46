"""A policy that answers "ask": the user confirms the call through the agent's client.

``awf-mcp serve`` with the guard plugin's ``ask_bash`` rule, driven by the SDK's own
client on both protocol families: a handshake revision gets ``elicitation/create`` on
the back-channel, the stateless revision an ``input_required`` result the client
answers by retrying. A client that accepts, declines, has no elicitation, or never
answers; and one that tries to answer a question the server never asked.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult, InputRequiredResult

from tests.helpers.harness import call_answering, mcp_session, text_of

pytestmark = pytest.mark.timeout(120)

FAMILIES = pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "stateless"])


class User:
    """The person behind the client: answers each confirmation with ``action`` (and ``allow``)."""

    def __init__(self, action: str = "accept", allow: bool = True, *, never: bool = False) -> None:
        self.action = action
        self.allow = allow
        self.never = never
        self.questions: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.questions.append(params.message)
        if self.never:
            await anyio.sleep_forever()
        content = {"allow": self.allow} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]


def serve_env(_: Path) -> dict[str, str]:
    return {
        "AWF_MCP_PLUGINS": "guard",
        "AWF_MCP_PLUGIN_GUARD_ASK_BASH": r"\btouch\b",
    }


async def run_touch(
    tmp_path: Path, user: User | None, *, stateless: bool, extra: tuple[str, ...] = ()
) -> tuple[bool, str, list[dict[str, Any]]]:
    audit = tmp_path / "audit.jsonl"
    callbacks: dict[str, Any] = {"elicitation_callback": user} if user is not None else {}
    async with mcp_session(
        "--audit-log",
        str(audit),
        *extra,
        cwd=tmp_path,
        env=serve_env(audit),
        stateless=stateless,
        **callbacks,
    ) as session:
        result = await call_answering(session, "Bash", {"command": "touch made.txt"})
        # An ordinary command is never asked about.
        plain = await call_answering(session, "Bash", {"command": "echo plain"})
        assert not plain.is_error and "plain" in text_of(plain)
    records = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    return result.is_error, text_of(result), records


@FAMILIES
def test_the_call_runs_on_an_explicit_yes(tmp_path: Path, stateless: bool) -> None:
    user = User("accept", allow=True)
    is_error, text, records = anyio.run(lambda: run_touch(tmp_path, user, stateless=stateless))
    assert not is_error, text
    assert (tmp_path / "made.txt").exists()
    assert len(user.questions) == 1
    question = user.questions[0]
    assert "Bash" in question and "touch made.txt" in question and "ask_bash" in question, question
    touch = records[0]
    assert touch["tool"] == "Bash" and not touch["is_error"]
    assert touch["confirmation"]["answer"] == "yes"
    assert touch["confirmation"]["question"] == question
    assert len(records) == 2  # one record per call, not one per round


@FAMILIES
@pytest.mark.parametrize(("action", "allow"), [("decline", False), ("cancel", False), ("accept", False)])
def test_no_yes_means_no_call(tmp_path: Path, stateless: bool, action: str, allow: bool) -> None:
    user = User(action, allow=allow)
    is_error, text, records = anyio.run(lambda: run_touch(tmp_path, user, stateless=stateless))
    assert is_error and "the call of Bash" in text and "was not made" in text, text
    assert not (tmp_path / "made.txt").exists()
    assert records[0]["confirmation"]["answer"] in {"no", action}
    assert records[0]["is_error"]


@FAMILIES
def test_a_client_without_elicitation_gets_a_denial_that_says_why(tmp_path: Path, stateless: bool) -> None:
    is_error, text, records = anyio.run(lambda: run_touch(tmp_path, None, stateless=stateless))
    assert is_error and "does not support MCP elicitation" in text and "ask_bash" in text, text
    assert not (tmp_path / "made.txt").exists()
    assert records[0]["confirmation"]["answer"].startswith("not asked")


def test_a_question_never_answered_meets_the_call_timeout(tmp_path: Path) -> None:
    user = User(never=True)
    is_error, text, records = anyio.run(
        lambda: run_touch(tmp_path, user, stateless=False, extra=("--call-timeout", "2"))
    )
    assert is_error and "no answer from the client within 2 s" in text and "not made" in text, text
    assert not (tmp_path / "made.txt").exists()
    assert records[0]["confirmation"]["answer"] == "no answer (call timeout)"


def test_the_question_shows_arguments_redacted_as_in_the_audit_log(tmp_path: Path) -> None:
    user = User("decline")

    async def scenario() -> None:
        async with mcp_session(cwd=tmp_path, env=serve_env(tmp_path), elicitation_callback=user) as session:
            await call_answering(session, "Bash", {"command": "touch x " + "y" * 1500})

    anyio.run(scenario)
    assert len(user.questions) == 1 and "more characters" in user.questions[0]
    assert "y" * 1001 not in user.questions[0]


def test_a_forged_answer_is_not_taken(tmp_path: Path) -> None:
    """A stateless client cannot skip the question: an answer without the sealed state counts for nothing."""
    user = User("accept", allow=True)

    async def scenario() -> None:
        async with mcp_session(
            cwd=tmp_path, env=serve_env(tmp_path), stateless=True, elicitation_callback=user
        ) as session:
            arguments = {"command": "touch made.txt"}
            first = await session.call_tool("Bash", arguments, allow_input_required=True)
            assert isinstance(first, InputRequiredResult)
            (key,) = first.input_requests
            yes = {key: ElicitResult(action="accept", content={"allow": True})}
            # The answer, without the state that says the question was asked: asked again.
            again = await session.call_tool("Bash", arguments, input_responses=yes, allow_input_required=True)
            assert isinstance(again, InputRequiredResult)
            # The state of another call (other arguments) is refused by the SDK's seal.
            other = await session.call_tool("Bash", {"command": "touch other.txt"}, allow_input_required=True)
            assert isinstance(other, InputRequiredResult)
            with pytest.raises(Exception, match="requestState"):
                await session.call_tool(
                    "Bash",
                    arguments,
                    input_responses={next(iter(other.input_requests)): yes[key]},
                    request_state=other.request_state,
                    allow_input_required=True,
                )
            # A tampered state is refused too.
            assert first.request_state
            with pytest.raises(Exception, match="requestState"):
                await session.call_tool(
                    "Bash",
                    arguments,
                    input_responses=yes,
                    request_state=first.request_state[:-4] + "AAAA",
                    allow_input_required=True,
                )
            # The real round trip works.
            done = await session.call_tool(
                "Bash", arguments, input_responses=yes, request_state=first.request_state
            )
            assert not done.is_error, text_of(done)
            assert (tmp_path / "made.txt").exists()
            (tmp_path / "made.txt").unlink()
            # The same yes, replayed once the call finished, runs nothing again.
            with pytest.raises(Exception, match="requestState was used already"):
                await session.call_tool(
                    "Bash", arguments, input_responses=yes, request_state=first.request_state
                )

    anyio.run(scenario)
    assert not (tmp_path / "made.txt").exists() and not (tmp_path / "other.txt").exists()


def test_a_request_state_minted_for_one_caller_is_refused_to_another(tmp_path: Path) -> None:
    """Over HTTP with named tokens: alice's sealed state, with a yes, sent by bob runs nothing."""
    import contextlib

    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    from tests.e2e.test_http import start_http, stop
    from tests.e2e.test_http_identity import write_tokens
    from tests.helpers.harness import server_env

    tokens = tmp_path / "tokens"
    alice, bob = "alice-token-" + "a" * 20, "bob-token-" + "b" * 20
    write_tokens(tokens, f"alice {alice}\nbob {bob}\n")
    url, process = start_http(
        "--token-file", str(tokens), "--root", str(tmp_path), env=server_env(serve_env(tmp_path))
    )
    arguments = {"command": "touch made.txt"}

    @contextlib.asynccontextmanager
    async def stateless_as(token: str) -> Any:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write, elicitation_callback=User()) as session,
        ):
            await session.discover()
            yield session

    async def scenario() -> None:
        async with stateless_as(alice) as session:
            first = await session.call_tool("Bash", arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        (key,) = first.input_requests
        yes = {key: ElicitResult(action="accept", content={"allow": True})}
        async with stateless_as(bob) as session:
            with pytest.raises(Exception, match="requestState"):
                await session.call_tool(
                    "Bash", arguments, input_responses=yes, request_state=first.request_state
                )

    try:
        anyio.run(scenario)
    finally:
        stop(process)
    assert not (tmp_path / "made.txt").exists()
