"""The echo plugin through its entry point and awf-mcp's function provider."""

from __future__ import annotations

from importlib import metadata

import pytest
from awf_plugin_echo import EchoResult, awf_mcp_register_tools, echo

from awf_mcp import PluginContext
from awf_mcp.authoring import FunctionToolProvider


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _provider() -> FunctionToolProvider:
    context = PluginContext(name="echo")
    awf_mcp_register_tools(plugin=context)
    return FunctionToolProvider(plugin="echo", source="plugin:echo", functions=context.registered)


def test_entry_point_names_the_plugin_echo() -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="awf_mcp")}
    assert points.get("echo") == "awf_plugin_echo"


def test_function_stays_callable() -> None:
    assert echo("hi", prefix="> ") == EchoResult(output="> hi", text="hi", prefix="> ")


def test_tool_is_echo_echo_with_text_required_and_prefix_optional() -> None:
    [definition] = _provider().list_tools()
    assert definition.name == "echo_echo"
    assert definition.input_schema["required"] == ["text"]
    assert set(definition.input_schema["properties"]) == {"text", "prefix"}
    assert definition.output_schema is not None
    assert definition.output_schema["required"] == ["output", "text", "prefix"]
    assert definition.annotations is not None and definition.annotations.read_only is True


@pytest.mark.anyio
async def test_call_returns_outputs_as_json_text_and_structured_content() -> None:
    result = await _provider().call_tool("echo_echo", {"text": "world", "prefix": "hello "})
    assert result is not None and not result.is_error
    expected = {"output": "hello world", "text": "world", "prefix": "hello "}
    assert result.structured_content == expected
    assert result.content[0].text == '{"output": "hello world", "text": "world", "prefix": "hello "}'
