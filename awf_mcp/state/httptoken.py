"""The static tokens of ``serve --transport http``: the one kept for the user, and a file of named ones.

Contract
--------
:func:`kept_token` returns the token recorded in the user's state directory
(:mod:`awf_mcp.state.statestore`, record ``http``: a ``0600`` file in a ``0700`` directory)
and that file's path. The first call makes one (:func:`secrets.token_urlsafe`, 32 bytes);
so does a call that finds the record without a well-formed token. The token stays the
same across restarts, so a client configured with it keeps working; removing the file
makes a new one at the next start. When the state directory cannot be written (a
read-only home), the token is made for this run only, the path is ``None``, and a warning
says why.

:class:`NamedTokens` holds the tokens a caller may present, each with a name (what the audit
log and the policy hooks are told): :data:`DEFAULT_NAME` for the single ``--token``, and those
of a token file (``--token-file``), read by :func:`read_token_file`:

* one ``NAME TOKEN`` per line, separated by spaces or tabs; blank lines and lines starting
  with ``#`` are skipped; a name is 1 to 64 of ``A-Z a-z 0-9 . _ @ -``, a token 16 to 512
  printable ASCII characters without spaces;
* a malformed line, a name given twice and a token given twice are each a
  :class:`~awf_mcp.errors.UserError` naming the line number, never quoting the token;
* the file must be a regular file (a symbolic link to one is followed, as Kubernetes mounts
  secrets) of at most :data:`MAX_TOKEN_FILE_BYTES`, readable and
  writable by its owner only (no group or other permission bits: ``chmod 600``), since
  anyone who can read it holds every token in it, and anyone who can write it can add one.

:meth:`NamedTokens.reload` reads the file again (``serve`` calls it on SIGHUP): a file that
fails keeps the tokens in use and raises the error. A token is looked up by its SHA-256
digest, so looking one up takes the same time whichever token, or none, matches.

Standard library only.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from awf_mcp.errors import UserError
from awf_mcp.state import statestore
from awf_mcp.state.privatefile import read_private_file

log = logging.getLogger("awf_mcp.http")

RECORD = "http"
"""The state record holding the token."""

_WELL_FORMED = re.compile(r"[A-Za-z0-9_-]{32,256}")


def kept_token(env: Mapping[str, str] | None = None) -> tuple[str, Path | None]:
    """The kept token (made now if there is none) and the file it is kept in (``None``: not kept)."""
    try:
        with statestore.updating(RECORD, env) as record:
            token = record.get("token")
            if not isinstance(token, str) or not _WELL_FORMED.fullmatch(token):
                token = secrets.token_urlsafe(32)
                record["token"] = token
    except UserError as exc:
        log.warning("%s: the HTTP token is for this run only", exc)
        return secrets.token_urlsafe(32), None
    return token, statestore.state_dir(env) / f"{RECORD}.json"


DEFAULT_NAME = "default"
"""The name of the single token of ``--token``, ``AWF_MCP_TOKEN`` or the kept token."""
MAX_TOKEN_FILE_BYTES = 1024 * 1024
"""The largest token file read."""
_NAME = re.compile(r"[A-Za-z0-9._@-]{1,64}")
_TOKEN = re.compile(r"[!-~]{16,512}")


def read_token_file(path: Path) -> dict[str, str]:
    """The tokens of token file ``path`` by name; :class:`UserError` saying what is wrong and where."""
    raw = read_private_file(path, "token file", MAX_TOKEN_FILE_BYTES)
    tokens: dict[str, str] = {}
    seen_at: dict[bytes, int] = {}
    for number, line in enumerate(raw.split(b"\n"), start=1):
        text = line.strip()
        if not text or text.startswith(b"#"):
            continue
        parts = text.split()
        if len(parts) != 2:
            raise UserError(f"token file {path}, line {number}: expected NAME TOKEN, two words")
        name, token = (part.decode("latin-1") for part in parts)
        if not _NAME.fullmatch(name):
            raise UserError(
                f"token file {path}, line {number}: a name is 1 to 64 letters, digits, '.', '_', '@' or '-'"
            )
        if not _TOKEN.fullmatch(token):
            raise UserError(
                f"token file {path}, line {number}: the token must be 16 to 512 printable ASCII characters"
            )
        if name in tokens:
            raise UserError(f"token file {path}, line {number}: the name {name} is given twice")
        digest = _digest(token)
        if digest in seen_at:
            raise UserError(f"token file {path}, line {number}: the same token as line {seen_at[digest]}")
        seen_at[digest] = number
        tokens[name] = token
    return tokens


def _digest(token: str | bytes) -> bytes:
    return hashlib.sha256(token.encode() if isinstance(token, str) else token).digest()


class NamedTokens:
    """The static tokens a caller may present, by name; see the module docstring."""

    def __init__(self, single: str | None = None, file: Path | None = None) -> None:
        self.single = single
        self.file = file
        self._by_digest: dict[bytes, str] = self._load()

    def _load(self) -> dict[bytes, str]:
        tokens = read_token_file(self.file) if self.file is not None else {}
        if self.single and DEFAULT_NAME in tokens:
            raise UserError(
                f"token file {self.file} names a token {DEFAULT_NAME!r}, "
                "the name of the --token token: rename it"
            )
        by_digest = {_digest(token): name for name, token in tokens.items()}
        if self.single:
            by_digest[_digest(self.single)] = DEFAULT_NAME
        return by_digest

    def __len__(self) -> int:
        return len(self._by_digest)

    def name_of(self, token: str | bytes) -> str | None:
        """The name of ``token``, or ``None`` when it is none of them."""
        return self._by_digest.get(_digest(token))

    def reload(self) -> int:
        """Read the token file again and use its tokens from now on; how many there are.

        Raises :class:`UserError` (and keeps the tokens in use) when the file fails.
        """
        self._by_digest = self._load()
        return len(self._by_digest)
