"""awf-mcp plugin ``echo``: one tool, ``echo_echo``, at parity with the Go example.

Inputs ``text`` (required) and ``prefix`` (optional); the result is the JSON
object ``{output, text, prefix}`` with ``output = prefix + text``, sent as one
text item and as structured content (the dataclass return type gives the tool
its output schema).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from awf_mcp import PluginContext, hookimpl, tool

__all__ = ["EchoResult", "awf_mcp_register_tools", "echo"]


@dataclass(frozen=True, slots=True)
class EchoResult:
    """The outputs of ``echo_echo``."""

    output: str
    text: str
    prefix: str


@tool(read_only=True, idempotent=True, open_world=False)
def echo(
    text: Annotated[str, "The text to echo back."],
    prefix: Annotated[str, "Put in front of the text in `output`."] = "",
) -> EchoResult:
    """Echo text back, optionally prefixed.

    Returns a JSON object with fields: output, text, prefix.
    """
    return EchoResult(output=prefix + text, text=text, prefix=prefix)


@hookimpl
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Contribute ``echo_echo``."""
    plugin.register(echo)
