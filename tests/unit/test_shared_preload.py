"""The shared server imports what its sessions use before it forks them.

A module a session imports after the fork is that session's own memory, paid again by every
session; imported by the server first, its pages are shared. A real ``serve`` (every file
tool, Bash and a stdio upstream's tool, over a real pipe) runs in a process that did
:func:`~awf_mcp.cli.warmup.preload` and :func:`~awf_mcp.cli.warmup.preload_later` first, as the shared
server does, and reports what it
imported after. Nothing outside the standard library may be among them: not awf-mcp's own
modules, not the SDK's, not their dependencies'.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.harness import server_env

UPSTREAM = Path(__file__).resolve().parents[1] / "upstreams" / "fake_upstream.py"

SESSION = """
import json, os, sys
from awf_mcp.cli import shared, warmup  # the server's own modules, as it runs
warmup.preload()
warmup.preload_later()
before = set(sys.modules)

def report():
    with open(sys.argv[-1] + ".imported", "w") as imported:
        json.dump(sorted(set(sys.modules) - before), imported)

exit_now = os._exit
def report_then_exit(code):  # serve ends so when a worker thread lingers
    report()
    exit_now(code)

os._exit = report_then_exit
from awf_mcp.cli.main import dispatch
try:
    dispatch(["serve", "--no-shared", *sys.argv[1:]])
finally:
    report()
"""


def test_every_module_the_server_preloads_imports() -> None:
    from awf_mcp.cli.warmup import PRELOADED, PRELOADED_LATER

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib, sys; [importlib.import_module(m) for m in sys.argv[1:]]",
            *PRELOADED,
            *PRELOADED_LATER,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]  # a misspelt name would be skipped in silence


@pytest.mark.timeout(120)
def test_a_session_imports_nothing_outside_the_standard_library_after_the_fork(tmp_path: Path) -> None:
    project = tmp_path / "project"  # the config is the user's, outside the project
    project.mkdir()
    (project / "notes.txt").write_text("hello\n")
    config = tmp_path / "upstreams.toml"
    config.write_text(f'[servers.up]\ncommand = "{sys.executable}"\nargs = ["{UPSTREAM}", "good"]\n')
    messages = [
        {
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "claude-code", "version": "1"},
            },
        },
        {"method": "notifications/initialized"},
        {"id": 2, "method": "tools/list"},
        {"id": 3, "method": "tools/call", "params": {"name": "Read", "arguments": {"path": "notes.txt"}}},
        {"id": 4, "method": "tools/call", "params": {"name": "Bash", "arguments": {"command": "echo hi"}}},
        {"id": 5, "method": "tools/call", "params": {"name": "up_wait", "arguments": {"seconds": 0}}},
        {
            "id": 6,
            "method": "tools/call",
            "params": {"name": "Write", "arguments": {"path": "new.txt", "content": "a"}},
        },
        {
            "id": 7,
            "method": "tools/call",
            "params": {"name": "Edit", "arguments": {"path": "new.txt", "old": "a", "new": "b"}},
        },
        {"id": 8, "method": "tools/call", "params": {"name": "Glob", "arguments": {"pattern": "*.txt"}}},
        {"id": 9, "method": "tools/call", "params": {"name": "Grep", "arguments": {"pattern": "hel+o"}}},
    ]
    session = subprocess.Popen(
        [sys.executable, "-c", SESSION, "--root", str(project), "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=project,
        env=server_env({"AWF_MCP_NO_PLUGINS": "1"}),
    )
    assert session.stdin is not None and session.stdout is not None
    answers = {}
    for message in messages:
        session.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        session.stdin.flush()
        while "id" in message and message["id"] not in answers:
            line = session.stdout.readline()
            assert line, session.stderr.read().decode() if session.stderr else "no output"
            answer = json.loads(line)
            answers[answer.get("id")] = answer
    session.stdin.close()
    session.wait(timeout=60)
    names = [tool["name"] for tool in answers[2]["result"]["tools"]]
    for request in range(3, 10):
        assert not answers[request].get("result", {"isError": True}).get("isError"), (answers[request], names)
    report = Path(str(config) + ".imported")
    assert report.exists(), "the session ended without reporting its imports"
    imported = json.loads(report.read_text())
    outside = [name for name in imported if name.split(".")[0] not in sys.stdlib_module_names]
    assert not outside, f"imported by the session, not by the server before the fork: {outside}"
