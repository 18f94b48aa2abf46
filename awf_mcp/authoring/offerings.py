"""``@prompt`` and ``@resource``: functions as a plugin's prompts, resources and resource templates,
and :class:`FunctionOfferingProvider`, which serves them.

Contract
--------
* A prompt is named ``<plugin>_<name>`` like a tool; its parameters are its arguments (strings;
  one without a default is required), described by the docstring's ``Args:`` section, the rest
  of the docstring its description. It returns its text (one user message), a list of
  ``(role, text)`` pairs, or a :class:`~awf_mcp.ports.ToolResult`.
* A resource is served at the URI it was given; a URI holding ``{variable}`` expressions
  (RFC 6570, :mod:`awf_mcp.uritemplate`) makes it a template whose variables are the
  function's parameters, and a read of a URI it matches runs the function with them. A
  template awf-mcp cannot match is refused when the function is marked. ``each`` lists a
  template's resources. It returns the text (``str``), the bytes (``bytes``: a blob), or a
  :class:`~awf_mcp.ports.ToolResult` of ``resource`` items.
* Definitions are built on first use; sync functions run in a worker thread.

Imports: the standard library, anyio and the public face only.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from awf_mcp.authoring.functions import F, function_name, parse_docstring, served_name
from awf_mcp.concurrency import call_either
from awf_mcp.ports import (
    PROMPT_ROLES,
    PromptArgument,
    PromptDefinition,
    ResourceDefinition,
    ToolContent,
    ToolDefinition,
    ToolError,
    ToolResult,
)
from awf_mcp.uritemplate import parse_template, template_match


@dataclasses.dataclass(frozen=True, slots=True)
class PromptSpec:
    """What ``@prompt`` recorded about a function."""

    name: str | None = None
    description: str | None = None
    title: str | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class ResourceSpec:
    """What ``@resource`` recorded about a function: its URI (a template when it holds ``{...}``)."""

    uri: str
    name: str | None = None
    description: str | None = None
    mime_type: str = "text/plain"
    title: str | None = None
    each: str | Callable[[], Any] | None = None
    """For a template: the values its variables take, to list one resource per value (a function
    of no argument, or the name of a method beside a bound resource method), each a string (one
    variable) or a mapping of variable to value."""


def prompt(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    title: str | None = None,
) -> Any:
    """Mark ``fn`` as a prompt; usable as ``@prompt`` or ``@prompt(name=..., title=...)``.

    Named ``<plugin>_<name>`` like a tool. Its parameters are the prompt's arguments (strings; one
    without a default is required), described by the docstring's ``Args:`` section; the rest of
    the docstring is the description. It returns the prompt's text (one user message), a list of
    ``(role, text)`` pairs (``user`` or ``assistant``), or a :class:`~awf_mcp.ports.ToolResult`.
    """
    spec = PromptSpec(name=name, description=description, title=title)

    def mark(function: F) -> F:
        if not callable(function):
            raise TypeError(f"@prompt needs a function, got {type(function).__name__}")
        function.__awf_prompt__ = spec  # type: ignore[attr-defined]
        return function

    return mark(fn) if fn is not None else mark


def resource(
    uri: str,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    mime_type: str = "text/plain",
    title: str | None = None,
    each: str | Callable[[], Any] | None = None,
) -> Callable[[F], F]:
    """Mark a function as the resource at ``uri``, or, when ``uri`` holds ``{variable}`` expressions
    (RFC 6570), as a resource template whose variables are the function's parameters.

    It returns the resource's text (``str``), its bytes (``bytes``: a blob), or a
    :class:`~awf_mcp.ports.ToolResult` of ``resource`` items. ``each`` lists a template's
    resources (see :class:`ResourceSpec`). The URI is the resource's as written: the plugin's
    own scheme is customary (``sqlite://...``).
    """
    spec = ResourceSpec(
        uri=uri, name=name, description=description, mime_type=mime_type, title=title, each=each
    )

    def mark(function: F) -> F:
        if not callable(function):
            raise TypeError(f"@resource needs a function, got {type(function).__name__}")
        if "{" in uri and parse_template(uri) is None:
            raise TypeError(f"@resource: {uri!r} is not a URI template awf-mcp can match")
        function.__awf_resource__ = spec  # type: ignore[attr-defined]
        return function

    return mark


def _expand(template: str, values: Mapping[str, str]) -> str:
    """``template`` with each simple ``{name}`` replaced by its value."""
    return re.sub(
        r"\{[+#./;?&]?([^{}]*)\}", lambda m: str(values.get(m.group(1).split(",")[0], "")), template
    )


class FunctionOfferingProvider:
    """One plugin's ``@prompt`` and ``@resource`` functions as a provider of prompts and resources
    (it has no tools). Definitions are built on first use."""

    def __init__(self, plugin: str, source: str, functions: Sequence[Callable[..., Any]]) -> None:
        self.plugin = plugin
        self.source = source
        self.functions = list(functions)
        self._prompts: dict[str, tuple[PromptDefinition, Callable[..., Any]]] | None = None

    def list_tools(self) -> list[ToolDefinition]:
        """None: prompts and resources only."""
        return []

    def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Never called (no tools)."""
        raise ToolError(f"plugin '{self.plugin}' has no tool '{name}'")

    def close(self) -> None:
        """Nothing to release."""

    def _prompt_table(self) -> dict[str, tuple[PromptDefinition, Callable[..., Any]]]:
        if self._prompts is None:
            table: dict[str, tuple[PromptDefinition, Callable[..., Any]]] = {}
            for function in self.functions:
                spec = getattr(function, "__awf_prompt__", None)
                if not isinstance(spec, PromptSpec):
                    continue
                name = served_name(self.plugin, spec.name or function_name(function))
                summary, documented = parse_docstring(inspect.getdoc(function))
                arguments = tuple(
                    PromptArgument(
                        name=parameter.name,
                        description=documented.get(parameter.name, ""),
                        required=parameter.default is inspect.Parameter.empty,
                    )
                    for parameter in inspect.signature(function).parameters.values()
                    if parameter.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
                )
                definition = PromptDefinition(
                    name=name,
                    description=spec.description or summary,
                    arguments=arguments,
                    source=self.source,
                    title=spec.title,
                )
                table[name] = (definition, function)
            self._prompts = dict(sorted(table.items()))
        return self._prompts

    def _resources(self) -> list[tuple[ResourceSpec, Callable[..., Any]]]:
        return [
            (spec, function)
            for function in self.functions
            if isinstance(spec := getattr(function, "__awf_resource__", None), ResourceSpec)
        ]

    def _definition(self, spec: ResourceSpec, function: Callable[..., Any], uri: str) -> ResourceDefinition:
        summary, _ = parse_docstring(inspect.getdoc(function))
        return ResourceDefinition(
            uri=uri,
            name=spec.name or function_name(function),
            description=spec.description or summary,
            mime_type=spec.mime_type,
            source=self.source,
            template="{" in uri,
            title=spec.title,
        )

    def list_prompts(self) -> list[PromptDefinition]:
        """The ``@prompt`` functions' definitions, sorted by name."""
        return [definition for definition, _ in self._prompt_table().values()]

    def list_resources(self) -> list[ResourceDefinition]:
        """The static ``@resource`` functions, and one per value of each template's ``each``."""
        listed: list[ResourceDefinition] = []
        for spec, function in self._resources():
            if "{" not in spec.uri:
                listed.append(self._definition(spec, function, spec.uri))
                continue
            each = spec.each
            if isinstance(each, str):
                each = getattr(getattr(function, "__self__", None), each, None)
            if not callable(each):
                continue
            parts = parse_template(spec.uri) or []
            variable = next((part.names[0] for part in parts if part.names), "")
            for value in each():
                values = dict(value) if isinstance(value, Mapping) else {variable: str(value)}
                listed.append(self._definition(spec, function, _expand(spec.uri, values)))
        return listed

    def list_resource_templates(self) -> list[ResourceDefinition]:
        """The templated ``@resource`` functions."""
        return [self._definition(s, f, s.uri) for s, f in self._resources() if "{" in s.uri]

    async def get_prompt(self, name: str, arguments: Mapping[str, Any]) -> ToolResult:
        """Run the ``@prompt`` function ``name`` with ``arguments``; its messages."""
        entry = self._prompt_table().get(name)
        if entry is None:
            raise ToolError(f"plugin '{self.plugin}' has no prompt '{name}'")
        value = await call_either(entry[1], **{key: str(v) for key, v in arguments.items()})
        if isinstance(value, ToolResult):
            return value
        if isinstance(value, str):
            pairs = [("user", value)]
        elif isinstance(value, Sequence):
            pairs = [(str(role), str(text)) for role, text in value]
        else:
            raise TypeError(
                f"prompt {name} returned {type(value).__name__}; return str or (role, text) pairs"
            )
        return ToolResult(
            content=[ToolContent.of_text(text) for _, text in pairs],
            structured_content={"description": "", PROMPT_ROLES: [role for role, _ in pairs]},
        )

    async def read_resource(self, uri: str) -> ToolResult:
        """Run the ``@resource`` function whose URI is ``uri`` (or whose template matches it)."""
        for spec, function in self._resources():
            if spec.uri == uri:
                values: dict[str, str] | None = {}
            elif "{" in spec.uri:
                values = template_match(parse_template(spec.uri) or [], uri)
            else:
                values = None
            if values is None:
                continue
            value = await call_either(function, **values)
            if isinstance(value, ToolResult):
                return value
            if isinstance(value, bytes | bytearray):
                return ToolResult(
                    content=[ToolContent.of_resource(uri, blob=bytes(value), mime_type=spec.mime_type)]
                )
            return ToolResult(
                content=[ToolContent.of_resource(uri, text=str(value), mime_type=spec.mime_type)]
            )
        raise ToolError(f"plugin '{self.plugin}' has no resource '{uri}'")
