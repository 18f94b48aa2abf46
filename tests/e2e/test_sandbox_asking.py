"""A host outside the sandbox's network list, put to the user through elicitation, end to end.

``awf-mcp serve`` with the default ``[sandbox]`` (network off for Bash) and a real SDK client
that answers ``elicitation/create``: a Bash ``curl`` to a loopback HTTP server (the host not in
the list) asks the user, and the answer decides. ``once`` lets that connection through and
asks again next time; ``session`` stops the asking for the session; ``always`` also writes the
host into the user's own config file, comments kept; a decline refuses it with the sandbox's
note. The controls: the same command from a client that cannot answer elicitations is refused
unasked (the network stays off), and the stateless revision asks nothing.
"""

from __future__ import annotations

import http.server
import shutil
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.context import ClientRequestContext
from mcp_types import ElicitRequestParams, ElicitResult

from tests.helpers.harness import mcp_session, text_of

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("curl") is None, reason="the test's command is curl"),
]

PAGE = b"hello from the listed host\n"
SEEN = PAGE.decode().strip()


class User:
    """The person behind the client: answers each question with the next of ``answers``."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    async def __call__(self, context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        self.asked.append(params.message)
        answer = self.answers.pop(0) if self.answers else "decline"
        if answer == "decline":
            return ElicitResult(action="decline")
        return ElicitResult(action="accept", content={"allow": answer})


@pytest.fixture
def page() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAGE)))
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def fetch(port: int) -> str:
    return f"curl -fsS --max-time 20 http://127.0.0.1:{port}/"


def run(
    tmp_path: Path, port: int, user: User | None, calls: int = 2, **options: Any
) -> list[tuple[bool, str]]:
    config = tmp_path / "config" / "awf-mcp.toml"
    if not config.exists():
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text('# my settings\n[sandbox]\nmode = "contained"  # the default\n')
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    results: list[tuple[bool, str]] = []

    async def drive() -> None:
        callbacks = {"elicitation_callback": user} if user is not None else {}
        async with mcp_session(
            "--root", str(root), "--config", str(config), cwd=root, **callbacks, **options
        ) as session:
            for _ in range(calls):
                result = await session.call_tool("Bash", {"command": fetch(port)})
                results.append((bool(result.is_error), text_of(result)))

    anyio.run(drive)
    return results


def test_once_lets_one_connection_through_and_asks_again(tmp_path: Path, page: int) -> None:
    user = User("once", "decline")
    first, second = run(tmp_path, page, user)
    assert not first[0] and SEEN in first[1], first
    assert len(user.asked) == 2 and f"127.0.0.1:{page}" in user.asked[0], user.asked
    assert second[0] and "the sandbox refused a connection to 127.0.0.1" in second[1], second


def test_session_stops_the_asking_for_the_session(tmp_path: Path, page: int) -> None:
    user = User("session")
    results = run(tmp_path, page, user, calls=3)
    assert all(not refused and SEEN in text for refused, text in results), results
    assert len(user.asked) == 1, user.asked


def test_always_writes_the_host_into_the_users_config_keeping_its_comments(tmp_path: Path, page: int) -> None:
    user = User("always")
    results = run(tmp_path, page, user)
    assert all(not refused for refused, _text in results), results
    assert len(user.asked) == 1
    text = (tmp_path / "config" / "awf-mcp.toml").read_text()
    assert tomllib.loads(text)["sandbox"]["network"] == ["127.0.0.1"], text
    assert "# my settings" in text and "# the default" in text, text
    later = User()
    (again,) = run(tmp_path, page, later, calls=1)  # a new session: the config allows it
    assert not again[0] and SEEN in again[1] and not later.asked, again


def test_a_declined_host_is_refused_with_the_note(tmp_path: Path, page: int) -> None:
    user = User("decline")
    (result,) = run(tmp_path, page, user, calls=1)
    assert result[0] and "[awf-mcp: the sandbox refused a connection to 127.0.0.1" in result[1], result
    assert len(user.asked) == 1


def test_without_elicitation_nothing_is_asked_and_the_network_stays_off(tmp_path: Path, page: int) -> None:
    (result,) = run(tmp_path, page, None, calls=1)
    assert result[0] and SEEN not in result[1], result
    assert "the sandbox refused network access" in result[1], result


def test_the_stateless_revision_asks_nothing(tmp_path: Path, page: int) -> None:
    user = User("session")
    (result,) = run(tmp_path, page, user, calls=1, stateless=True)
    assert result[0] and SEEN not in result[1] and not user.asked, result


@pytest.mark.parametrize("mode", ["contained", "off"])
def test_a_connection_around_the_proxy_is_refused_unasked(tmp_path: Path, page: int, mode: str) -> None:
    """With asking on, the sandbox has a route to the proxy only: a direct connection (the proxy
    variables ignored) fails, and nobody is asked. The control: ``mode = "off"`` connects."""
    config = tmp_path / "config" / "awf-mcp.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[sandbox]\nmode = "{mode}"\n')
    user = User("session", "session")
    root = tmp_path / "project"
    root.mkdir()
    said: list[tuple[bool, str]] = []

    async def drive() -> None:
        async with mcp_session(
            "--root", str(root), "--config", str(config), cwd=root, elicitation_callback=user
        ) as session:
            result = await session.call_tool(
                "Bash", {"command": f"curl --noproxy '*' -fsS http://127.0.0.1:{page}/"}
            )
            said.append((bool(result.is_error), text_of(result)))

    anyio.run(drive)
    ((refused, text),) = said
    if mode == "contained":
        assert refused and SEEN not in text and not user.asked, text
    else:
        assert not refused and SEEN in text, text
