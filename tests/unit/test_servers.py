"""Upstream server configuration: ``[servers.NAME]`` and ``mcpServers``, ``${VAR}``, secrets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awf_mcp.core.config import ServeOptions, load
from awf_mcp.core.servers import DEFAULT_STARTUP_TIMEOUT_SECONDS, parse, parse_one
from awf_mcp.errors import ConfigError
from tests.helpers.harness import write_approved

ENV = {"TOKEN": "tok-123456", "AUTHOR": "Ada Lovelace", "HOME": "/home/ada"}


def test_toml_servers_are_read_with_defaults_and_sorted(tmp_path: Path) -> None:
    write_approved(
        tmp_path / "awf-mcp.toml",
        """
[servers.time]
command = "uvx"
args = ["mcp-server-time"]

[servers.docs]
url = "https://example.invalid/mcp"
headers = { Authorization = "Bearer x" }
timeout_seconds = 5
enabled = false
""",
    )
    settings = load(cwd=str(tmp_path))
    docs, time = settings.servers
    assert (docs.name, docs.transport, docs.enabled, docs.timeout_seconds) == ("docs", "http", False, 5.0)
    assert (time.name, time.command, time.args, time.transport) == (
        "time",
        "uvx",
        ("mcp-server-time",),
        "stdio",
    )
    assert time.startup_timeout_seconds == DEFAULT_STARTUP_TIMEOUT_SECONDS
    assert time.source == "server:time"


def test_proxy_json_takes_mcp_servers_in_the_agents_shape(tmp_path: Path) -> None:
    write_approved(
        tmp_path / "proxy.json",
        json.dumps(
            {
                "intercept_builtins": False,
                "mcpServers": {
                    "git": {"type": "stdio", "command": "uvx", "args": ["mcp-server-git"], "env": {}},
                    "web": {"httpUrl": "https://example.invalid/mcp", "timeout": 30000, "trust": True},
                },
            }
        ),
    )
    settings = load(ServeOptions(config=str(tmp_path / "proxy.json")), cwd=str(tmp_path))
    git, web = settings.servers
    assert git.command == "uvx" and not settings.builtins
    assert web.url == "https://example.invalid/mcp" and web.timeout_seconds == 30.0


def test_variables_are_expanded_and_every_expanded_value_is_a_secret() -> None:
    spec = parse_one(
        "git",
        {
            "command": "uvx",
            "args": ["--token=${TOKEN}", "${MISSING:-fallback}"],
            "env": {"GIT_AUTHOR_NAME": "${AUTHOR}", "PLAIN": "literal-value"},
        },
        "[servers.git] in x.toml",
        ENV,
    )
    assert spec.args == ("--token=tok-123456", "fallback")
    assert spec.env == {"GIT_AUTHOR_NAME": "Ada Lovelace", "PLAIN": "literal-value"}
    assert {"tok-123456", "Ada Lovelace", "literal-value", "fallback"} <= spec.secrets
    leaked = "failed with --token=tok-123456 for Ada Lovelace"
    assert spec.redact(leaked) == "failed with --token=*** for ***"
    shown = json.dumps(spec.public())
    assert "tok-123456" not in shown and "Ada Lovelace" not in shown and "literal-value" not in shown
    assert "--token=${TOKEN}" in shown and "GIT_AUTHOR_NAME" in shown
    assert not spec.problem


def test_header_values_are_secrets_and_never_shown() -> None:
    spec = parse_one(
        "docs", {"url": "https://x.invalid/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}, "w", ENV
    )
    assert spec.headers == {"Authorization": "Bearer tok-123456"}
    assert "Bearer tok-123456" in spec.secrets
    assert spec.public()["headers"] == ["Authorization"]
    assert "tok-123456" not in json.dumps(spec.public())


def test_an_unset_variable_fails_that_server_alone_with_its_name() -> None:
    spec = parse_one("git", {"command": "uvx", "env": {"A": "${NOT_SET_ANYWHERE}"}}, "w", ENV)
    assert spec.problem == "${NOT_SET_ANYWHERE} is not set in awf-mcp's environment"


@pytest.mark.parametrize(
    ("name", "table", "expected"),
    [
        ("git_x", {"command": "a"}, "server name 'git_x' in w is invalid"),
        ("git", {"command": "a", "url": "http://x"}, "needs exactly one of command"),
        ("git", {}, "needs exactly one of command"),
        ("git", {"command": "a", "colour": "red"}, "unknown key 'colour' in w"),
        ("git", {"command": "a", "type": "sse"}, "has type 'sse' but no url"),
        ("git", {"url": "http://x", "type": "websocket"}, "use stdio, http or sse"),
        ("git", {"url": "http://x", "auth": "basic"}, 'auth in w must be "oauth"'),
        ("git", {"command": "a", "auth": "oauth"}, "apply to a url server only"),
        ("git", {"url": "http://x", "client_id": "c"}, 'need auth = "oauth"'),
        ("git", {"command": "a", "args": "one"}, "args in w must be a list of strings"),
        ("git", {"command": "a", "env": {"A": 1}}, "env in w must map names to strings"),
        ("git", {"command": "a", "timeout_seconds": 0}, "timeout_seconds in w must be a positive number"),
        ("git", {"command": "a", "enabled": "yes"}, "enabled in w must be true or false"),
        ("git", "uvx", "w must be a table"),
    ],
)
def test_bad_server_tables_get_one_sentence_naming_them(name: str, table: object, expected: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        parse_one(name, table, "w", ENV)
    assert expected in str(caught.value)


def test_a_server_defined_in_both_tables_is_refused() -> None:
    data = {"servers": {"git": {"command": "a"}}, "mcpServers": {"git": {"command": "b"}}}
    with pytest.raises(ConfigError, match="defined twice"):
        parse(data, "x.toml", ENV)


def test_builtins_off_with_only_servers_is_not_an_empty_proxy(tmp_path: Path) -> None:
    write_approved(
        tmp_path / "p.json",
        json.dumps({"intercept_builtins": False, "mcpServers": {"t": {"command": "uvx"}}}),
    )
    assert load(ServeOptions(config=str(tmp_path / "p.json")), cwd=str(tmp_path)).servers[0].name == "t"


def test_sse_and_oauth_servers_are_read_with_their_transport_and_sign_in() -> None:
    specs = parse(
        {
            "servers": {"old": {"type": "sse", "url": "http://x/sse"}},
            "mcpServers": {"gh": {"type": "http", "url": "http://y/mcp", "auth": "oauth", "client_id": "c1"}},
        },
        "w",
        {},
    )
    old, gh = sorted(specs, key=lambda spec: spec.name, reverse=True)
    assert (old.transport, old.auth) == ("sse", "") and old.public()["transport"] == "sse"
    assert (gh.transport, gh.auth, gh.client_id) == ("http", "oauth", "c1") and gh.public()["auth"] == "oauth"
