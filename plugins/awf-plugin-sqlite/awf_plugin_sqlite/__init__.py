"""awf-mcp plugin ``sqlite``: read-only tools over one SQLite database file.

Tools
-----
``sqlite_tables``  the tables and views, by name;
``sqlite_schema``  one table's ``CREATE`` statement and columns;
``sqlite_query``   one read-only SQL statement with bound ``params``.

Resources
---------
``sqlite://schema/<table>``  each table's and view's schema (its ``CREATE`` statement and
                             columns, as JSON), listed one per table when the database is
                             configured, and readable by template (``sqlite://schema/{table}``).

Settings (``[plugins.sqlite]`` in ``awf-mcp.toml`` or ``AWF_MCP_PLUGIN_SQLITE_<KEY>``)
------------------------------------------------------------------------------------
``database``  the database file (required; a relative path is resolved against the
              server's first root). Read when a tool runs, so the tools are listed
              even before the setting exists and a call says what to add.
``max_rows``  the most rows ``sqlite_query`` returns (default 500).
``max_bytes`` the most bytes of a ``sqlite_query`` result (default 2 MiB), counting
              both copies of the rows it carries (JSON text and ``structuredContent``):
              rows stop once their JSON would pass half of it.
``timeout_seconds``  how long one statement may run (default 30).

Threat model: the SQL comes from a model and may be hostile. The file is opened
read-only (``mode=ro`` URI) with ``PRAGMA query_only=ON``; ``sqlite_query`` only
accepts statements starting with SELECT, WITH, VALUES or EXPLAIN, and an
authorizer denies everything except reading tables, selecting, calling
functions and recursive CTEs (so no writes, ATTACH, PRAGMA or schema changes
even inside a CTE); of the functions, ``fts3_tokenizer`` (which reads and
overwrites process pointers) is denied. Parameters are always bound, never
formatted into SQL; ``sqlite_schema`` looks the table up in ``sqlite_master``
by a bound parameter.

Bounds: SQLite refuses to build any string or blob over ``max_bytes``
(``SQLITE_LIMIT_LENGTH``), the process's SQLite heap is capped at
:data:`HEAP_LIMIT_BYTES` (``PRAGMA hard_heap_limit``, process-wide), rows are
measured as they are fetched and fetching stops at the byte bound, and a
progress handler stops the statement when the call is cancelled or times out
(the call's cancel flag) or after ``timeout_seconds``, so an endless
``WITH RECURSIVE`` does not run on after its call.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any

from awf_mcp import PluginContext, ToolError, current_call, hookimpl, resource, tool
from awf_mcp.budget import current_budget

__all__ = ["Column", "QueryResult", "SchemaResult", "SqliteTools", "Table", "TablesResult"]

SCHEMA_URI = "sqlite://schema/{table}"
"""The resource template of each table's schema (listed one resource per table and view)."""
DEFAULT_MAX_ROWS = 500
DEFAULT_MAX_BYTES = 2 * 1024 * 1024
DEFAULT_TIMEOUT_SECONDS = 30.0
HEAP_LIMIT_BYTES = 256 * 1024 * 1024
"""The cap on SQLite's heap in this process (``PRAGMA hard_heap_limit``): one row never exceeds it."""
DENIED_FUNCTIONS = frozenset({"fts3_tokenizer"})
"""SQL functions the authorizer refuses: ``fts3_tokenizer`` reads and overwrites process pointers."""
_PROGRESS_STEPS = 10_000
_ENVELOPE_BYTES = 1_000
"""Bytes of the output budget kept for the columns, the note and the JSON around the rows."""
READ_KEYWORDS = frozenset({"SELECT", "WITH", "VALUES", "EXPLAIN"})
_LEADING_NOISE = re.compile(r"^(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/|\()*", re.DOTALL)
_ALLOWED_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_BLOB_PREVIEW_BYTES = 64

Param = str | int | float | bool | None


@dataclass(frozen=True, slots=True)
class Table:
    """One table or view."""

    name: str
    type: str


@dataclass(frozen=True, slots=True)
class TablesResult:
    """What ``sqlite_tables`` returns."""

    database: str
    tables: list[Table]


@dataclass(frozen=True, slots=True)
class Column:
    """One column of a table, as ``pragma_table_info`` describes it."""

    name: str
    type: str
    not_null: bool
    default: str | None
    primary_key: bool


@dataclass(frozen=True, slots=True)
class SchemaResult:
    """What ``sqlite_schema`` returns."""

    name: str
    type: str
    sql: str | None
    columns: list[Column]


@dataclass(frozen=True, slots=True)
class QueryResult:
    """What ``sqlite_query`` returns; ``note`` explains a truncation."""

    columns: list[str]
    rows: list[list[Any]]
    row_count: int
    truncated: bool
    note: str | None = None


def first_keyword(sql: str) -> str:
    """The statement's first keyword, upper-cased, after comments, blanks and parentheses."""
    rest = sql[_LEADING_NOISE.match(sql).end() :]  # type: ignore[union-attr]
    match = re.match(r"[A-Za-z]+", rest)
    return match.group(0).upper() if match else ""


def _authorize(action: int, arg1: str | None, arg2: str | None, db: str | None, trigger: str | None) -> int:
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() in DENIED_FUNCTIONS:
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in _ALLOWED_ACTIONS else sqlite3.SQLITE_DENY


def _json_value(value: Any) -> Any:
    if isinstance(value, bytes):
        if len(value) <= _BLOB_PREVIEW_BYTES:
            return f"X'{value.hex().upper()}'"
        return f"<blob of {len(value)} bytes>"
    return value


class SqliteTools:
    """The three tools, bound to one plugin's settings and roots."""

    def __init__(self, plugin: PluginContext) -> None:
        self.plugin = plugin

    def database_path(self) -> Path:
        """The configured database file, resolved against the first root."""
        path = Path(str(self.plugin.setting("database"))).expanduser()
        if not path.is_absolute():
            base = Path(self.plugin.roots[0]) if self.plugin.roots else Path.cwd()
            path = base / path
        return path.resolve()

    def max_rows(self) -> int:
        """The row cap of ``sqlite_query``."""
        value = self.plugin.setting("max_rows", DEFAULT_MAX_ROWS)
        try:
            rows = int(value)
        except (TypeError, ValueError):
            rows = 0
        if rows < 1:
            raise ToolError(f"plugin 'sqlite' setting max_rows must be a positive integer, got {value!r}")
        return rows

    def max_bytes(self) -> int:
        """The byte bound of a ``sqlite_query`` result (both copies of its rows)."""
        return self._positive("max_bytes", DEFAULT_MAX_BYTES, int)

    def timeout_seconds(self) -> float:
        """How long one statement may run."""
        return self._positive("timeout_seconds", DEFAULT_TIMEOUT_SECONDS, float)

    def _positive(self, key: str, default: float, kind: type[int] | type[float]) -> Any:
        value = self.plugin.setting(key, default)
        try:
            number = kind(value)
        except (TypeError, ValueError):
            number = 0
        if number <= 0:
            raise ToolError(f"plugin 'sqlite' setting {key} must be a positive number, got {value!r}")
        return number

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A read-only connection to the database, closed afterwards."""
        path = self.database_path()
        if not path.is_file():
            raise ToolError(f"SQLite database {path} does not exist (plugin 'sqlite' setting 'database')")
        try:
            connection = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        except sqlite3.Error as exc:
            raise ToolError(f"cannot open SQLite database {path}: {exc}") from None
        try:
            connection.execute("PRAGMA query_only = ON")
            connection.execute(f"PRAGMA hard_heap_limit = {HEAP_LIMIT_BYTES}")
            yield connection
        except MemoryError:
            raise ToolError(
                f"the query needed more than the {HEAP_LIMIT_BYTES:,}-byte SQLite memory cap; "
                "select fewer or smaller columns"
            ) from None
        except sqlite3.Error as exc:
            raise ToolError(f"SQLite error: {exc}") from None
        finally:
            connection.close()

    @tool(read_only=True, idempotent=True, open_world=False)
    def tables(self) -> TablesResult:
        """List the tables and views of the configured SQLite database."""
        with self.connect() as db:
            rows = db.execute(
                "SELECT name, type FROM sqlite_master "
                "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY name"
            ).fetchall()
        return TablesResult(database=str(self.database_path()), tables=[Table(n, t) for n, t in rows])

    @tool(read_only=True, idempotent=True, open_world=False)
    def schema(self, table: Annotated[str, "Table or view name, as sqlite_tables lists it."]) -> SchemaResult:
        """Show one table's CREATE statement and its columns."""
        with self.connect() as db:
            found = db.execute(
                "SELECT name, type, sql FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?",
                (table,),
            ).fetchone()
            if found is None:
                names = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                known = ", ".join(sorted(names)) or "none"
                raise ToolError(f"no table or view named {table!r} (tables: {known})")
            columns = db.execute(
                'SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid',
                (found[0],),
            ).fetchall()
        return SchemaResult(
            name=found[0],
            type=found[1],
            sql=found[2],
            columns=[Column(n, t or "", bool(nn), d, bool(pk)) for n, t, nn, d, pk in columns],
        )

    def table_names(self) -> list[str]:
        """The tables and views, for the schema resources (none while the database is not configured)."""
        try:
            return [table.name for table in self.tables().tables]
        except ToolError:
            return []

    @resource(SCHEMA_URI, name="schema", mime_type="application/json", each="table_names")
    def schema_resource(self, table: str) -> str:
        """One table's or view's CREATE statement and columns, as JSON."""
        return json.dumps(asdict(self.schema(table)), indent=2)

    @tool(read_only=True, idempotent=True, open_world=False)
    def query(
        self,
        sql: Annotated[str, "One read-only statement: SELECT, WITH, VALUES or EXPLAIN. Use ? placeholders."],
        params: Annotated[list[Param] | None, "Values bound to the ? placeholders, in order."] = None,
    ) -> QueryResult:
        """Run one read-only SQL statement and return its rows (at most max_rows, default 500).

        Writes, ATTACH and PRAGMA are refused. Bind values with ? and params; never
        paste values into the SQL text.
        """
        keyword = first_keyword(sql)
        if keyword not in READ_KEYWORDS:
            shown = keyword or sql.strip()[:20]
            raise ToolError(
                f"sqlite_query runs read-only statements only (SELECT, WITH, VALUES, EXPLAIN); "
                f"{shown!r} is refused"
            )
        cap = self.max_rows()
        max_bytes = self.max_bytes()
        timeout = self.timeout_seconds()
        with self.connect() as db:
            db.set_authorizer(_authorize)
            db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_bytes)
            stop = _Stopper(timeout)
            db.set_progress_handler(stop, _PROGRESS_STEPS)
            try:
                cursor = db.execute(sql, tuple(params or ()))
                columns = [item[0] for item in cursor.description or ()]
                # The rows travel twice (JSON text and structuredContent): each copy within half of
                # max_bytes and within the client's output budget, less room for the envelope.
                room = min(max_bytes // 2, current_budget() - _ENVELOPE_BYTES)
                rows, truncated, note = _fetch(cursor, cap, room)
            except sqlite3.DatabaseError as exc:
                raise _query_error(exc, stop, max_bytes) from None
        return QueryResult(columns=columns, rows=rows, row_count=len(rows), truncated=truncated, note=note)


class _Stopper:
    """SQLite's progress handler: non-zero (stop) once the call is cancelled or the time is up."""

    def __init__(self, timeout: float) -> None:
        self.call = current_call()
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.reason: str | None = None

    def __call__(self) -> int:
        if self.call.cancelled.is_set():
            self.reason = "the call was cancelled or timed out, so the statement was stopped"
        elif time.monotonic() > self.deadline:
            self.reason = (
                f"the statement ran longer than {self.timeout:g} s and was stopped "
                "(plugin 'sqlite' setting timeout_seconds); add a LIMIT or a narrower WHERE"
            )
        return 1 if self.reason else 0


def _fetch(cursor: sqlite3.Cursor, cap: int, byte_budget: int) -> tuple[list[list[Any]], bool, str | None]:
    """Up to ``cap`` rows whose JSON stays within ``byte_budget``, measured as they are fetched."""
    rows: list[list[Any]] = []
    used = 0
    while True:
        row = cursor.fetchone()
        if row is None:
            return rows, False, None
        if len(rows) >= cap:
            return (
                rows,
                True,
                (f"only the first {cap} rows are shown; add LIMIT/OFFSET or a WHERE clause to see others"),
            )
        values = [_json_value(value) for value in row]
        used += len(json.dumps(values, ensure_ascii=False).encode("utf-8", "surrogatepass")) + 1
        if used > byte_budget:
            shown = f"only the first {len(rows)} rows are shown" if rows else "no row is shown"
            return (
                rows,
                True,
                (
                    f"{shown}: the next one would take the result past {byte_budget:,} bytes "
                    "(this client's output budget, or plugin 'sqlite' setting max_bytes); select fewer "
                    "columns, substr() long values, or add LIMIT/OFFSET"
                ),
            )
        rows.append(values)


def _query_error(exc: sqlite3.DatabaseError, stop: _Stopper, max_bytes: int) -> ToolError:
    message = str(exc)
    if stop.reason and "interrupt" in message:
        return ToolError(stop.reason)
    if "not authorized" in message:
        return ToolError(
            "sqlite_query refused the statement: it may only read tables and call functions "
            f"(no writes, ATTACH, PRAGMA, schema changes or {', '.join(sorted(DENIED_FUNCTIONS))}); "
            "use sqlite_schema for table structure"
        )
    if "too big" in message:
        return ToolError(
            f"a value of the result would exceed {max_bytes:,} bytes (plugin 'sqlite' setting "
            "max_bytes); select length(...) or substr(...) of long values instead"
        )
    return ToolError(f"SQLite error: {message}")


@hookimpl
def awf_mcp_register_tools(plugin: PluginContext) -> None:
    """Contribute ``sqlite_tables``, ``sqlite_schema`` and ``sqlite_query``."""
    tools = SqliteTools(plugin)
    plugin.register(tools.tables)
    plugin.register(tools.schema)
    plugin.register(tools.query)


@hookimpl
def awf_mcp_register_resources(plugin: PluginContext) -> None:
    """Contribute each table's schema as the resource ``sqlite://schema/<table>``."""
    plugin.register(SqliteTools(plugin).schema_resource)
