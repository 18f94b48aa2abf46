"""The roots a call is confined to, when the agent's client declares roots of its own.

Contract
--------
:class:`ClientRoots` decides, for each call, which directories the built-in tools may
touch (:attr:`~awf_mcp.ports.CallContext.roots`; ``None`` means the configured roots):

* A client without the ``roots`` capability changes nothing.
* Otherwise the client's roots are asked for (``roots/list`` through the call's
  :class:`~awf_mcp.ports.ClientChannel`) and kept per client session, until
  :meth:`ClientRoots.forget` (on ``notifications/roots/list_changed``) or until a path
  argument falls outside them (the client may have added a directory without saying
  so), when they are asked for again.
* Only ``file://`` URIs naming an existing directory count; every other root is
  skipped with a log line.
* Without explicit roots (``--root`` or ``roots`` in the config), the client's roots
  replace the working-directory default. With explicit roots, those are the ceiling:
  a client root inside one of them is used, one outside is refused with a log line.
* When no client root is usable (none given, all refused, the client failed to
  answer, or gave no answer within :data:`ANSWER_TIMEOUT_SECONDS`), the configured roots
  apply; a session that did not answer in time is not asked again until it says its
  roots changed.

Roots are resolved (every symbolic link followed) when they arrive; the first is the
base for relative paths, as with ``--root``.
"""

from __future__ import annotations

import logging
import os
from collections import OrderedDict
from collections.abc import Hashable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit

import anyio

from awf_mcp.ports import ClientCannotAnswer, ClientChannel, visible_text

log = logging.getLogger("awf_mcp.core.roots")

MAX_SESSIONS = 1024
"""How many client sessions' roots are kept (the least recently used is dropped first)."""

ANSWER_TIMEOUT_SECONDS = 10.0
"""How long a call waits for the client's ``roots/list`` answer before the configured roots apply."""

MAX_ROOTS = 256
"""How many roots of one client are considered; the rest are ignored with a log line."""


def _within(path: str, root: str) -> bool:
    return root == "/" or path == root or path.startswith(root.rstrip("/") + "/")


def root_uri(path: str) -> str:
    """The ``file://`` URI of absolute ``path``, bytes percent-encoded; :func:`root_path` reads it back."""
    return PurePosixPath(path).as_uri()


def root_path(uri: Any) -> str | None:
    """The local directory a ``file://`` root URI names, or ``None`` (with the reason logged)."""
    if not isinstance(uri, str):
        log.warning("client root skipped: its uri is not a string")
        return None
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        log.warning("client root %s skipped: only file:// URIs on this machine are roots", visible_text(uri))
        return None
    path = unquote(parts.path, errors="surrogateescape")
    if not path.startswith("/") or "\x00" in path:
        log.warning("client root %s skipped: not an absolute path", visible_text(uri))
        return None
    real = os.path.realpath(path)
    if not os.path.isdir(real):
        log.warning("client root %s skipped: %s is not a directory", visible_text(uri), visible_text(real))
        return None
    return real


def accepted_roots(
    result: Mapping[str, Any], configured: Sequence[str], *, explicit: bool
) -> tuple[str, ...]:
    """The usable roots of a ``roots/list`` result, in the client's order; see the module docstring."""
    entries = result.get("roots")
    if not isinstance(entries, list):
        log.warning("client roots ignored: the roots/list result holds no list of roots")
        return ()
    if len(entries) > MAX_ROOTS:
        log.warning("client sent %d roots; only the first %d are considered", len(entries), MAX_ROOTS)
    ceiling = [os.path.realpath(root) for root in configured]
    accepted: list[str] = []
    for entry in entries[:MAX_ROOTS]:
        path = root_path(entry.get("uri") if isinstance(entry, Mapping) else None)
        if path is None or path in accepted:
            continue
        if explicit and not any(_within(path, top) for top in ceiling):
            log.warning(
                "client root %s refused: it is outside the configured roots (%s)",
                visible_text(path),
                ", ".join(visible_text(top) for top in ceiling),
            )
            continue
        accepted.append(path)
    return tuple(accepted)


class ClientRoots:
    """Per-session client roots under the configured ones; see the module docstring.

    ``configured`` are the roots from the command line or config (or the working
    directory), ``explicit`` whether the user gave them.
    """

    def __init__(
        self, configured: Sequence[str], *, explicit: bool, answer_timeout: float = ANSWER_TIMEOUT_SECONDS
    ) -> None:
        self.configured = tuple(configured)
        self.explicit = explicit
        self.answer_timeout = answer_timeout
        self._sessions: OrderedDict[Hashable, tuple[str, ...]] = OrderedDict()

    async def for_call(
        self, channel: ClientChannel, session: Hashable | None
    ) -> tuple[tuple[str, ...] | None, bool]:
        """The roots of a call from ``session`` (``None`` for the configured ones), and whether they
        were asked for just now (``False``: kept from an earlier call of the session).

        ``session`` ``None`` keeps nothing. May raise :class:`~awf_mcp.ports.InputRequired`
        (the stateless revision asks through the call's retry).
        """
        if not channel.supports("roots"):
            return None, True
        if session is not None and session in self._sessions:
            self._sessions.move_to_end(session)
            return self._sessions[session] or None, False
        result: Mapping[str, Any] = {}
        try:
            with anyio.fail_after(self.answer_timeout):
                result = await channel.ask("roots/list", {})
        except ClientCannotAnswer as exc:
            log.warning("the client's roots are unavailable (%s); the configured roots apply", exc)
            return None, True
        except TimeoutError:
            log.warning(
                "the client did not answer roots/list within %g s; the configured roots apply",
                self.answer_timeout,
            )
        roots = accepted_roots(result, self.configured, explicit=self.explicit) if result else ()
        if session is not None:
            self._sessions[session] = roots
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
        if roots:
            log.info("following the client's roots: %s", ", ".join(visible_text(root) for root in roots))
        return roots or None, True

    def forget(self, session: Hashable | None) -> None:
        """Drop what is known of ``session``'s roots: the next call asks again."""
        self._sessions.pop(session, None)
