"""Which of a client's roots the sandbox follows (``awf_mcp.core.roots``)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import pytest

from awf_mcp.core.roots import MAX_ROOTS, ClientRoots, accepted_roots, root_path
from awf_mcp.ports import ClientCannotAnswer, ClientFeature


class Client:
    """A channel with roots: answers ``roots/list`` with ``uris`` (or fails), counting the questions."""

    def __init__(self, *uris: str, fails: bool = False, roots: bool = True) -> None:
        self.uris = list(uris)
        self.fails = fails
        self.roots = roots
        self.asked = 0

    def supports(self, feature: ClientFeature) -> bool:
        return self.roots and feature == "roots"

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        assert method == "roots/list"
        self.asked += 1
        if self.fails:
            raise ClientCannotAnswer("the client answered roots/list with an error: nope")
        return {"roots": [{"uri": uri} for uri in self.uris]}


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    made = {name: tmp_path / name for name in ("top", "other")}
    for path in made.values():
        path.mkdir()
    (made["top"] / "inner").mkdir()
    (made["top"] / "link").symlink_to(made["other"])
    return made


def test_only_local_file_directories_are_roots(dirs: dict[str, Path], caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    assert root_path(dirs["top"].as_uri()) == str(dirs["top"].resolve())
    assert root_path((dirs["top"] / "link").as_uri()) == str(dirs["other"].resolve())
    assert root_path("file://localhost" + str(dirs["top"])) == str(dirs["top"].resolve())
    for uri in ("https://example.invalid/x", "file://elsewhere/tmp", (dirs["top"] / "none").as_uri(), 42):
        assert root_path(uri) is None
    assert root_path("file:///tmp/a%00b") is None
    assert "only file:// URIs" in caplog.text and "is not a directory" in caplog.text


def test_explicit_roots_are_a_ceiling(dirs: dict[str, Path], caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    result = {"roots": [{"uri": (dirs["top"] / "inner").as_uri()}, {"uri": dirs["other"].as_uri()}]}
    inner = str((dirs["top"] / "inner").resolve())
    assert accepted_roots(result, [str(dirs["top"])], explicit=True) == (inner,)
    assert "refused: it is outside the configured roots" in caplog.text
    # A link inside the ceiling to a directory outside it is judged where it leads.
    linked = {"roots": [{"uri": (dirs["top"] / "link").as_uri()}]}
    assert accepted_roots(linked, [str(dirs["top"])], explicit=True) == ()
    # Without explicit roots, the client's replace the default.
    assert accepted_roots(result, [str(dirs["top"])], explicit=False) == (inner, str(dirs["other"].resolve()))


def test_malformed_results_give_no_roots(dirs: dict[str, Path]) -> None:
    assert accepted_roots({"roots": "x"}, [], explicit=False) == ()
    assert accepted_roots({"roots": [7, {"uri": None}]}, [], explicit=False) == ()
    many = {"roots": [{"uri": dirs["top"].as_uri()}] * (MAX_ROOTS + 10)}
    assert accepted_roots(many, [], explicit=False) == (str(dirs["top"].resolve()),)


def test_roots_are_kept_per_session_until_forgotten(dirs: dict[str, Path]) -> None:
    roots = ClientRoots([str(dirs["top"])], explicit=False)
    client = Client(dirs["other"].as_uri())

    async def scenario() -> None:
        other = (str(dirs["other"].resolve()),)
        assert await roots.for_call(client, "s1") == (other, True)
        assert await roots.for_call(client, "s1") == (other, False)
        assert client.asked == 1
        await roots.for_call(client, "s2")
        assert client.asked == 2
        roots.forget("s1")
        assert await roots.for_call(client, "s1") == (other, True)
        assert client.asked == 3
        # Without a session nothing is kept.
        await roots.for_call(client, None)
        await roots.for_call(client, None)
        assert client.asked == 5

    anyio.run(scenario)


def test_no_usable_root_means_the_configured_ones(dirs: dict[str, Path]) -> None:
    roots = ClientRoots([str(dirs["top"])], explicit=False)

    async def scenario() -> None:
        assert await roots.for_call(Client(roots=False), "s") == (None, True)
        assert await roots.for_call(Client(fails=True), "s") == (None, True)
        assert await roots.for_call(Client("https://x.invalid/"), "t") == (None, True)

    anyio.run(scenario)


class Silent(Client):
    """A client that declares roots and never answers."""

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        self.asked += 1
        await anyio.sleep_forever()
        raise AssertionError


def test_a_client_that_never_answers_leaves_the_configured_roots(dirs: dict[str, Path], caplog: Any) -> None:
    caplog.set_level(logging.WARNING)
    roots = ClientRoots([str(dirs["top"])], explicit=False, answer_timeout=0.2)
    client = Silent()

    async def scenario() -> None:
        with anyio.fail_after(5):
            assert await roots.for_call(client, "s") == (None, True)
            # Not asked again for that session until it says its roots changed.
            assert await roots.for_call(client, "s") == (None, False)
        assert client.asked == 1

    anyio.run(scenario)
    assert "did not answer roots/list within 0.2 s" in caplog.text
