"""The sandbox follows the client's roots, on both protocol families, through the SDK's own client.

A real ``awf-mcp serve`` subprocess; the SDK client declares roots with its
``list_roots_callback``. Handshake revisions get ``roots/list`` on the back-channel;
the stateless revision (``stateless=True``: ``server/discover``, as Claude Code speaks)
gets it inside an ``input_required`` result that the client answers by retrying.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types import ListRootsResult, Root

from tests.e2e.test_http import TOKEN, http_server  # noqa: F401  (a fixture)
from tests.helpers.harness import call_answering, mcp_session, text_of

pytestmark = pytest.mark.timeout(120)


class Roots:
    """A client's roots, changeable mid-session, counting how often the server asked."""

    def __init__(self, *directories: Path | str) -> None:
        self.uris = [d if isinstance(d, str) else d.as_uri() for d in directories]
        self.asked = 0

    async def __call__(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked += 1
        return ListRootsResult(roots=[Root(uri=uri) for uri in self.uris])  # type: ignore[arg-type]


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    places = {name: tmp_path / name for name in ("cwd", "project", "other", "outside", "top")}
    for name, place in places.items():
        place.mkdir()
        (place / "note.txt").write_text(f"in {name}\n", encoding="utf-8")
    (places["top"] / "inner").mkdir()
    (places["top"] / "inner" / "note.txt").write_text("in top/inner\n", encoding="utf-8")
    return places


async def read(session: Any, path: Path | str) -> tuple[bool, str]:
    result = await call_answering(session, "Read", {"path": str(path)})
    return result.is_error, text_of(result)


@pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "stateless"])
def test_client_roots_replace_the_working_directory_default(tree: dict[str, Path], stateless: bool) -> None:
    roots = Roots(tree["project"], tree["other"])

    async def scenario() -> None:
        async with mcp_session(cwd=tree["cwd"], stateless=stateless, list_roots_callback=roots) as session:
            assert await read(session, tree["other"] / "note.txt") == (False, "in other\n")
            # Relative paths start at the client's first root, not at the working directory.
            assert await read(session, "note.txt") == (False, "in project\n")
            refused, text = await read(session, tree["cwd"] / "note.txt")
            assert refused and "outside" in text, text
            refused, text = await read(session, tree["outside"] / "note.txt")
            assert refused and "outside" in text and "in outside" not in text, text

    anyio.run(scenario)
    # Kept per session: asked once, then once more for each path that fell outside (two).
    assert roots.asked == 3


@pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "stateless"])
def test_explicit_roots_are_the_ceiling(tree: dict[str, Path], stateless: bool) -> None:
    roots = Roots(tree["top"] / "inner", tree["other"])

    async def scenario() -> None:
        async with mcp_session(
            "--root", str(tree["top"]), cwd=tree["cwd"], stateless=stateless, list_roots_callback=roots
        ) as session:
            assert await read(session, "note.txt") == (False, "in top/inner\n")
            refused, text = await read(session, tree["other"] / "note.txt")
            assert refused and "outside" in text and "in other" not in text, text
            # The client narrowed the explicit root to top/inner.
            refused, text = await read(session, tree["top"] / "note.txt")
            assert refused and "outside" in text, text

    errors = anyio.Path(tree["cwd"] / "stderr.txt")
    with open(tree["cwd"] / "stderr.txt", "w", encoding="utf-8") as errlog:

        async def logged() -> None:
            async with mcp_session(
                "--root",
                str(tree["top"]),
                cwd=tree["cwd"],
                stateless=stateless,
                list_roots_callback=roots,
                errlog=errlog,
            ) as session:
                await read(session, "note.txt")

        anyio.run(scenario)
        anyio.run(logged)
    log = anyio.run(errors.read_text)
    assert f"client root {tree['other']} refused: it is outside the configured roots" in log, log


@pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "stateless"])
def test_a_root_added_mid_session_is_found(tree: dict[str, Path], stateless: bool) -> None:
    roots = Roots(tree["project"])

    async def scenario() -> None:
        async with mcp_session(cwd=tree["cwd"], stateless=stateless, list_roots_callback=roots) as session:
            refused, _ = await read(session, tree["other"] / "note.txt")
            assert refused
            roots.uris.append(tree["other"].as_uri())  # `/add-dir`, without a notification
            assert await read(session, tree["other"] / "note.txt") == (False, "in other\n")

    anyio.run(scenario)


@pytest.mark.filterwarnings("ignore:The roots capability is deprecated")  # still what older clients send
def test_roots_list_changed_refreshes_the_roots(tree: dict[str, Path]) -> None:
    roots = Roots(tree["project"])

    async def scenario() -> None:
        async with mcp_session(cwd=tree["cwd"], list_roots_callback=roots) as session:
            assert await read(session, "note.txt") == (False, "in project\n")
            roots.uris = [tree["other"].as_uri()]
            await session.send_roots_list_changed()
            for _ in range(100):  # the notification has no reply: wait until it took effect
                if await read(session, "note.txt") == (False, "in other\n"):
                    break
                await anyio.sleep(0.05)
            assert await read(session, "note.txt") == (False, "in other\n")

    anyio.run(scenario)


@pytest.mark.parametrize("stateless", [False, True], ids=["handshake", "stateless"])
def test_unusable_client_roots_leave_the_default(tree: dict[str, Path], stateless: bool) -> None:
    roots = Roots(
        "file://otherhost/repo", (tree["cwd"] / "missing").as_uri(), (tree["cwd"] / "note.txt").as_uri()
    )

    async def scenario() -> None:
        async with mcp_session(cwd=tree["cwd"], stateless=stateless, list_roots_callback=roots) as session:
            assert await read(session, "note.txt") == (False, "in cwd\n")

    anyio.run(scenario)


def test_a_client_without_roots_keeps_the_configured_roots(tree: dict[str, Path]) -> None:
    async def scenario() -> None:
        async with mcp_session(cwd=tree["cwd"], stateless=True) as session:
            assert await read(session, "note.txt") == (False, "in cwd\n")
            refused, _ = await read(session, tree["other"] / "note.txt")
            assert refused

    anyio.run(scenario)


def test_roots_are_per_session_over_http(http_server: tuple[str, Any], root: Path) -> None:  # noqa: F811
    """Two HTTP sessions of one server, each with its own roots under the explicit --root."""
    url, _ = http_server
    for name in ("a", "b"):
        (root / name).mkdir()
        (root / name / "note.txt").write_text(f"in {name}\n", encoding="utf-8")

    async def session_with(name: str) -> tuple[tuple[bool, str], bool]:
        client = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with (
            client,
            streamable_http_client(url, http_client=client) as (read_stream, write_stream),
            ClientSession(read_stream, write_stream, list_roots_callback=Roots(root / name)) as session,
        ):
            await session.initialize()
            own = await read(session, "note.txt")
            other = "b" if name == "a" else "a"
            refused, _ = await read(session, root / other / "note.txt")
            return own, refused

    async def scenario() -> None:
        # One after the other: the second session must not get the first one's kept roots.
        assert await session_with("a") == ((False, "in a\n"), True)
        assert await session_with("b") == ((False, "in b\n"), True)

    anyio.run(scenario)
