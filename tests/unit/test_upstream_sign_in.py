"""Which agents are offered an OAuth server's sign-in, and which capability a URL-mode question needs."""

from __future__ import annotations

import pytest

from awf_mcp.core.clientchannel import feature_of
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream import offer_from
from awf_mcp.core.upstream.signin import sign_in_tool, url_elicitation_offered


@pytest.mark.parametrize(
    ("declared", "offered"),
    [
        ({"elicitation": {"form": {}, "url": {}}}, True),
        ({"elicitation": {"url": {}}}, True),
        ({"elicitation": {"form": {}}}, False),
        ({"elicitation": {}}, False),  # an empty elicitation capability is forms only
        ({"sampling": {}, "roots": {}}, False),
        (None, False),
    ],
)
def test_only_an_agent_that_declared_url_elicitation_is_offered_the_sign_in(
    declared: dict[str, object] | None, offered: bool
) -> None:
    assert url_elicitation_offered(offer_from(declared)) is offered


def test_an_elicitation_in_url_mode_needs_the_url_capability() -> None:
    assert feature_of("elicitation/create", {"mode": "url", "url": "https://x"}) == "elicitation_url"
    assert feature_of("elicitation/create", {"mode": "form"}) == "elicitation"
    assert feature_of("elicitation/create", {}) == "elicitation"
    assert feature_of("sampling/createMessage", {"mode": "url"}) == "sampling"
    assert feature_of("tools/call", {}) is None


def test_the_sign_in_tool_is_named_after_its_server_and_takes_no_arguments() -> None:
    spec = ServerSpec(name="linear", url="https://mcp.linear.app/mcp", auth="oauth")
    tool = sign_in_tool(spec)
    assert tool.name == "linear_sign_in" and tool.source == "server:linear"
    assert "mcp.linear.app" in tool.description
    assert tool.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
