"""The token of ``serve --transport http`` when the user gave none: made once, kept for the user.

Contract
--------
:func:`kept_token` returns the token recorded in the user's state directory
(:mod:`awf_mcp.ops.statestore`, record ``http``: a ``0600`` file in a ``0700`` directory)
and that file's path. The first call makes one (:func:`secrets.token_urlsafe`, 32 bytes);
so does a call that finds the record without a well-formed token. The token stays the
same across restarts, so a client configured with it keeps working; removing the file
makes a new one at the next start. When the state directory cannot be written (a
read-only home), the token is made for this run only, the path is ``None``, and a warning
says why.

Standard library only.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections.abc import Mapping
from pathlib import Path

from awf_mcp.errors import UserError
from awf_mcp.ops import statestore

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
