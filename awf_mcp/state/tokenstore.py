"""Where OAuth sign-ins are kept: the OS keyring, or a ``0600`` record in the user's state directory.

Contract
--------
* One entry per signed-in server, under :func:`entry_key` (the server's name and URL: a server
  whose URL changes signs in again). An entry is a JSON object (the tokens, their expiry, the
  client the authorization server registered); only :mod:`awf_mcp.wire.oauth` reads inside it.
* Entries live outside every config file: in the OS keyring (service :data:`KEYRING_SERVICE`)
  when the ``keyring`` package finds an OS backend (priority 1 or more: not a file of
  ``keyrings.alt``) that answers (probed once per process),
  otherwise in the record ``oauth.json`` of :mod:`awf_mcp.state.statestore` (the state
  directory is ``0700``, the record ``0600``, written whole and renamed into place, under a
  lock so two processes never lose each other's writes). ``AWF_MCP_TOKEN_STORE=file`` uses
  the file even where a keyring exists.
* A token file that another user could read or write (group or other permission bits) is
  refused with a sentence, and nothing in it is used.
* Nothing here logs, and no error quotes an entry's content.

Standard library only (``keyring`` when installed).
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from awf_mcp.errors import UserError
from awf_mcp.state import statestore

RECORD = "oauth"
KEYRING_SERVICE = "awf-mcp"


def entry_key(name: str, url: str) -> str:
    """The key of server NAME's entry at URL."""
    return f"{name} {url}"


_usable: list[Any] = []
"""The probe's answer, once per process: ``[keyring module or None]``."""


def _keyring(env: Mapping[str, str] | None = None) -> Any:
    """The ``keyring`` module when it has a backend that answers and the user did not ask for the file."""
    env = os.environ if env is None else env
    if env.get("AWF_MCP_TOKEN_STORE", "").lower() == "file":
        return None
    if not _usable:
        _usable.append(_probe())
    return _usable[0]


def _probe() -> Any:
    try:
        import keyring  # type: ignore[import-not-found, unused-ignore]
        from keyring.backends import fail  # type: ignore[import-not-found, unused-ignore]

        backend = keyring.get_keyring()
        if isinstance(backend, fail.Keyring) or type(backend).__module__.startswith("keyring.backends.null"):
            return None
        if float(getattr(backend, "priority", 0)) < 1:
            return None  # a file of keyrings.alt (plaintext, or asking a password on the terminal)
        keyring.get_password(KEYRING_SERVICE, "probe")  # a locked or absent service fails here
    except Exception:
        return None
    return keyring


def record_path(env: Mapping[str, str] | None = None) -> Path:
    """The file entries are kept in when there is no keyring."""
    return statestore.state_dir(env) / f"{RECORD}.json"


def location(env: Mapping[str, str] | None = None) -> str:
    """Where entries are kept, for the user: ``the OS keyring (<backend>)`` or the file's path."""
    keyring = _keyring(env)
    if keyring is not None:
        backend = keyring.get_keyring()
        name = " ".join(str(getattr(backend, "name", "")).split()) or type(backend).__name__
        return f"the OS keyring ({name})"
    return str(record_path(env))


def _check_private(env: Mapping[str, str] | None) -> None:
    path = record_path(env)
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise UserError(f"{path} is not a regular file; awf-mcp keeps OAuth tokens there: move it aside")
    if mode & 0o077:
        raise UserError(
            f"{path} can be read or written by other users (mode {stat.S_IMODE(mode):o}); "
            f"its tokens are not used: sign in again after removing it, or chmod 600 it"
        )


def load(key: str, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The entry under KEY (``{}`` when there is none)."""
    keyring = _keyring(env)
    if keyring is not None:
        try:
            text = keyring.get_password(KEYRING_SERVICE, key)
        except Exception as exc:
            raise UserError(f"the OS keyring could not be read ({type(exc).__name__})") from None
        try:
            entry = json.loads(text) if text else {}
        except ValueError:
            return {}
        return entry if isinstance(entry, dict) else {}
    _check_private(env)
    entry = statestore.load(RECORD, env).get(key, {})
    return entry if isinstance(entry, dict) else {}


@contextlib.contextmanager
def updating(key: str, env: Mapping[str, str] | None = None) -> Iterator[dict[str, Any]]:
    """Yield the entry under KEY; what the caller leaves in it is kept (an empty entry is removed).

    In the file, the read and the write happen under the record's lock.
    """
    keyring = _keyring(env)
    if keyring is not None:
        entry = load(key, env)
        yield entry
        try:
            if entry:
                keyring.set_password(KEYRING_SERVICE, key, json.dumps(entry, sort_keys=True))
            else:
                with contextlib.suppress(Exception):
                    keyring.delete_password(KEYRING_SERVICE, key)
        except Exception as exc:
            raise UserError(f"the OS keyring could not be written ({type(exc).__name__})") from None
        return
    _check_private(env)
    with statestore.updating(RECORD, env) as record:
        found = record.get(key)
        entry = dict(found) if isinstance(found, dict) else {}
        yield entry
        if entry:
            record[key] = entry
        else:
            record.pop(key, None)


def forget(key: str, env: Mapping[str, str] | None = None) -> bool:
    """Remove the entry under KEY; whether there was one."""
    with updating(key, env) as entry:
        had = bool(entry)
        entry.clear()
    return had
