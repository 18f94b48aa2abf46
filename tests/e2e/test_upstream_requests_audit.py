"""An upstream's requests in ``awf-mcp serve --audit-log``: each in the record of its call.

The upstream is tests/upstreams/asking_upstream.py and the agent the SDK's ``ClientSession``,
as in tests/e2e/test_upstream_requests.py. The agent declares sampling and not elicitation,
so one call's sampling request is forwarded and answered and another call's elicitation is
refused; each audit line says so, with sizes and never the text asked or answered. On the
stateless revision the retry's record holds the request its first round ended with; a
request still with the agent when its call times out is recorded refused.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from tests.e2e.test_upstream import NO_PLUGINS
from tests.e2e.test_upstream_requests import Agent, asking_config, call
from tests.helpers.harness import call_answering, mcp_session, text_of

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

PROMPT = "my private prompt"


async def test_the_audit_log_records_an_answered_and_a_refused_upstream_request(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    agent = Agent()
    config = asking_config(tmp_path)
    async with mcp_session(
        "--config",
        config,
        "--no-builtins",
        "--audit-log",
        str(audit),
        cwd=tmp_path,
        env=NO_PLUGINS,
        sampling_callback=agent.sample,
    ) as session:
        assert await call(session, "asking_sample", {"prompt": PROMPT}) == (
            f"sampled: you said {PROMPT} (stand-in-model)"
        )
        refusal = await call(session, "asking_elicit")
        assert refusal.startswith("elicit refused: awf-mcp refused elicitation/create from server 'asking'")
        assert await call(session, "asking_echo", {"message": "plain"}) == "echo: plain"
    written = audit.read_text(encoding="utf-8")
    records = {record["tool"]: record for record in map(json.loads, written.splitlines())}
    assert set(records) == {"asking_sample", "asking_elicit", "asking_echo"}

    [sampled] = records["asking_sample"]["upstream_requests"]
    assert sampled["method"] == "sampling/createMessage"
    assert (sampled["forwarded"], sampled["outcome"], sampled["reason"]) == (True, "answered", None)
    assert sampled["request_bytes"] > len(PROMPT) and sampled["answer_bytes"] > len("you said")
    assert 0 <= sampled["duration_ms"] <= records["asking_sample"]["duration_ms"]

    [refused] = records["asking_elicit"]["upstream_requests"]
    assert refused["method"] == "elicitation/create"
    assert (refused["forwarded"], refused["outcome"], refused["answer_bytes"]) == (False, "refused", None)
    assert refused["reason"] == (
        "awf-mcp refused elicitation/create from server 'asking': it did not advertise elicitation to "
        "this server, because the agent did not declare it"
    )

    assert "upstream_requests" not in records["asking_echo"]  # a call that asked nothing: as before
    # Sizes only: neither the agent's answer nor the upstream's question is written.
    assert "you said" not in written and "Your name?" not in written


async def test_on_the_stateless_revision_the_retry_records_the_request_the_agent_answered(
    tmp_path: Path,
) -> None:
    audit = tmp_path / "audit.jsonl"
    agent = Agent()
    config = asking_config(tmp_path)
    async with mcp_session(
        "--config",
        config,
        "--no-builtins",
        "--audit-log",
        str(audit),
        cwd=tmp_path,
        env=NO_PLUGINS,
        stateless=True,
        elicitation_callback=agent.elicit,
    ) as session:
        elicited = await call_answering(session, "asking_elicit", {})
        assert text_of(elicited) == 'elicited: accept {"name": "Ada"}'
    # The round that ended with input_required did not finish: one record, the retry's.
    [record] = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    assert record["tool"] == "asking_elicit" and not record["is_error"]
    [request] = record["upstream_requests"]
    assert (request["method"], request["forwarded"], request["outcome"]) == (
        "elicitation/create",
        True,
        "answered",
    )
    assert "Ada" not in audit.read_text(encoding="utf-8")


async def test_a_request_still_with_the_agent_when_its_call_times_out_is_recorded_refused(
    tmp_path: Path,
) -> None:
    async def slow(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> Any:
        await anyio.sleep(3)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text="late"), model="m")

    audit = tmp_path / "audit.jsonl"
    config = asking_config(tmp_path, timeout_seconds=1)
    async with mcp_session(
        "--config",
        config,
        "--no-builtins",
        "--audit-log",
        str(audit),
        cwd=tmp_path,
        env=NO_PLUGINS,
        sampling_callback=slow,
    ) as session:
        with anyio.fail_after(10):
            result = await session.call_tool("asking_sample", {"prompt": "p"})
        assert result.is_error
    [record] = [json.loads(line) for line in audit.read_text(encoding="utf-8").splitlines()]
    [request] = record["upstream_requests"]
    assert (request["forwarded"], request["outcome"], request["answer_bytes"]) == (True, "refused", None)
    assert request["reason"].endswith("before the agent answered")
