"""The HTTP token awf-mcp keeps when the user gave none: made once, kept private, remade when spoiled."""

from __future__ import annotations

import json
from pathlib import Path

from awf_mcp.state.httptoken import kept_token


def test_a_token_is_made_once_and_kept_readable_by_the_user_only(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    token, path = kept_token(env)
    assert len(token) >= 32 and path == tmp_path / "awf-mcp" / "http.json"
    assert json.loads(path.read_text()) == {"token": token}
    assert path.stat().st_mode & 0o077 == 0 and path.parent.stat().st_mode & 0o077 == 0
    assert kept_token(env) == (token, path)


def test_a_record_without_a_well_formed_token_gets_a_new_one(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path)}
    path = tmp_path / "awf-mcp" / "http.json"
    path.parent.mkdir(mode=0o700)
    for spoiled in ({"token": "short"}, {"token": "x y" * 20}, {"token": 12}, {}):
        path.write_text(json.dumps(spoiled))
        token, _ = kept_token(env)
        assert token != spoiled.get("token") and len(token) >= 32


def test_a_state_directory_that_cannot_be_written_gives_a_token_for_this_run(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    token, path = kept_token({"XDG_STATE_HOME": str(blocker)})
    assert path is None and len(token) >= 32
    assert kept_token({"XDG_STATE_HOME": str(blocker)})[0] != token
