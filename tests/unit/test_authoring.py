"""The ``@tool`` authoring API: schemas from type hints and docstrings, calls, return mapping."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import pytest
from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field

from awf_mcp import ToolAnnotations, ToolContent, ToolError, ToolResult, current_call, tool
from awf_mcp.authoring import FunctionToolProvider, ToolSpec, parse_docstring
from awf_mcp.ports import CallContext, ToolDefinition, bind_call_context, image_mime_type, unbind_call_context

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def provider(*functions: Callable[..., Any], plugin: str = "demo") -> FunctionToolProvider:
    return FunctionToolProvider(plugin=plugin, source=f"plugin:{plugin}", functions=list(functions))


def definition(function: Callable[..., Any], plugin: str = "demo") -> ToolDefinition:
    [only] = provider(function, plugin=plugin).list_tools()
    return only


async def call(function: Callable[..., Any], arguments: Mapping[str, Any] | None = None) -> ToolResult | None:
    tools = provider(function)
    [only] = tools.list_tools()
    return await tools.call_tool(only.name, arguments or {})


def has_key(node: Any, key: str) -> bool:
    if isinstance(node, dict):
        return any(k == key or has_key(v, key) for k, v in node.items() if k != "properties") or any(
            has_key(v, key) for v in node.get("properties", {}).values()
        )
    if isinstance(node, list):
        return any(has_key(item, key) for item in node)
    return False


# --- the decorator -----------------------------------------------------------------------------


def test_bare_decorator_returns_the_same_callable_function() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    assert tool(add) is add
    assert add(2, 3) == 5
    assert add.__awf_tool__ == ToolSpec()  # type: ignore[attr-defined]


def test_decorator_with_options_records_them_and_merges_annotation_shorthands() -> None:
    @tool(
        name="x",
        description="Does x.",
        annotations=ToolAnnotations(title="X", destructive=True),
        read_only=True,
    )
    def anything() -> str:
        return "ok"

    spec = anything.__awf_tool__  # type: ignore[attr-defined]
    assert spec.name == "x" and spec.description == "Does x."
    assert spec.annotations == ToolAnnotations(title="X", read_only=True, destructive=True)
    assert definition(anything).annotations == spec.annotations


def test_importing_awf_mcp_and_decorating_does_not_import_pydantic() -> None:
    code = (
        "import sys, awf_mcp\n"
        "from awf_mcp import tool\n"
        "@tool\n"
        "def f(x: int) -> int:\n"
        "    return x\n"
        "assert 'pydantic' not in sys.modules, 'pydantic imported too early'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# --- names --------------------------------------------------------------------------------------


def test_names_carry_the_plugin_prefix_once() -> None:
    @tool
    def search() -> str:
        return ""

    @tool(name="find")
    def f1() -> str:
        return ""

    @tool(name="demo_lookup")
    def f2() -> str:
        return ""

    @tool
    def demo_fetch() -> str:
        return ""

    names = [d.name for d in provider(search, f1, f2, demo_fetch).list_tools()]
    assert names == ["demo_fetch", "demo_find", "demo_lookup", "demo_search"]


def test_two_functions_with_one_name_fail_at_listing() -> None:
    @tool(name="same")
    def a() -> str:
        return ""

    @tool(name="same")
    def b() -> str:
        return ""

    with pytest.raises(TypeError, match="both named demo_same"):
        provider(a, b).list_tools()


# --- input schemas ------------------------------------------------------------------------------


def test_schema_from_hints_defaults_and_optionals() -> None:
    @tool
    def fetch(url: str, retries: int = 3, verbose: bool | None = None, tags: list[str] | None = None) -> str:
        """Fetch a URL."""
        return url

    schema = definition(fetch).input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["url"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["url"] == {"type": "string"}
    assert schema["properties"]["retries"] == {"type": "integer", "default": 3}
    assert {"type": "boolean"} in schema["properties"]["verbose"]["anyOf"]
    assert not has_key(schema, "title")
    Draft202012Validator.check_schema(schema)


def test_argument_descriptions_from_annotated_field_and_docstring() -> None:
    @tool
    def grep(
        pattern: Annotated[str, "A regular expression."],
        path: Annotated[str, Field(description="Where to look.", min_length=1)] = ".",
        limit: int = 10,
        context: int = 0,
    ) -> str:
        """Search files for a pattern.

        Lines are returned with their numbers.

        Args:
            pattern: ignored, Annotated wins.
            limit (int): The most lines to return,
                counted over all files.
            context: Lines of context.

        Returns:
            The matching lines.
        """
        return ""

    found = definition(grep)
    props = found.input_schema["properties"]
    assert props["pattern"]["description"] == "A regular expression."
    assert props["path"]["description"] == "Where to look."
    assert props["path"]["minLength"] == 1
    assert props["limit"]["description"] == "The most lines to return, counted over all files."
    assert props["context"]["description"] == "Lines of context."
    assert found.description == (
        "Search files for a pattern.\n\nLines are returned with their numbers.\n\n"
        "Returns:\n    The matching lines."
    )


def test_parse_docstring_without_args_keeps_everything() -> None:
    assert parse_docstring("  One line.  ") == ("One line.", {})
    assert parse_docstring(None) == ("", {})


class Point(BaseModel):
    x: int
    y: int = 0


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


@dataclasses.dataclass
class Out:
    output: str
    size: int


@dataclasses.dataclass
class Pair:
    left: str
    right: str | None = None


def test_nested_models_are_inlined() -> None:
    @tool
    def plot(points: list[Point]) -> str:
        return ""

    schema = definition(plot).input_schema
    assert "$defs" not in schema
    assert schema["properties"]["points"]["items"]["properties"]["x"] == {"type": "integer"}


def test_recursive_models_keep_valid_defs() -> None:
    @tool
    def walk(tree: Tree) -> str:
        return ""

    schema = definition(walk).input_schema
    assert "Tree" in schema["$defs"]
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"tree": {"label": "a", "children": [{"label": "b"}]}})
    assert not validator.is_valid({"tree": {"label": "a", "children": [{"nolabel": 1}]}})


def test_unresolvable_hints_fail_at_listing_with_a_hint() -> None:
    @tool
    def local() -> Undefined:  # type: ignore[name-defined]  # noqa: F821
        return None

    with pytest.raises(TypeError, match="define the types it uses at module level"):
        provider(local).list_tools()


def test_var_args_are_refused_when_listing_not_when_decorating() -> None:
    @tool
    def splat(*names: str) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        provider(splat).list_tools()


def test_description_fallback_names_the_operation_and_its_output_fields() -> None:
    @tool
    def measure(text: str) -> Out:
        return Out(text, len(text))

    assert definition(measure).description == (
        "Operation 'measure' from plugin 'demo'. Returns a JSON object with fields: output, size."
    )


# --- calls --------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sync_functions_run_in_a_worker_thread_with_the_call_context() -> None:
    seen: dict[str, Any] = {}

    @tool
    def where() -> str:
        seen["thread"] = threading.get_ident()
        seen["tool"] = current_call().tool_name
        return "here"

    token = bind_call_context(CallContext(tool_name="demo_where"))
    try:
        result = await call(where)
    finally:
        unbind_call_context(token)
    assert result is not None and result.content[0].text == "here"
    assert seen["thread"] != threading.get_ident()
    assert seen["tool"] == "demo_where"


@pytest.mark.anyio
async def test_async_functions_are_awaited_on_the_event_loop() -> None:
    @tool
    async def later(delay: float = 0.0) -> str:
        await asyncio.sleep(delay)
        return f"loop thread: {threading.get_ident()}"

    result = await call(later, {"delay": 0.01})
    assert result is not None and result.content[0].text == f"loop thread: {threading.get_ident()}"


@pytest.mark.anyio
async def test_arguments_are_validated_and_coerced_by_the_model() -> None:
    @tool
    def shape(size: tuple[int, int], label: str = "") -> str:
        assert isinstance(size, tuple)
        return f"{size[0]}x{size[1]}{label}"

    result = await call(shape, {"size": [3, 4]})
    assert result is not None and result.content[0].text == "3x4"
    with pytest.raises(
        ToolError, match=r"^invalid arguments for demo_shape: size\.0: Input should be a valid integer"
    ):
        await call(shape, {"size": ["a", 4]})
    with pytest.raises(ToolError, match=r"colour: Extra inputs are not permitted"):
        await call(shape, {"size": [1, 1], "colour": "red"})
    with pytest.raises(ToolError, match=r"size: Field required"):
        await call(shape, {})


@pytest.mark.anyio
async def test_parameter_names_that_shadow_model_attributes_work() -> None:
    @tool
    def odd(json: str, schema: int = 1, model_config: str = "x") -> str:
        return f"{json}-{schema}-{model_config}"

    assert set(definition(odd).input_schema["properties"]) == {"json", "schema", "model_config"}
    result = await call(odd, {"json": "j", "schema": 2})
    assert result is not None and result.content[0].text == "j-2-x"


@pytest.mark.anyio
async def test_exceptions_propagate_to_the_call_path() -> None:
    @tool
    def refuse() -> str:
        raise ToolError("no such file: a.txt")

    with pytest.raises(ToolError, match=r"^no such file: a\.txt$"):
        await call(refuse)


# --- return mapping -----------------------------------------------------------------------------


def check_structured(found: ToolDefinition, result: ToolResult | None) -> Any:
    assert result is not None and not result.is_error
    assert isinstance(result.structured_content, dict)
    if found.output_schema is not None:
        Draft202012Validator(dict(found.output_schema)).validate(result.structured_content)
    return result.structured_content


@pytest.mark.anyio
async def test_str_is_text_and_none_passes_through() -> None:
    @tool
    def hello() -> str:
        return "hi"

    @tool
    def nothing() -> None:
        return None

    assert definition(hello).output_schema is None
    result = await call(hello)
    assert result is not None and result.content == [ToolContent.of_text("hi")]
    assert result.structured_content is None
    assert await call(nothing) is None


@pytest.mark.anyio
async def test_dict_is_json_text_and_structured_content() -> None:
    @tool
    def info(name: str) -> dict[str, Any]:
        return {"name": name, "size": 2}

    found = definition(info)
    assert found.output_schema == {"type": "object", "additionalProperties": True}
    result = await call(info, {"name": "é"})
    assert check_structured(found, result) == {"name": "é", "size": 2}
    assert result is not None and result.content[0].text == '{"name": "é", "size": 2}'


@pytest.mark.anyio
async def test_list_is_wrapped_as_result_in_content_and_output_schema() -> None:
    @tool
    def names() -> list[str]:
        return ["a", "b"]

    found = definition(names)
    assert found.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "array", "items": {"type": "string"}}},
        "required": ["result"],
    }
    result = await call(names)
    assert check_structured(found, result) == {"result": ["a", "b"]}
    assert result is not None and result.content[0].text == '["a", "b"]'


@pytest.mark.anyio
async def test_undeclared_return_types_are_still_structured() -> None:
    @tool
    def loose():  # type: ignore[no-untyped-def]
        return [1, 2]

    @tool
    def loose_dict():  # type: ignore[no-untyped-def]
        return {"a": (1, 2)}

    assert definition(loose).output_schema is None
    result = await call(loose)
    assert result is not None and result.structured_content == {"result": [1, 2]}
    result = await call(loose_dict)
    assert result is not None and result.structured_content == {"a": [1, 2]}


@pytest.mark.anyio
async def test_models_and_dataclasses_become_objects_with_output_schemas() -> None:
    @tool
    def origin() -> Point:
        return Point(x=1)

    @tool
    def pair() -> Pair:
        return Pair("l")

    found = definition(origin)
    assert found.output_schema is not None and found.output_schema["required"] == ["x"]
    assert check_structured(found, await call(origin)) == {"x": 1, "y": 0}
    found = definition(pair)
    assert check_structured(found, await call(pair)) == {"left": "l", "right": None}


@pytest.mark.anyio
async def test_scalar_returns_are_wrapped() -> None:
    @tool
    def count() -> int:
        return 7

    found = definition(count)
    assert check_structured(found, await call(count)) == {"result": 7}


@pytest.mark.anyio
async def test_a_value_that_breaks_its_return_type_is_an_error() -> None:
    @tool
    def liar() -> list[int]:
        return ["not", "ints"]  # type: ignore[list-item]

    with pytest.raises(TypeError, match="does not match its return type"):
        await call(liar)


@pytest.mark.anyio
async def test_image_bytes_become_image_content() -> None:
    @tool
    def picture() -> bytes:
        return PNG

    result = await call(picture)
    assert result is not None and result.content == [ToolContent.of_image(PNG, "image/png")]
    assert definition(picture).output_schema is None


@pytest.mark.anyio
async def test_other_bytes_are_refused_with_a_hint() -> None:
    @tool
    def blob() -> bytes:
        return b"plain bytes"

    with pytest.raises(TypeError, match="not a PNG, JPEG, GIF or WebP image; return str"):
        await call(blob)


def test_image_magic_bytes() -> None:
    assert image_mime_type(b"\xff\xd8\xff\xe0rest") == "image/jpeg"
    assert image_mime_type(b"GIF89a...") == "image/gif"
    assert image_mime_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert image_mime_type(b"RIFF\x00\x00\x00\x00WAVE") is None


@pytest.mark.anyio
async def test_tool_results_and_content_pass_through() -> None:
    @tool
    def custom() -> ToolResult:
        return ToolResult(content=[ToolContent.of_text("a")], is_error=True, structured_content={"k": 1})

    @tool
    def item() -> ToolContent:
        return ToolContent.of_text("b")

    assert definition(custom).output_schema is None
    result = await call(custom)
    assert result == ToolResult(
        content=[ToolContent.of_text("a")], is_error=True, structured_content={"k": 1}
    )
    assert await call(item) == ToolResult(content=[ToolContent.of_text("b")])


@pytest.mark.anyio
async def test_unknown_tool_name_is_a_tool_error() -> None:
    with pytest.raises(ToolError, match="has no tool 'demo_missing'"):
        await provider().call_tool("demo_missing", {})


def test_bound_methods_are_tools_with_self_bound() -> None:
    class Counter:
        def __init__(self) -> None:
            self.start = 10

        @tool
        def bump(self, by: int = 1) -> int:
            """Add to the counter."""
            return self.start + by

    counter = Counter()
    found = definition(counter.bump)
    assert found.name == "demo_bump"
    assert list(found.input_schema["properties"]) == ["by"]
    result = asyncio.run(provider(counter.bump).call_tool("demo_bump", {"by": 5}))
    assert result is not None and result.structured_content == {"result": 15}


# --- prompts and resources ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_prompts_and_resources_take_arguments_and_descriptions_from_signature_and_docstring() -> None:
    from awf_mcp import prompt, resource
    from awf_mcp.authoring import FunctionOfferingProvider
    from awf_mcp.ports import PROMPT_ROLES

    @prompt
    def review(path: str, focus: str = "bugs") -> list[tuple[str, str]]:
        """Review one file.

        Args:
            path: The file to review.
            focus: What to look for.
        """
        return [("user", f"Review {path} for {focus}."), ("assistant", "Reading it.")]

    @resource("notes://today", mime_type="text/markdown")
    def today() -> str:
        """Today's notes."""
        return "# Today"

    @resource("notes://day/{day}", each=lambda: ["mon", "tue"])
    def day(day: str) -> bytes:
        return day.encode()

    offering = FunctionOfferingProvider(plugin="notes", source="plugin:notes", functions=[review, today, day])
    [definition] = offering.list_prompts()
    assert definition.name == "notes_review" and definition.description == "Review one file."
    assert [(a.name, a.description, a.required) for a in definition.arguments] == [
        ("path", "The file to review.", True),
        ("focus", "What to look for.", False),
    ]
    got = await offering.get_prompt("notes_review", {"path": "a.py"})
    assert [c.text for c in got.content] == ["Review a.py for bugs.", "Reading it."]
    assert got.structured_content[PROMPT_ROLES] == ["user", "assistant"]
    assert [r.uri for r in offering.list_resources()] == [
        "notes://today",
        "notes://day/mon",
        "notes://day/tue",
    ]
    assert [t.uri for t in offering.list_resource_templates()] == ["notes://day/{day}"]
    text = await offering.read_resource("notes://today")
    assert text.content[0].text == "# Today" and text.content[0].mime_type == "text/markdown"
    blob = await offering.read_resource("notes://day/wed")
    assert blob.content[0].data == "d2Vk"  # b"wed", by template
    with pytest.raises(ToolError, match="no resource"):
        await offering.read_resource("notes://elsewhere")
    with pytest.raises(TypeError, match="not a URI template"):
        resource("notes://{broken")(today)
