"""The shared key that seals the stateless revision's ``request_state``: read, checked, never shown.

Contract
--------
A call on the stateless revision (2026-07-28) that asks its client something is answered with
an ``input_required`` result whose ``request_state`` the SDK seals (AES-256-GCM, keys derived
with HKDF, :class:`mcp.server.request_state.RequestStateSecurity`); the client's retry carries
it back. Replicas behind a load balancer must share the key, so that any one of them can
finish a call another began. :func:`state_keys` returns the configured keys, the sealing key
first and then the older keys that still open (rotation), or ``()`` when none is configured
(each process then makes its own key at start-up, as a single server does).

Where the keys come from (the first that is set):

* ``--state-key-file FILE``: one key per line, the first line seals and every line opens;
  blank lines and lines starting with ``#`` are skipped. FILE must be a regular file (a
  symbolic link to one is followed: orchestrators mount secrets that way) of at most
  :data:`MAX_FILE_BYTES`, and nobody but its owner may have any permission on it
  (``chmod 600``).
* ``AWF_MCP_STATE_KEY`` seals (and opens); ``AWF_MCP_STATE_KEY_PREVIOUS`` holds older keys,
  separated by commas or white space, that still open.

A key is :data:`MIN_KEY_HEX` to :data:`MAX_KEY_HEX` hexadecimal characters, that is 32 to 128
bytes of randomness (``openssl rand -hex 32``); there are at most :data:`MAX_KEYS`, none
repeated. What is wrong is a :class:`~awf_mcp.errors.UserError`: one sentence naming the file
(and line) or the variable, never a key or any part of one.

Standard library only; the cryptography is the SDK's.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from awf_mcp.errors import UserError
from awf_mcp.state.privatefile import read_private_file

ENV_KEY = "AWF_MCP_STATE_KEY"
ENV_PREVIOUS = "AWF_MCP_STATE_KEY_PREVIOUS"
MIN_KEY_HEX = 64
"""32 bytes: the least the SDK's codec takes, and AES-256's key size."""
MAX_KEY_HEX = 256
MAX_KEYS = 8
"""The sealing key and the older ones still accepted: a rotation needs two."""
MAX_FILE_BYTES = 16 * 1024
GENERATE = "openssl rand -hex 32"

_HEX = re.compile(r"[0-9a-fA-F]+")


@dataclass(frozen=True, slots=True)
class StateKeys:
    """The keys (sealing key first) and where they came from, for the start-up line."""

    keys: tuple[bytes, ...]
    source: str

    def describe(self) -> str:
        """Where the keys came from and how many older ones still open: nothing secret."""
        older = len(self.keys) - 1
        return f"the shared key from {self.source}" + (
            f" ({older} older key{'s' if older > 1 else ''} still accepted)" if older else ""
        )


def state_keys(key_file: str | None, env: Mapping[str, str] | None = None) -> StateKeys | None:
    """The configured keys, or ``None`` for a key of this process's own; see the module docstring."""
    environ = os.environ if env is None else env
    if key_file:
        return StateKeys(_keys_of_file(key_file), key_file)
    sealing = environ.get(ENV_KEY, "")
    previous = environ.get(ENV_PREVIOUS, "")
    if not sealing.strip():
        if previous.strip():
            raise UserError(f"{ENV_PREVIOUS} is set but {ENV_KEY} is not: set the key that seals too")
        return None
    words = [(ENV_KEY, sealing.strip())]
    words += [(ENV_PREVIOUS, word) for word in re.split(r"[\s,]+", previous) if word]
    keys = _checked(words)
    return StateKeys(keys, ENV_KEY if len(keys) == 1 else f"{ENV_KEY} and {ENV_PREVIOUS}")


def _keys_of_file(path: str) -> tuple[bytes, ...]:
    raw = read_private_file(path, "state key file", MAX_FILE_BYTES)
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError:
        raise UserError(
            f"state key file {path} is not text: write one hexadecimal key per line ({GENERATE})"
        ) from None
    lines = [
        (f"{path} line {number}", line.strip())
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#")
    ]
    if not lines:
        raise UserError(
            f"state key file {path} holds no key: write one hexadecimal key per line ({GENERATE})"
        )
    return _checked(lines)


def _checked(candidates: list[tuple[str, str]]) -> tuple[bytes, ...]:
    """Each ``(where, text)`` as key bytes, sealing key first; a sentence naming ``where`` if not one."""
    if len(candidates) > MAX_KEYS:
        where = candidates[0][0].split(" line ", 1)[0]
        raise UserError(
            f"{where} holds {len(candidates)} keys, more than {MAX_KEYS}: keep the sealing key and "
            "the one before it"
        )
    keys: list[bytes] = []
    for where, text in candidates:
        if not MIN_KEY_HEX <= len(text) <= MAX_KEY_HEX or not _HEX.fullmatch(text) or len(text) % 2:
            raise UserError(
                f"the state key in {where} is not {MIN_KEY_HEX} to {MAX_KEY_HEX} hexadecimal characters "
                f"(32 to 128 bytes): make one with {GENERATE}"
            )
        key = bytes.fromhex(text)
        if key in keys:
            raise UserError(f"the state key in {where} repeats an earlier one: list each key once")
        keys.append(key)
    return tuple(keys)
