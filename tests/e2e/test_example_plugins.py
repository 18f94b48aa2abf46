"""The example plugins under plugins/, installed, served by a real ``awf-mcp serve`` to the SDK client.

Needs ``pip install -e plugins/awf-plugin-echo plugins/awf-plugin-sqlite
plugins/awf-plugin-scripts`` (tests/run.sh and CI do it); a missing one is a
failure, not a skip.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.harness import RawServer, mcp_session, server_command, server_env

pytestmark = pytest.mark.e2e

EXAMPLES = {"echo": "awf-plugin-echo", "sqlite": "awf-plugin-sqlite", "scripts": "awf-plugin-scripts"}


def only(plugin: str, **extra: str) -> dict[str, str]:
    """The environment that serves plugin ``plugin`` alone (plus ``extra`` variables)."""
    return {"AWF_MCP_PLUGINS": plugin, **extra}


def text_of(result: Any) -> str:
    return "".join(getattr(item, "text", "") for item in result.content)


@pytest.fixture(scope="module", autouse=True)
def examples_installed() -> None:
    installed = {ep.name for ep in metadata.entry_points(group="awf_mcp")}
    missing = [dist for name, dist in EXAMPLES.items() if name not in installed]
    if missing:
        pytest.fail(
            "example plugins not installed: "
            + " ".join(f"pip install --no-deps -e plugins/{dist}" for dist in missing)
        )


@pytest.fixture
def database(root: Path) -> Path:
    path = root / "app.sqlite"
    with sqlite3.connect(path) as db:
        db.executescript(
            """
            CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
            INSERT INTO users (name) VALUES ('ada'), ('grace'), ('linus');
            """
        )
    return path


# --- echo ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_echo_lists_one_tool_with_input_and_output_schemas(root: Path) -> None:
    async with mcp_session("--no-builtins", cwd=root, env=only("echo")) as session:
        tools = (await session.list_tools()).tools
    assert [t.name for t in tools] == ["echo_echo"]
    [echo] = tools
    assert echo.input_schema["required"] == ["text"]
    assert set(echo.input_schema["properties"]) == {"text", "prefix"}
    assert echo.output_schema is not None and echo.output_schema["required"] == ["output", "text", "prefix"]
    assert echo.annotations is not None and echo.annotations.read_only_hint is True


@pytest.mark.anyio
async def test_echo_returns_json_text_and_structured_content(root: Path) -> None:
    async with mcp_session("--no-builtins", cwd=root, env=only("echo")) as session:
        result = await session.call_tool("echo_echo", {"text": "world", "prefix": "hello "})
        bare = await session.call_tool("echo_echo", {"text": "x"})
        missing = await session.call_tool("echo_echo", {"prefix": "p"})
    assert not result.is_error
    assert result.structured_content == {"output": "hello world", "text": "world", "prefix": "hello "}
    assert json.loads(text_of(result)) == result.structured_content
    assert bare.structured_content == {"output": "x", "text": "x", "prefix": ""}
    assert missing.is_error
    assert "'text' is a required property" in text_of(missing)


def test_echo_through_tools_call(root: Path) -> None:
    done = subprocess.run(
        server_command(
            "tools", "call", "echo_echo", '{"text": "hi", "prefix": ">"}', "--json", "--no-builtins"
        ),
        capture_output=True,
        text=True,
        env=server_env(only("echo")),
        cwd=root,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["structuredContent"] == {"output": ">hi", "text": "hi", "prefix": ">"}


# --- sqlite -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_sqlite_tables_schema_and_query(root: Path, database: Path) -> None:
    env = only("sqlite", AWF_MCP_PLUGIN_SQLITE_DATABASE=database.name)
    async with mcp_session("--no-builtins", cwd=root, env=env) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        tables = await session.call_tool("sqlite_tables", {})
        schema = await session.call_tool("sqlite_schema", {"table": "users"})
        query = await session.call_tool(
            "sqlite_query", {"sql": "SELECT name FROM users WHERE id >= ? ORDER BY id", "params": [2]}
        )
    assert names == ["sqlite_query", "sqlite_schema", "sqlite_tables"]
    assert tables.structured_content is not None
    assert tables.structured_content["tables"] == [{"name": "users", "type": "table"}]
    assert schema.structured_content is not None
    assert [c["name"] for c in schema.structured_content["columns"]] == ["id", "name"]
    assert not query.is_error
    assert query.structured_content is not None
    assert query.structured_content["rows"] == [["grace"], ["linus"]]


@pytest.mark.anyio
async def test_sqlite_refuses_writes_and_leaves_the_file_alone(root: Path, database: Path) -> None:
    before = database.read_bytes()
    env = only("sqlite", AWF_MCP_PLUGIN_SQLITE_DATABASE=str(database))
    async with mcp_session("--no-builtins", cwd=root, env=env) as session:
        delete = await session.call_tool("sqlite_query", {"sql": "DELETE FROM users"})
        hidden = await session.call_tool(
            "sqlite_query", {"sql": "WITH x AS (SELECT 1) INSERT INTO users (name) SELECT 'eve' FROM x"}
        )
        drop = await session.call_tool("sqlite_query", {"sql": "SELECT 1; DROP TABLE users"})
    assert delete.is_error and "read-only statements only" in text_of(delete)
    assert hidden.is_error and "refused the statement" in text_of(hidden)
    assert drop.is_error and "one statement at a time" in text_of(drop)
    assert database.read_bytes() == before


@pytest.mark.anyio
async def test_sqlite_without_database_setting_says_what_to_add(root: Path) -> None:
    async with mcp_session("--no-builtins", cwd=root, env=only("sqlite")) as session:
        result = await session.call_tool("sqlite_tables", {})
    assert result.is_error
    assert text_of(result) == (
        "plugin 'sqlite' needs setting 'database': add `database = ...` under [plugins.sqlite] "
        "in awf-mcp.toml or set AWF_MCP_PLUGIN_SQLITE_DATABASE"
    )


@pytest.mark.anyio
async def test_sqlite_bounds_bytes_and_refuses_fts3_tokenizer(root: Path, database: Path) -> None:
    env = only("sqlite", AWF_MCP_PLUGIN_SQLITE_DATABASE=str(database))
    async with mcp_session("--no-builtins", cwd=root, env=env) as session:
        huge = await session.call_tool(
            "sqlite_query", {"sql": "SELECT hex(zeroblob(25000000)) FROM (VALUES(1),(2),(3),(4))"}
        )
        many = await session.call_tool(
            "sqlite_query",
            {
                "sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 500) "
                "SELECT x, hex(zeroblob(20000)) FROM c"
            },
        )
        pointer = await session.call_tool("sqlite_query", {"sql": "SELECT fts3_tokenizer('simple')"})
        still = await session.call_tool("sqlite_query", {"sql": "SELECT count(*) FROM users"})
    assert huge.is_error and "2,097,152 bytes" in text_of(huge)
    assert not many.is_error and many.structured_content is not None
    assert many.structured_content["truncated"] is True and many.structured_content["row_count"] < 30
    assert len(text_of(many)) <= 1024 * 1024
    assert pointer.is_error and "fts3_tokenizer" in text_of(pointer)
    assert still.structured_content is not None and still.structured_content["rows"] == [[3]]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_sqlite_endless_recursion_stops_with_its_call(root: Path, database: Path) -> None:
    endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    env = only("sqlite", AWF_MCP_PLUGIN_SQLITE_DATABASE=str(database))
    with RawServer("--no-builtins", "--call-timeout", "1", env=env, cwd=root) as server:
        server.initialize()
        for _ in range(3):
            reply = server.request(
                "tools/call", {"name": "sqlite_query", "arguments": {"sql": endless}}, timeout=30
            )
            assert reply["result"]["isError"] and "timed out" in reply["result"]["content"][0]["text"]
        time.sleep(0.5)
        before = cpu_seconds(server.pid)
        time.sleep(2)
        burnt = cpu_seconds(server.pid) - before
        assert burnt < 0.5, f"the server used {burnt:.1f} s of CPU in 2 s after its calls timed out"
    slow = {**env, "AWF_MCP_PLUGIN_SQLITE_TIMEOUT_SECONDS": "0.5"}
    with RawServer("--no-builtins", env=slow, cwd=root) as server:
        server.initialize()
        reply = server.request(
            "tools/call", {"name": "sqlite_query", "arguments": {"sql": endless}}, timeout=30
        )
        assert "longer than 0.5 s" in reply["result"]["content"][0]["text"]


# --- scripts ------------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The scripts plugin's approvals go to a state directory outside the root, never the user's."""
    state = tmp_path / "state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    return state


def add_script(root: Path, name: str, body: str) -> None:
    directory = root / ".awf-tools"
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text(body, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def approve_scripts(directory: Path) -> None:
    """What the user does after reviewing the scripts: ``python -m awf_plugin_scripts approve DIR``."""
    command = [sys.executable, "-m", "awf_plugin_scripts", "approve", str(directory)]
    done = subprocess.run(command, capture_output=True, text=True, env=server_env(), timeout=60)
    assert done.returncode == 0, done.stderr


@pytest.mark.anyio
async def test_scripts_become_tools_and_run_with_their_arguments(root: Path) -> None:
    add_script(root, "Count-Args.sh", '#!/bin/sh\n# description: Count the arguments.\necho "$# args: $*"\n')
    add_script(root, "fail.sh", "#!/bin/sh\necho bad >&2\nexit 4\n")
    approve_scripts(root / ".awf-tools")
    async with mcp_session("--no-builtins", cwd=root, env=only("scripts")) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        ok = await session.call_tool("scripts_count_args", {"args": ["a b", "*"]})
        failed = await session.call_tool("scripts_fail", {})
    assert sorted(tools) == ["scripts_count_args", "scripts_fail"]
    assert tools["scripts_count_args"].description == "Count the arguments."
    assert not ok.is_error
    assert text_of(ok) == "2 args: a b *\nexit code 0"
    assert failed.is_error
    assert failed.structured_content is not None and failed.structured_content["exit_code"] == 4
    assert "bad" in text_of(failed)


@pytest.mark.anyio
async def test_scripts_dir_setting_is_resolved_against_the_root(root: Path) -> None:
    add_script(root, "ignored.sh", "#!/bin/sh\n")
    other = root / "bin"
    other.mkdir()
    (other / "hi").write_text("#!/bin/sh\necho hi\n", encoding="utf-8")
    (other / "hi").chmod(0o755)
    env = only("scripts", AWF_MCP_PLUGIN_SCRIPTS_DIR="bin")
    async with mcp_session("--no-builtins", cwd=root, env=env) as session:
        names = [t.name for t in (await session.list_tools()).tools]
    assert names == ["scripts_hi"]


@pytest.mark.anyio
async def test_a_script_the_agent_overwrites_does_not_run_without_the_users_approval(
    root: Path, private_state: Path
) -> None:
    add_script(root, "hello.sh", "#!/bin/sh\necho hello\n")
    env = only("scripts", XDG_STATE_HOME=str(private_state))
    async with mcp_session("--exclude", "Bash", cwd=root, env=env) as session:
        unapproved = await session.call_tool("scripts_hello", {})
    assert unapproved.is_error and "never approved" in text_of(unapproved)
    approve_scripts(root / ".awf-tools")
    async with mcp_session("--exclude", "Bash", cwd=root, env=env) as session:
        names = {t.name for t in (await session.list_tools()).tools}
        assert "Bash" not in names and "Write" in names
        assert text_of(await session.call_tool("scripts_hello", {})) == "hello\nexit code 0"
        written = await session.call_tool(
            "Write", {"path": ".awf-tools/hello.sh", "content": "#!/bin/sh\necho pwned > pwned.txt\n"}
        )
        assert not written.is_error, text_of(written)
        refused = await session.call_tool("scripts_hello", {})
        assert refused.is_error and "changed since it was approved" in text_of(refused)
        assert "python -m awf_plugin_scripts approve" in text_of(refused)
        redirected = await session.call_tool(
            "Write", {"path": "awf-mcp.toml", "content": '[plugins.scripts]\napprovals = "/tmp/none.json"\n'}
        )
        # The sandbox keeps the root's awf-mcp.toml read-only (and unapproved it would be ignored).
        assert redirected.is_error and "read-only inside the root" in text_of(redirected)
    assert not (root / "pwned.txt").exists() and not (root / "awf-mcp.toml").exists()
    async with mcp_session("--exclude", "Bash", cwd=root, env=env) as session:  # a restart approves nothing
        again = await session.call_tool("scripts_hello", {})
    assert again.is_error and not (root / "pwned.txt").exists()
    approve_scripts(root / ".awf-tools")
    async with mcp_session("--exclude", "Bash", cwd=root, env=env) as session:
        approved = await session.call_tool("scripts_hello", {})
    assert not approved.is_error and (root / "pwned.txt").exists()


@pytest.mark.anyio
async def test_sqlite_serves_each_table_schema_as_a_resource(root: Path, database: Path) -> None:
    env = only("sqlite", AWF_MCP_PLUGIN_SQLITE_DATABASE=database.name)
    async with mcp_session("--no-builtins", cwd=root, env=env) as session:
        resources = [str(r.uri) for r in (await session.list_resources()).resources]
        templates = [t.uri_template for t in (await session.list_resource_templates()).resource_templates]
        read = await session.read_resource("sqlite://schema/users")
    assert resources == ["sqlite://schema/users"] and templates == ["sqlite://schema/{table}"]
    schema = json.loads(read.contents[0].text)  # type: ignore[union-attr]
    assert schema["name"] == "users" and [c["name"] for c in schema["columns"]] == ["id", "name"]
