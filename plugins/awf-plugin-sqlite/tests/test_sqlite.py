"""The sqlite plugin's tools against a real database file, through awf-mcp's function provider."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from awf_plugin_sqlite import SqliteTools, awf_mcp_register_tools, first_keyword

from awf_mcp import PluginContext, ToolError
from awf_mcp.authoring import FunctionToolProvider
from awf_mcp.ports import CallContext, bind_call_context, unbind_call_context


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def database(tmp_path: Path) -> Path:
    path = tmp_path / "shop.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price REAL DEFAULT 0);
            CREATE VIEW cheap AS SELECT name FROM items WHERE price < 2;
            INSERT INTO items (name, price) VALUES ('apple', 1.5), ('pear', 2.5), ('fig', 0.5);
            """
        )
    return path


def provider(settings: dict[str, Any], roots: tuple[str, ...] = ()) -> FunctionToolProvider:
    context = PluginContext(name="sqlite", settings=settings, roots=roots)
    awf_mcp_register_tools(plugin=context)
    return FunctionToolProvider(plugin="sqlite", source="plugin:sqlite", functions=context.registered)


async def call(tools: FunctionToolProvider, name: str, arguments: dict[str, Any]) -> Any:
    result = await tools.call_tool(name, arguments)
    assert result is not None and not result.is_error
    return result.structured_content


def test_entry_point_names_the_plugin_sqlite() -> None:
    points = {ep.name: ep.value for ep in metadata.entry_points(group="awf_mcp")}
    assert points.get("sqlite") == "awf_plugin_sqlite"


def test_three_read_only_tools_are_listed_without_the_setting() -> None:
    definitions = provider({}).list_tools()
    assert [d.name for d in definitions] == ["sqlite_query", "sqlite_schema", "sqlite_tables"]
    assert all(d.annotations is not None and d.annotations.read_only for d in definitions)


@pytest.mark.anyio
async def test_relative_database_resolves_against_first_root(database: Path) -> None:
    tools = provider({"database": database.name}, roots=(str(database.parent),))
    listing = await call(tools, "sqlite_tables", {})
    assert listing["tables"] == [{"name": "cheap", "type": "view"}, {"name": "items", "type": "table"}]


@pytest.mark.anyio
async def test_schema_lists_columns(database: Path) -> None:
    schema = await call(provider({"database": str(database)}), "sqlite_schema", {"table": "items"})
    assert [c["name"] for c in schema["columns"]] == ["id", "name", "price"]
    assert schema["columns"][1]["not_null"] is True
    assert schema["sql"].startswith("CREATE TABLE items")


@pytest.mark.anyio
async def test_schema_of_unknown_table_names_the_known_ones(database: Path) -> None:
    hostile = "items; DROP TABLE items"
    with pytest.raises(
        ToolError, match=r"no table or view named 'items; DROP TABLE items' \(tables: items\)"
    ):
        await provider({"database": str(database)}).call_tool("sqlite_schema", {"table": hostile})


@pytest.mark.anyio
async def test_query_binds_params(database: Path) -> None:
    tools = provider({"database": str(database)})
    sql = "SELECT name FROM items WHERE price > ? ORDER BY id"
    rows = await call(tools, "sqlite_query", {"sql": sql, "params": [1]})
    assert rows == {
        "columns": ["name"],
        "rows": [["apple"], ["pear"]],
        "row_count": 2,
        "truncated": False,
        "note": None,
    }
    count = "SELECT count(*) FROM items WHERE name = ?"
    injected = await call(tools, "sqlite_query", {"sql": count, "params": ["x' OR '1'='1"]})
    assert injected["rows"] == [[0]]


@pytest.mark.anyio
async def test_query_caps_rows_with_a_note(database: Path) -> None:
    tools = provider({"database": str(database), "max_rows": "2"})
    rows = await call(tools, "sqlite_query", {"sql": "SELECT id FROM items"})
    assert rows["row_count"] == 2 and rows["truncated"] is True
    assert "first 2 rows" in rows["note"]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM items",
        "  -- sneaky\n insert into items (name) values ('x')",
        "WITH x AS (SELECT 1) INSERT INTO items (name) SELECT 'y' FROM x",
        "ATTACH DATABASE ':memory:' AS other",
        "PRAGMA query_only = OFF",
        "SELECT * FROM pragma_table_info('items')",
    ],
)
async def test_query_refuses_anything_but_reading(database: Path, sql: str) -> None:
    with pytest.raises(ToolError, match="sqlite_query"):
        await provider({"database": str(database)}).call_tool("sqlite_query", {"sql": sql})
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM items").fetchone() == (3,)


@pytest.mark.anyio
async def test_missing_setting_says_what_to_add() -> None:
    with pytest.raises(ToolError, match=r"needs setting 'database'.*AWF_MCP_PLUGIN_SQLITE_DATABASE"):
        await provider({}).call_tool("sqlite_tables", {})


@pytest.mark.anyio
async def test_missing_file_is_reported_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    with pytest.raises(ToolError, match="does not exist"):
        await provider({"database": str(missing)}).call_tool("sqlite_tables", {})
    assert not missing.exists()


def test_first_keyword_skips_comments_and_parentheses() -> None:
    assert first_keyword("/* a */ -- b\n ( select 1)") == "SELECT"
    assert first_keyword("   ") == ""


@pytest.mark.anyio
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT fts3_tokenizer('simple')",
        "SELECT FTS3_TOKENIZER('simple', X'0000000000000000')",
        "WITH t AS (SELECT fts3_tokenizer('porter') AS p) SELECT p FROM t",
    ],
)
async def test_fts3_tokenizer_is_refused(database: Path, sql: str) -> None:
    with pytest.raises(ToolError, match=r"refused the statement.*fts3_tokenizer"):
        await provider({"database": str(database)}).call_tool("sqlite_query", {"sql": sql})


@pytest.mark.anyio
async def test_rows_stop_at_the_byte_bound_with_a_note(database: Path) -> None:
    tools = provider({"database": str(database), "max_bytes": 100_000})
    sql = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400) "
        "SELECT x, hex(zeroblob(1000)) FROM c"
    )
    token = bind_call_context(CallContext(tool_name="sqlite_query", output_budget=1_000_000))
    try:
        result = await tools.call_tool("sqlite_query", {"sql": sql})
    finally:
        unbind_call_context(token)
    assert result is not None and not result.is_error
    rows = result.structured_content
    assert rows["truncated"] is True and 20 <= rows["row_count"] < 30
    assert "50,000 bytes" in rows["note"] and "max_bytes" in rows["note"]
    assert len(result.content[0].text) <= 50_000
    # a client with a small output budget gets fewer rows, and the note says why
    small = await tools.call_tool("sqlite_query", {"sql": sql})
    assert small is not None and small.structured_content["row_count"] < 5
    assert "output budget" in small.structured_content["note"]


@pytest.mark.anyio
async def test_a_value_over_the_byte_bound_is_never_built(database: Path) -> None:
    tools = provider({"database": str(database), "max_bytes": 1_000_000})
    sql = "SELECT hex(zeroblob(25000000)) FROM (VALUES(1),(2),(3),(4))"
    with pytest.raises(ToolError, match=r"exceed 1,000,000 bytes .*max_bytes.*substr"):
        await tools.call_tool("sqlite_query", {"sql": sql})


ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"


@pytest.mark.anyio
async def test_an_endless_query_stops_after_timeout_seconds(database: Path) -> None:
    tools = provider({"database": str(database), "timeout_seconds": 0.5})
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"longer than 0.5 s .*timeout_seconds"):
        await tools.call_tool("sqlite_query", {"sql": ENDLESS})
    assert time.monotonic() - started < 5


def test_an_endless_query_stops_when_the_call_is_cancelled(database: Path) -> None:
    tools = SqliteTools(PluginContext(name="sqlite", settings={"database": str(database)}))
    context = CallContext(tool_name="sqlite_query")
    token = bind_call_context(context)
    try:
        threading.Timer(0.3, context.cancelled.set).start()
        started = time.monotonic()
        with pytest.raises(ToolError, match="cancelled or timed out"):
            tools.query(ENDLESS)
        assert time.monotonic() - started < 5
    finally:
        unbind_call_context(token)


@pytest.mark.anyio
async def test_each_table_schema_is_a_resource_listed_and_read_by_template(database: Path) -> None:
    from awf_plugin_sqlite import awf_mcp_register_resources

    from awf_mcp.authoring import FunctionOfferingProvider

    context = PluginContext(name="sqlite", settings={"database": str(database)}, roots=())
    awf_mcp_register_resources(plugin=context)
    offering = FunctionOfferingProvider(plugin="sqlite", source="plugin:sqlite", functions=context.registered)
    assert [r.uri for r in offering.list_resources()] == ["sqlite://schema/cheap", "sqlite://schema/items"]
    assert [t.uri for t in offering.list_resource_templates()] == ["sqlite://schema/{table}"]
    read = await offering.read_resource("sqlite://schema/items")
    schema = json.loads(read.content[0].text)
    assert read.content[0].uri == "sqlite://schema/items" and read.content[0].mime_type == "application/json"
    assert schema["name"] == "items" and [c["name"] for c in schema["columns"]] == ["id", "name", "price"]
    with pytest.raises(ToolError, match="no table or view named 'nothing'"):
        await offering.read_resource("sqlite://schema/nothing")
    unconfigured = PluginContext(name="sqlite", settings={}, roots=())
    awf_mcp_register_resources(plugin=unconfigured)
    empty = FunctionOfferingProvider(
        plugin="sqlite", source="plugin:sqlite", functions=unconfigured.registered
    )
    assert empty.list_resources() == [] and len(empty.list_resource_templates()) == 1
