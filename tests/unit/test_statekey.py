"""The shared request_state key: its file and variables, bounds, permissions, rotation."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import pytest
from mcp.server.request_state import AESGCMRequestStateCodec, InvalidRequestState

from awf_mcp.errors import UserError
from awf_mcp.state.statekey import ENV_KEY, ENV_PREVIOUS, MAX_FILE_BYTES, MAX_KEYS, state_keys


def key_file(tmp_path: Path, text: str | bytes, mode: int = 0o600) -> str:
    path = tmp_path / "state.key"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    path.chmod(mode)
    return str(path)


def test_no_key_configured_means_a_key_of_this_process() -> None:
    assert state_keys(None, {}) is None
    assert state_keys(None, {ENV_KEY: "  "}) is None


def test_the_file_first_key_seals_and_every_key_opens(tmp_path: Path) -> None:
    new, old = secrets.token_hex(32), secrets.token_hex(48)
    path = key_file(tmp_path, f"# rotated today\n{new}\n\n  {old.upper()}  \r\n")
    found = state_keys(path, {ENV_KEY: secrets.token_hex(32)})  # the file wins over the variable
    assert found is not None
    assert found.keys == (bytes.fromhex(new), bytes.fromhex(old))
    assert found.describe() == f"the shared key from {path} (1 older key still accepted)"
    # What the old ring sealed, the rotated ring still opens; what the rotated ring seals, only it opens.
    old_ring = AESGCMRequestStateCodec([bytes.fromhex(old)])
    rotated = AESGCMRequestStateCodec(list(found.keys))
    assert rotated.unseal(old_ring.seal(b"asked")) == b"asked"
    with pytest.raises(InvalidRequestState):
        old_ring.unseal(rotated.seal(b"asked"))


def test_the_variables_seal_and_open(tmp_path: Path) -> None:
    new, old, older = (secrets.token_hex(32) for _ in range(3))
    found = state_keys(None, {ENV_KEY: new, ENV_PREVIOUS: f" {old},{older} "})
    assert found is not None and found.keys == tuple(bytes.fromhex(k) for k in (new, old, older))
    assert "older keys still accepted" in found.describe() and new not in found.describe()
    only = state_keys(None, {ENV_KEY: new})
    assert only is not None and only.describe() == f"the shared key from {ENV_KEY}"


def test_a_previous_key_without_a_sealing_key_is_refused() -> None:
    with pytest.raises(UserError, match=f"{ENV_PREVIOUS} is set but {ENV_KEY} is not"):
        state_keys(None, {ENV_PREVIOUS: secrets.token_hex(32)})


@pytest.mark.parametrize(
    "bad",
    [
        "00" * 31,  # 31 bytes: too short for the SDK's codec
        "00" * 129,  # longer than the bound
        "0" * 65,  # odd: not whole bytes
        "g" * 64,  # not hexadecimal
        "ab" * 16 + "ü" * 32,  # not ASCII
        secrets.token_urlsafe(48),  # base64url, not hex
    ],
    ids=["short", "long", "odd", "nonhex", "nonascii", "base64"],
)
def test_a_malformed_key_is_one_sentence_that_never_shows_it(tmp_path: Path, bad: str) -> None:
    with pytest.raises(UserError) as in_file:
        state_keys(key_file(tmp_path, f"{secrets.token_hex(32)}\n{bad}\n"), {})
    with pytest.raises(UserError) as in_env:
        state_keys(None, {ENV_KEY: bad})
    for caught in (in_file, in_env):
        message = str(caught.value)
        assert bad not in message and bad[:16] not in message, message
        assert "openssl rand -hex 32" in message, message
    assert ("line 2" if bad.isascii() else "not text") in str(in_file.value)
    assert ENV_KEY in str(in_env.value)


def test_a_repeated_key_and_too_many_keys_are_refused(tmp_path: Path) -> None:
    key = secrets.token_hex(32)
    with pytest.raises(UserError, match="line 2 repeats an earlier one"):
        state_keys(key_file(tmp_path, f"{key}\n{key.upper()}\n"), {})
    many = "\n".join(secrets.token_hex(32) for _ in range(MAX_KEYS + 1))
    with pytest.raises(UserError, match=f"more than {MAX_KEYS}"):
        state_keys(key_file(tmp_path, many), {})
    with pytest.raises(UserError, match="holds no key"):
        state_keys(key_file(tmp_path, "# nothing yet\n\n"), {})


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620, 0o644, 0o660])
def test_a_key_file_others_may_use_is_refused(tmp_path: Path, mode: int) -> None:
    path = key_file(tmp_path, secrets.token_hex(32), mode)
    with pytest.raises(UserError, match=rf"open to other users \(mode {mode:04o}\): chmod 600 "):
        state_keys(path, {})
    os.chmod(path, 0o400)
    assert state_keys(path, {}) is not None


def test_a_key_file_must_be_a_small_regular_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="larger than"):
        state_keys(key_file(tmp_path, "#" * MAX_FILE_BYTES + "\n" + secrets.token_hex(32)), {})
    with pytest.raises(UserError, match=r"cannot read state key file .*: No such file"):
        state_keys(str(tmp_path / "missing"), {})
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(UserError, match="is not a regular file"):
        state_keys(str(fifo), {})  # opened without blocking on the writer that never comes
    directory = tmp_path / "dir"
    directory.mkdir(mode=0o700)
    with pytest.raises(UserError, match="is not a regular file"):
        state_keys(str(directory), {})


def test_a_symlink_to_a_private_key_file_is_followed(tmp_path: Path) -> None:
    """Orchestrators mount secrets as links into a directory they swap: the file pointed at counts."""
    key = secrets.token_hex(32)
    target = key_file(tmp_path, key)
    link = tmp_path / "mounted.key"
    link.symlink_to(target)
    found = state_keys(str(link), {})
    assert found is not None and found.keys == (bytes.fromhex(key),)
    os.chmod(target, 0o644)
    with pytest.raises(UserError, match="open to other users"):
        state_keys(str(link), {})
