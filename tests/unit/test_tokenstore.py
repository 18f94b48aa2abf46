"""Where OAuth sign-ins are kept: a 0600 record in the state directory, or the OS keyring."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from awf_mcp.errors import UserError
from awf_mcp.state import tokenstore


def test_an_entry_is_written_to_a_private_file_and_forgotten() -> None:
    key = tokenstore.entry_key("gh", "https://x.invalid/mcp")
    with tokenstore.updating(key) as entry:
        entry["tokens"] = {"access_token": "at-1"}
    path = tokenstore.record_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert tokenstore.load(key) == {"tokens": {"access_token": "at-1"}}
    assert tokenstore.location() == str(path)
    assert tokenstore.forget(key) and not tokenstore.forget(key)
    assert json.loads(path.read_text()) == {}


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_token_file_other_users_can_reach_is_refused(mode: int) -> None:
    key = tokenstore.entry_key("gh", "https://x.invalid/mcp")
    with tokenstore.updating(key) as entry:
        entry["tokens"] = {"access_token": "at-1"}
    os.chmod(tokenstore.record_path(), mode)
    with pytest.raises(
        UserError, match=f"can be read or written by other users \\(mode {mode:o}\\)"
    ) as caught:
        tokenstore.load(key)
    assert "at-1" not in caught.value.message
    with pytest.raises(UserError):
        tokenstore.forget(key)


def test_a_token_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    tokenstore.record_path().parent.mkdir(parents=True, exist_ok=True)
    tokenstore.record_path().symlink_to(elsewhere)
    with pytest.raises(UserError, match="is not a regular file"):
        tokenstore.load("k")


class MemoryKeyring:
    """A keyring backend's three calls, in memory (the ``keyring`` module's shape)."""

    def __init__(self) -> None:
        self.passwords: dict[tuple[str, str], str] = {}

    def get_keyring(self) -> object:
        return self

    def get_password(self, service: str, user: str) -> str | None:
        return self.passwords.get((service, user))

    def set_password(self, service: str, user: str, password: str) -> None:
        self.passwords[(service, user)] = password

    def delete_password(self, service: str, user: str) -> None:
        del self.passwords[(service, user)]


def test_where_a_keyring_answers_entries_go_there_and_not_to_the_file(monkeypatch: Any) -> None:
    keyring = MemoryKeyring()
    monkeypatch.delenv("AWF_MCP_TOKEN_STORE", raising=False)
    monkeypatch.setattr(tokenstore, "_usable", [keyring])
    key = tokenstore.entry_key("gh", "https://x.invalid/mcp")
    with tokenstore.updating(key) as entry:
        entry["tokens"] = {"access_token": "at-1"}
    assert json.loads(keyring.passwords[(tokenstore.KEYRING_SERVICE, key)]) == {
        "tokens": {"access_token": "at-1"}
    }
    assert tokenstore.load(key)["tokens"] == {"access_token": "at-1"}
    assert not tokenstore.record_path().exists()
    assert tokenstore.location().startswith("the OS keyring")
    assert tokenstore.forget(key) and not keyring.passwords
    monkeypatch.setenv("AWF_MCP_TOKEN_STORE", "file")
    assert tokenstore.location() == str(tokenstore.record_path())
