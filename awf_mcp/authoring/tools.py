"""``@tool``: a typed function as a tool, and :class:`FunctionToolProvider`, which serves a plugin's.

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

Imports: the standard library, pydantic (when the schemas are built), anyio and the public face.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, overload

from awf_mcp.authoring.functions import F, function_name, parse_docstring, served_name
from awf_mcp.authoring.schemas import RESULT_KEY, clean_schema, object_schema
from awf_mcp.concurrency import call_either
from awf_mcp.ports import ToolAnnotations, ToolContent, ToolDefinition, ToolError, ToolResult, image_mime_type

if TYPE_CHECKING:
    from pydantic import BaseModel, TypeAdapter

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


def tool_name(plugin: str, function: Callable[..., Any], spec: ToolSpec) -> str:
    """The served name of ``function``: ``<plugin>_<name>``, kept as is when already prefixed."""
    return served_name(plugin, spec.name or function_name(function))


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
        description = f"Operation '{function_name(function)}' from plugin '{plugin}'."
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
