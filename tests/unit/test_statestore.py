"""The state directory: a record per name, updated under a lock, never through a link."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from awf_mcp.errors import UserError
from awf_mcp.state import statestore


def test_the_state_directory_follows_xdg_state_home_and_defaults_under_home(tmp_path: Path) -> None:
    assert statestore.state_dir({"XDG_STATE_HOME": str(tmp_path)}) == tmp_path / "awf-mcp"
    assert statestore.state_dir({}, home=tmp_path) == tmp_path / ".local" / "state" / "awf-mcp"
    # A relative XDG_STATE_HOME would put the user's state in whatever directory awf-mcp runs in.
    assert statestore.state_dir({"XDG_STATE_HOME": "state"}, home=tmp_path) == (
        tmp_path / ".local" / "state" / "awf-mcp"
    )


def test_a_record_round_trips_and_is_private(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    assert statestore.load("approvals", env) == {}
    with statestore.updating("approvals", env) as record:
        record["a"] = 1
    assert statestore.load("approvals", env) == {"a": 1}
    path = tmp_path / "awf-mcp" / "approvals.json"
    assert path.stat().st_mode & 0o077 == 0
    assert (tmp_path / "awf-mcp").stat().st_mode & 0o077 == 0


def test_concurrent_updates_are_not_lost(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}

    def bump() -> None:
        for _ in range(50):
            with statestore.updating("counter", env) as record:
                record["n"] = record.get("n", 0) + 1

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statestore.load("counter", env) == {"n": 200}


def test_a_record_that_is_a_symlink_is_not_read(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"x": 1}))
    (tmp_path / "awf-mcp").mkdir()
    os.symlink(secret, tmp_path / "awf-mcp" / "pins.json")
    with pytest.raises(UserError, match=r"cannot read"):
        statestore.load("pins", env)


def test_garbage_reads_as_an_error_not_as_a_crash(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    (tmp_path / "awf-mcp").mkdir()
    (tmp_path / "awf-mcp" / "pins.json").write_bytes(b"\xff{")
    with pytest.raises(UserError, match="not valid JSON"):
        statestore.load("pins", env)
