"""The plugin authoring API: ``@tool`` functions and the provider that serves them.

Purpose
-------
Most plugins are a handful of typed functions. :func:`tool` marks one; the
plugin hands it to ``plugin.register(fn)``; the loader gathers a plugin's
marked functions into one :class:`FunctionToolProvider`. The input schema comes
from the type hints (through pydantic), the description from the docstring.

Public surface
--------------
``tool``                  decorator, bare (``@tool``) or with options
                          (``@tool(name=..., read_only=True)``); returns the
                          function unchanged, with a :class:`ToolSpec` on
                          ``fn.__awf_tool__``.
``ToolSpec``              the options ``@tool`` recorded.
``FunctionToolProvider``  a :class:`~awf_mcp.ports.ToolProvider` over marked functions.
``prompt``, ``resource``  mark a function as a prompt, or as a resource or resource template
                          (:class:`PromptSpec`, :class:`ResourceSpec` on ``fn.__awf_prompt__`` /
                          ``fn.__awf_resource__``); the loader gathers them into one
                          :class:`FunctionOfferingProvider`.

Contract
--------
* Names: ``<plugin>_<function name>``, or ``<plugin>_<name>`` with ``name=``;
  a name that already starts with ``<plugin>_`` is kept as it is.
* Input schema: a plain JSON object schema (``type``, ``properties``,
  ``required``, ``additionalProperties: false``) without pydantic's ``title``
  keys and with ``$defs`` inlined unless a type is recursive. A parameter with a
  default is optional. A parameter's description comes, first found wins, from
  ``Annotated[T, Field(description=...)]``, ``Annotated[T, "text"]``, or the
  docstring's Google-style ``Args:`` section. ``*args``/``**kwargs`` are refused.
* Description: ``description=``, else the docstring without its ``Args:``
  section, else ``Operation '<fn>' from plugin '<plugin>'.``
* Laziness: nothing is inspected at decoration time; pydantic is imported and
  schemas are built on the first :meth:`FunctionToolProvider.list_tools` (server
  start-up). A schema that cannot be built raises :class:`TypeError` there,
  which fails that plugin's load with the reason.
* Calls: arguments are validated and coerced by the pydantic model built from
  the signature; a mismatch raises :class:`~awf_mcp.ports.ToolError` naming the
  argument. Coroutine functions are awaited; plain functions run in a worker
  thread (abandoned on cancellation), where :func:`~awf_mcp.ports.current_call`
  still works.
* Return values: ``str`` -> one text item; ``ToolResult`` -> as is;
  ``ToolContent`` -> a result with that item; ``None`` -> ``None`` (the call
  path reports "returned no result"); ``bytes`` -> an image item when the magic
  bytes say PNG, JPEG, GIF or WebP, otherwise :class:`TypeError` (return
  ``str`` or a ``ToolResult`` for anything else); anything else (dicts, lists,
  numbers, dataclasses, pydantic models) -> JSON text plus
  ``structured_content``. Structured content is always an object: a value that
  is not one is wrapped as ``{"result": value}``. A declared return annotation
  also gives the definition an ``output_schema`` (wrapped the same way) and the
  value is validated against it before it is sent.
* Exceptions raised by the function propagate; the call path turns them into
  ``isError`` results (:class:`~awf_mcp.ports.ToolError` messages verbatim).

Imports: the standard library, pydantic, anyio and :mod:`awf_mcp.ports` only.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from awf_mcp.concurrency import call_either
from awf_mcp.ports import (
    PROMPT_ROLES,
    PromptArgument,
    PromptDefinition,
    ResourceDefinition,
    ToolAnnotations,
    ToolContent,
    ToolDefinition,
    ToolError,
    ToolResult,
    image_mime_type,
    parse_template,
    template_match,
)

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter

F = typing.TypeVar("F", bound=Callable[..., Any])

RESULT_KEY = "result"
"""The key under which a non-object return value is placed in ``structured_content``."""

_ARGS_HEADERS = frozenset({"args", "arguments", "parameters", "params", "keyword args", "keyword arguments"})
_ENTRY = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*:\s*(?P<text>.*)$")
_PASS_THROUGH_RETURNS = (str, bytes, bytearray, ToolResult, ToolContent, type(None))


@dataclasses.dataclass(frozen=True, slots=True)
class ToolSpec:
    """What ``@tool`` recorded about a function: its explicit name, description, annotations."""

    name: str | None = None
    description: str | None = None
    annotations: ToolAnnotations | None = None


@overload
def tool(fn: F, /) -> F: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> Callable[[F], F]: ...


def tool(
    fn: F | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    annotations: ToolAnnotations | None = None,
    title: str | None = None,
    read_only: bool | None = None,
    destructive: bool | None = None,
    idempotent: bool | None = None,
    open_world: bool | None = None,
) -> F | Callable[[F], F]:
    """Mark ``fn`` as a tool; usable as ``@tool`` or ``@tool(name=..., read_only=True)``.

    ``title``, ``read_only``, ``destructive``, ``idempotent`` and ``open_world``
    are shorthands for the fields of ``annotations`` and override them. The
    function is returned unchanged, so it stays directly callable in tests.
    """
    merged = annotations
    if any(value is not None for value in (title, read_only, destructive, idempotent, open_world)):
        base = annotations or ToolAnnotations()
        merged = ToolAnnotations(
            title=base.title if title is None else title,
            read_only=base.read_only if read_only is None else read_only,
            destructive=base.destructive if destructive is None else destructive,
            idempotent=base.idempotent if idempotent is None else idempotent,
            open_world=base.open_world if open_world is None else open_world,
        )
    spec = ToolSpec(name=name, description=description, annotations=merged)

    def mark(function: F) -> F:
        if not callable(function):
            raise TypeError(f"@tool needs a function, got {type(function).__name__}")
        function.__awf_tool__ = spec  # type: ignore[attr-defined]
        return function

    return mark(fn) if fn is not None else mark


# --- docstrings -------------------------------------------------------------------------------


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a Google-style docstring into (description without ``Args:``, per-argument text)."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    kept: list[str] = []
    arguments: dict[str, str] = {}
    index = 0
    while index < len(lines):
        line = lines[index]
        header = line.strip()
        if not (header.endswith(":") and header[:-1].strip().lower() in _ARGS_HEADERS):
            kept.append(line)
            index += 1
            continue
        base = _indent(line)
        index += 1
        entry_indent: int | None = None
        current: str | None = None
        while index < len(lines):
            body = lines[index]
            if body.strip() and _indent(body) <= base:
                break
            index += 1
            if not body.strip():
                continue
            if entry_indent is None:
                entry_indent = _indent(body)
            match = _ENTRY.match(body.strip()) if _indent(body) <= entry_indent else None
            if match:
                current = match["name"]
                arguments[current] = match["text"].strip()
            elif current is not None:
                arguments[current] = f"{arguments[current]} {body.strip()}".strip()
    text = "\n".join(kept)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, arguments


# --- schemas ----------------------------------------------------------------------------------


def _strip_titles(node: Any) -> Any:
    if isinstance(node, dict):
        cleaned: dict[str, Any] = {}
        for key, value in node.items():
            if key == "title" and isinstance(value, str):
                continue
            if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
                cleaned[key] = {name: _strip_titles(sub) for name, sub in value.items()}
            else:
                cleaned[key] = _strip_titles(value)
        return cleaned
    if isinstance(node, list):
        return [_strip_titles(item) for item in node]
    return node


class _Recursive(Exception):
    pass


def _inline(node: Any, defs: Mapping[str, Any], expanding: tuple[str, ...]) -> Any:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            key = ref.removeprefix("#/$defs/")
            if key in expanding or key not in defs:
                raise _Recursive(key)
            target = _inline(defs[key], defs, (*expanding, key))
            siblings = {k: _inline(v, defs, expanding) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings}
        return {k: _inline(v, defs, expanding) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(item, defs, expanding) for item in node]
    return node


def clean_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A pydantic JSON schema made plain: no ``title`` keys, ``$defs`` inlined when not recursive."""
    cleaned: dict[str, Any] = _strip_titles(dict(schema))
    defs = cleaned.pop("$defs", None)
    if not defs:
        return cleaned
    try:
        inlined: dict[str, Any] = _inline(cleaned, defs, ())
    except _Recursive:
        return {**cleaned, "$defs": defs}
    return inlined


def object_schema(schema: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``(schema, wrapped)``: ``schema`` itself when it describes an object, else ``{"result": schema}``."""
    plain = clean_schema(schema)
    if plain.get("type") == "object":
        return plain, False
    defs = plain.pop("$defs", None)
    wrapper: dict[str, Any] = {
        "type": "object",
        "properties": {RESULT_KEY: plain},
        "required": [RESULT_KEY],
    }
    if defs:
        wrapper["$defs"] = defs
    return wrapper, True


# --- one compiled function --------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class _Parameter:
    name: str
    field: str
    positional_only: bool


@dataclasses.dataclass(slots=True)
class _Compiled:
    definition: ToolDefinition
    function: Callable[..., Any]
    model: type[BaseModel]
    parameters: list[_Parameter]
    returns: TypeAdapter[Any] | None
    wrapped: bool


def _function_name(function: Callable[..., Any]) -> str:
    name = getattr(function, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"@tool object {function!r} has no usable __name__; pass @tool(name=...)")
    return name


def tool_name(plugin: str, function: Callable[..., Any], spec: ToolSpec) -> str:
    """The served name of ``function``: ``<plugin>_<name>``, kept as is when already prefixed."""
    base = spec.name or _function_name(function)
    return base if base.startswith(f"{plugin}_") else f"{plugin}_{base}"


def _description_metadata(hint: Any) -> tuple[str | None, bool]:
    """(``Annotated`` string description, whether a pydantic ``Field`` already describes it)."""
    if typing.get_origin(hint) is not typing.Annotated:
        return None, False
    from pydantic.fields import FieldInfo

    text = None
    described = False
    for item in hint.__metadata__:
        if isinstance(item, str) and text is None:
            text = item
        elif isinstance(item, FieldInfo) and item.description:
            described = True
    return text, described


def _compile(plugin: str, source: str, function: Callable[..., Any], spec: ToolSpec) -> _Compiled:
    from pydantic import ConfigDict, Field, TypeAdapter, create_model

    name = tool_name(plugin, function, spec)
    target = inspect.unwrap(function)
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise TypeError(f"tool {name}: generator functions are not supported; return a value")
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"tool {name}: cannot resolve its type hints ({exc}); define the types it uses at module level"
        ) from exc
    summary, argument_docs = parse_docstring(inspect.getdoc(function))

    fields: dict[str, Any] = {}
    parameters: list[_Parameter] = []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"tool {name}: *args and **kwargs cannot be described by a schema")
        hint = hints.get(parameter.name, Any)
        text, described = _description_metadata(hint)
        description = None if described else (text or argument_docs.get(parameter.name))
        default = ... if parameter.default is parameter.empty else parameter.default
        field = f"arg{index}"
        if description:
            info = Field(default, alias=parameter.name, description=description)
        else:
            info = Field(default, alias=parameter.name)
        fields[field] = (hint, info)
        parameters.append(_Parameter(parameter.name, field, parameter.kind is parameter.POSITIONAL_ONLY))

    try:
        model = create_model(f"{name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
        input_schema = clean_schema(model.model_json_schema(by_alias=True))
    except Exception as exc:
        raise TypeError(f"tool {name}: cannot build an input schema from its signature ({exc})") from exc
    input_schema.setdefault("properties", {})

    returns: TypeAdapter[Any] | None = None
    output_schema: dict[str, Any] | None = None
    wrapped = False
    annotation = hints.get("return", inspect.Signature.empty)
    if _declares_structured_return(annotation):
        try:
            returns = TypeAdapter(annotation)
            output_schema, wrapped = object_schema(returns.json_schema(mode="serialization"))
        except Exception as exc:
            raise TypeError(
                f"tool {name}: cannot build an output schema from its return type ({exc})"
            ) from exc

    description = spec.description or summary
    if not description:
        description = f"Operation '{_function_name(function)}' from plugin '{plugin}'."
        fields_out = list((output_schema or {}).get("properties", {})) if not wrapped else []
        if fields_out:
            description += f" Returns a JSON object with fields: {', '.join(fields_out)}."
    definition = ToolDefinition(
        name=name,
        description=description,
        input_schema=input_schema,
        source=source,
        annotations=spec.annotations,
        output_schema=output_schema,
    )
    return _Compiled(
        definition=definition,
        function=function,
        model=model,
        parameters=parameters,
        returns=returns,
        wrapped=wrapped,
    )


def _declares_structured_return(annotation: Any) -> bool:
    if annotation is inspect.Signature.empty or annotation is Any or annotation is None:
        return False
    if typing.get_origin(annotation) is typing.Annotated:
        annotation = typing.get_args(annotation)[0]
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(members) and all(_declares_structured_return(a) for a in members)
    if typing.get_origin(annotation) in (typing.Awaitable, typing.Coroutine):
        return False
    return not (isinstance(annotation, type) and issubclass(annotation, _PASS_THROUGH_RETURNS))


def _argument_error(name: str, exc: Exception) -> ToolError:
    errors = getattr(exc, "errors", None)
    problems: list[str] = []
    if callable(errors):
        for error in errors(include_url=False):
            where = ".".join(str(part) for part in error.get("loc", ())) or "arguments"
            problems.append(f"{where}: {error.get('msg', 'invalid')}")
    message = "; ".join(problems) or str(exc)
    return ToolError(f"invalid arguments for {name}: {message}")


def _to_result(compiled: _Compiled, value: Any) -> ToolResult | None:
    name = compiled.definition.name
    if value is None or isinstance(value, ToolResult):
        return value
    if isinstance(value, ToolContent):
        return ToolResult(content=[value])
    if isinstance(value, str):
        return ToolResult.text(value)
    if isinstance(value, bytes | bytearray):
        mime = image_mime_type(bytes(value))
        if mime is None:
            raise TypeError(
                f"tool {name} returned {len(value)} bytes that are not a PNG, JPEG, GIF or WebP image; "
                "return str for text or a ToolResult for other content"
            )
        return ToolResult(content=[ToolContent.of_image(bytes(value), mime)])

    from pydantic import TypeAdapter, ValidationError

    if compiled.returns is not None:
        try:
            data = compiled.returns.dump_python(compiled.returns.validate_python(value), mode="json")
        except ValidationError as exc:
            raise TypeError(
                f"tool {name} returned a value that does not match its return type: {exc}"
            ) from exc
        wrap = compiled.wrapped
    else:
        data = TypeAdapter(Any).dump_python(value, mode="json")
        wrap = not isinstance(data, dict)
    structured = {RESULT_KEY: data} if wrap else data
    text = json.dumps(data, ensure_ascii=False)
    return ToolResult(content=[ToolContent.of_text(text)], structured_content=structured)


# --- the provider -----------------------------------------------------------------------------


class FunctionToolProvider:
    """A :class:`~awf_mcp.ports.ToolProvider` over one plugin's ``@tool`` functions.

    ``plugin`` is the plugin name (the tool-name prefix), ``source`` the label
    its tools carry (``plugin:<name>``), ``functions`` the marked functions.
    Schemas are built on the first :meth:`list_tools` or :meth:`call_tool`.
    """

    def __init__(self, plugin: str, source: str, functions: Sequence[Callable[..., Any]]) -> None:
        self.plugin = plugin
        self.source = source
        self.functions = list(functions)
        self._compiled: dict[str, _Compiled] | None = None

    def _tools(self) -> dict[str, _Compiled]:
        if self._compiled is None:
            compiled: dict[str, _Compiled] = {}
            for function in self.functions:
                spec = getattr(function, "__awf_tool__", None)
                if not isinstance(spec, ToolSpec):
                    spec = ToolSpec()
                entry = _compile(self.plugin, self.source, function, spec)
                if entry.definition.name in compiled:
                    raise TypeError(
                        f"two @tool functions of plugin '{self.plugin}' are both named "
                        f"{entry.definition.name}; give one @tool(name=...)"
                    )
                compiled[entry.definition.name] = entry
            self._compiled = dict(sorted(compiled.items()))
        return self._compiled

    def list_tools(self) -> list[ToolDefinition]:
        """The functions' definitions, sorted by name (builds the schemas on first use)."""
        return [entry.definition for entry in self._tools().values()]

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolResult | None:
        """Validate ``arguments``, run the function (sync ones in a worker thread), map its value."""
        from pydantic import ValidationError

        compiled = self._tools().get(name)
        if compiled is None:
            raise ToolError(f"plugin '{self.plugin}' has no tool '{name}'")
        try:
            validated = compiled.model.model_validate(dict(arguments))
        except ValidationError as exc:
            raise _argument_error(name, exc) from None
        values = validated.__dict__
        args = [values[p.field] for p in compiled.parameters if p.positional_only]
        kwargs = {p.name: values[p.field] for p in compiled.parameters if not p.positional_only}
        value = await call_either(compiled.function, *args, **kwargs)
        return _to_result(compiled, value)

    def close(self) -> None:
        """Nothing to release: the functions own no resources of the provider's."""


# --- prompts and resources ----------------------------------------------------------------------


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
                base = spec.name or _function_name(function)
                name = base if base.startswith(f"{self.plugin}_") else f"{self.plugin}_{base}"
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
            name=spec.name or _function_name(function),
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
