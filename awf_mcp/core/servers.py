"""Upstream MCP servers in the configuration: ``[servers.NAME]`` (TOML) and ``mcpServers`` (JSON).

Contract
--------
:func:`parse` turns the ``servers`` table of ``awf-mcp.toml``, or the ``mcpServers``
object of the AWF proxy JSON (the shape Claude Code and Gemini CLI write, so an agent's
configuration can be pasted in), into :class:`ServerSpec` objects sorted by name.

* A server has either ``command`` (stdio; ``args``, ``env``, ``cwd``) or ``url``
  (Streamable HTTP, or the older HTTP+SSE transport with ``type = "sse"``; ``headers``).
  The agents' ``type``/``transport`` markers (``stdio``, ``http``, ``streamable-http``,
  ``sse``) are accepted. Gemini's ``httpUrl`` is read as a Streamable HTTP ``url``. An
  untyped ``url`` is Streamable HTTP, as Claude Code reads it; Gemini CLI's own ``url``
  (SSE) is imported as ``type = "sse"`` by :mod:`awf_mcp.clients.serverimport`.
* ``auth = "oauth"`` (a ``url`` server only) signs in with OAuth: ``awf-mcp servers login
  NAME`` once, then the stored tokens are used and refreshed (see
  :mod:`awf_mcp.wire.oauth`); ``client_id`` names a client registered beforehand with the
  server's authorization server, ``client_metadata_url`` an HTTPS client ID metadata
  document (used where the authorization server accepts them). Neither is a secret.
  ``oauth_endpoint_hosts`` lists the hosts, beside its issuer's own, that the authorization
  server's metadata may put its token, registration and revocation endpoints on (by default
  none: an endpoint elsewhere is refused, see :mod:`awf_mcp.wire.oauth`).
* ``timeout_seconds`` (per call; default the server-wide call timeout),
  ``startup_timeout_seconds`` (default :data:`DEFAULT_STARTUP_TIMEOUT_SECONDS`),
  ``enabled`` (default true) and ``pin`` (default true: its tools are served only as
  approved, see :mod:`awf_mcp.core.pins`) are awf-mcp's own keys.
* ``${VAR}`` (and ``${VAR:-default}``) in ``command``, ``args``, ``env`` values, ``url``
  and ``headers`` values is replaced from awf-mcp's environment. A variable that is not
  set does not stop start-up: that server alone fails, with a reason naming the
  variable (:attr:`ServerSpec.problem`).
* Secrets: every expanded value, every ``env`` value and every header value is a
  secret (:attr:`ServerSpec.secrets`). :meth:`ServerSpec.redact` removes them from any
  text; :meth:`ServerSpec.public` is the description shown by ``awf-mcp servers list``
  (``env`` and ``headers`` by key only, ``args`` as written, before expansion).
* Names follow the tool-name rules without ``_`` (it separates the server from the
  tool: ``<server>_<tool>``); a bad name or key is a :class:`ConfigError` naming it.
* :func:`working_directory` is where a stdio server runs; :func:`launch_early` spawns the
  stdio servers as soon as the configuration is read (``serve`` calls it before importing
  anything heavy), so their start overlaps awf-mcp's own.

Standard library only (and, inside :func:`launch_early`, the standard-library-only
:mod:`awf_mcp.processes` modules that start them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from awf_mcp.errors import ConfigError
from awf_mcp.processes.containment import policy

DEFAULT_STARTUP_TIMEOUT_SECONDS = 15.0
SERVER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9-]{1,32}$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_KEYS = {
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "timeout_seconds",
    "startup_timeout_seconds",
    "enabled",
    "pin",
    "auth",
    "client_id",
    "client_metadata_url",
    "oauth_endpoint_hosts",
    "sandbox",
}
# Keys the agents write that awf-mcp reads under another name, or reads and ignores.
_AGENT_KEYS = {"type", "transport", "httpUrl", "timeout", "trust", "description", "disabled"}
_HTTP_TYPES = {"http", "streamable-http", "streamableHttp", "streamable_http"}
REDACTED = "***"
SOURCE_PREFIX = "server:"
"""Every upstream tool's ``source`` starts with this: ``server:<name>``."""


@dataclass(frozen=True, slots=True)
class ServerSpec:
    """One upstream MCP server as configured, variables expanded; see the module docstring."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float | None = None
    startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS
    enabled: bool = True
    pin: bool = True
    """Whether its tools are pinned (:mod:`awf_mcp.core.pins`); ``pin = false`` serves them as listed."""
    sse: bool = False
    """A ``url`` server on the HTTP+SSE transport (``type = "sse"``) rather than Streamable HTTP."""
    auth: str = ""
    """``oauth`` for a ``url`` server that signs in with OAuth; empty otherwise."""
    client_id: str = ""
    client_metadata_url: str = ""
    oauth_endpoint_hosts: tuple[str, ...] = ()
    """Hosts (lower case) beside the issuer's that its token, registration and revocation endpoints
    may be on."""
    written_args: tuple[str, ...] = ()
    written_url: str = ""
    secrets: frozenset[str] = frozenset()
    problem: str = ""
    sandbox: Mapping[str, Any] = field(default_factory=dict)
    """Its own ``[servers.NAME.sandbox]`` table, checked: over the user's ``[sandbox]`` when it starts."""

    @property
    def transport(self) -> str:
        """``stdio``, ``http`` (Streamable HTTP) or ``sse``."""
        if not self.url:
            return "stdio"
        return "sse" if self.sse else "http"

    @property
    def source(self) -> str:
        """The ``source`` label of this server's tools: ``server:<name>``."""
        return f"{SOURCE_PREFIX}{self.name}"

    def redact(self, text: str) -> str:
        """``text`` with every secret value replaced by ``***``."""
        for secret in sorted(self.secrets, key=len, reverse=True):
            text = text.replace(secret, REDACTED)
        return text

    def public(self) -> dict[str, Any]:
        """What may be shown of this server: no expanded value, no env or header value."""
        shown: dict[str, Any] = {
            "name": self.name,
            "transport": self.transport,
            "enabled": self.enabled,
            "pin": self.pin,
        }
        if self.url:
            shown["url"] = self.written_url
            shown["headers"] = sorted(self.headers)
            if self.auth:
                shown["auth"] = self.auth
        else:
            shown["command"] = self.redact(self.command)
            shown["args"] = list(self.written_args)
            shown["env"] = sorted(self.env)
            if self.cwd:
                shown["cwd"] = self.cwd
        return shown


def variables_in(text: str) -> list[str]:
    """The environment variables that ``${VAR}`` references in TEXT would read, sorted."""
    return sorted({match.group(1) for match in _VARIABLE.finditer(text)})


def _expand(text: str, secrets: set[str], missing: list[str], environ: Mapping[str, str]) -> str:
    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value is None:
            if default is None:
                missing.append(name)
                return ""
            value = default
        if value:
            secrets.add(value)
        return value

    return _VARIABLE.sub(substitute, text)


def _strings(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{what} must be a list of strings")
    return tuple(value)


def _string_table(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise ConfigError(f"{what} must map names to strings")
    return dict(value)


def _seconds(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ConfigError(f"{what} must be a positive number of seconds")
    return float(value)


def parse_one(name: str, table: Any, where: str, environ: Mapping[str, str] | None = None) -> ServerSpec:
    """One server's table (``where`` names it in errors, e.g. ``[servers.git] in awf-mcp.toml``)."""
    environ = os.environ if environ is None else environ
    if not isinstance(name, str) or not SERVER_NAME_PATTERN.match(name):
        raise ConfigError(
            f"server name {name!r} in {where} is invalid: use 1-32 letters, digits or '-' "
            "(no '_': it separates the server from its tools' names)"
        )
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table of settings (command or url, ...)")
    unknown = sorted(set(table) - _KEYS - _AGENT_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_KEYS))
        raise ConfigError(f"unknown key {unknown[0]!r} in {where}; allowed keys: {allowed}")
    kind = table.get("type", table.get("transport"))
    url = table.get("url", table.get("httpUrl", ""))
    command = table.get("command", "")
    if not isinstance(url, str) or not isinstance(command, str):
        raise ConfigError(f"command and url in {where} must be strings")
    if bool(url) == bool(command):
        raise ConfigError(f"{where} needs exactly one of command (a stdio server) or url (an HTTP server)")
    if kind is not None and kind not in ("stdio", "sse") and kind not in _HTTP_TYPES:
        raise ConfigError(f"{where} has type {kind!r}; use stdio, http or sse")
    if kind == "sse" and not url:
        raise ConfigError(f"{where} has type 'sse' but no url")
    auth, client_id, client_metadata_url = (
        table.get(key, "") for key in ("auth", "client_id", "client_metadata_url")
    )
    if auth not in ("", "oauth"):
        raise ConfigError(f'auth in {where} must be "oauth" (or left out)')
    if not all(isinstance(value, str) for value in (client_id, client_metadata_url)):
        raise ConfigError(f"client_id and client_metadata_url in {where} must be strings")
    if (auth or client_id or client_metadata_url) and not url:
        raise ConfigError(f"auth, client_id and client_metadata_url in {where} apply to a url server only")
    if (client_id or client_metadata_url) and not auth:
        raise ConfigError(f'client_id and client_metadata_url in {where} need auth = "oauth"')
    endpoint_hosts = _strings(table.get("oauth_endpoint_hosts", []), f"oauth_endpoint_hosts in {where}")
    if endpoint_hosts and not auth:
        raise ConfigError(f'oauth_endpoint_hosts in {where} needs auth = "oauth"')

    secrets: set[str] = set()
    missing: list[str] = []

    def expand(text: str) -> str:
        return _expand(text, secrets, missing, environ)

    written_args = _strings(table.get("args", []), f"args in {where}")
    env = {k: expand(v) for k, v in _string_table(table.get("env", {}), f"env in {where}").items()}
    headers = {
        k: expand(v) for k, v in _string_table(table.get("headers", {}), f"headers in {where}").items()
    }
    secrets.update(v for v in (*env.values(), *headers.values()) if v)
    cwd = table.get("cwd", "")
    if not isinstance(cwd, str):
        raise ConfigError(f"cwd in {where} must be a string")
    enabled = table.get("enabled", not table.get("disabled", False))
    if not isinstance(enabled, bool):
        raise ConfigError(f"enabled in {where} must be true or false")
    pin = table.get("pin", True)
    if not isinstance(pin, bool):
        raise ConfigError(f"pin in {where} must be true or false")
    try:
        sandbox = policy.parse_table(table.get("sandbox", {}), f"[servers.{name}.sandbox] of {where}")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    timeout = table.get("timeout_seconds")
    if timeout is None and "timeout" in table:  # Gemini CLI writes milliseconds
        timeout = _seconds(table["timeout"], f"timeout in {where}") / 1000
    spec = ServerSpec(
        name=name,
        command=expand(command),
        args=tuple(expand(arg) for arg in written_args),
        env=env,
        cwd=expand(cwd),
        url=expand(url),
        headers=headers,
        timeout_seconds=None if timeout is None else _seconds(timeout, f"timeout_seconds in {where}"),
        startup_timeout_seconds=_seconds(
            table.get("startup_timeout_seconds", DEFAULT_STARTUP_TIMEOUT_SECONDS),
            f"startup_timeout_seconds in {where}",
        ),
        enabled=enabled,
        pin=pin,
        sse=kind == "sse",
        auth=auth,
        client_id=client_id,
        client_metadata_url=client_metadata_url,
        oauth_endpoint_hosts=tuple(host.strip().lower().rstrip(".") for host in endpoint_hosts),
        written_args=written_args,
        written_url=url,
        secrets=frozenset(s for s in secrets if len(s) >= 3),
        sandbox=sandbox,
    )
    if may_sign_in(spec) and spec.url in oauth_detected():
        spec = replace(spec, auth="oauth")  # its 401 asked for OAuth once: it signs in from now on
    if missing:
        names = ", ".join(f"${{{v}}}" for v in dict.fromkeys(missing))
        return replace(spec, problem=f"{names} is not set in awf-mcp's environment")
    return spec


OAUTH_DETECTED = "oauth-detected"
"""The state record of the URLs whose first answer was a ``401`` with OAuth protected-resource
metadata (RFC 9728): servers that sign in with OAuth whatever their entry says."""


def may_sign_in(spec: ServerSpec) -> bool:
    """Whether SPEC is a url server that could sign in with OAuth but is not told to: no
    ``auth = "oauth"`` and no ``Authorization`` header of its own."""
    own_headers = {name.lower() for name in spec.headers}
    return bool(spec.url) and not spec.auth and "authorization" not in own_headers


def oauth_detected() -> set[str]:
    """The URLs recorded by :func:`record_oauth` (none when the state cannot be read)."""
    from awf_mcp.errors import UserError
    from awf_mcp.state import statestore

    try:
        urls = statestore.load(OAUTH_DETECTED).get("urls", [])
    except (UserError, OSError):
        return set()
    return {url for url in urls if isinstance(url, str)} if isinstance(urls, list) else set()


def record_oauth(url: str) -> None:
    """Remember that the server at URL asked for OAuth (its ``401`` named its metadata)."""
    from awf_mcp.state import statestore

    with statestore.updating(OAUTH_DETECTED) as record:
        known = record.get("urls")
        urls: list[str] = known if isinstance(known, list) else []
        if url not in urls:
            record["urls"] = [*urls, url][-1000:]


def parse(
    data: Mapping[str, Any], path: str, environ: Mapping[str, str] | None = None
) -> tuple[ServerSpec, ...]:
    """The servers of a parsed config file: its ``servers`` and ``mcpServers`` tables."""
    specs: dict[str, ServerSpec] = {}
    for key in ("servers", "mcpServers"):
        if key not in data:
            continue
        table = data[key]
        if not isinstance(table, dict):
            raise ConfigError(f"{key} in {path} must be a table of servers, one per name")
        for name, settings in table.items():
            if name in specs:
                raise ConfigError(f"server {name!r} is defined twice in {path} (servers and mcpServers)")
            where = f"[servers.{name}] in {path}" if key == "servers" else f"mcpServers.{name} in {path}"
            specs[name] = parse_one(name, settings, where, environ)
    return tuple(specs[name] for name in sorted(specs))


def working_directory(spec: ServerSpec, roots: Sequence[str]) -> str:
    """``cwd`` of a stdio server: relative to the first root; the first root when unset."""
    base = roots[0] if roots else os.getcwd()
    return os.path.normpath(os.path.join(base, os.path.expanduser(spec.cwd))) if spec.cwd else base


def launch_key(spec: ServerSpec, env: Mapping[str, str], cwd: str) -> tuple[Any, ...]:
    """What identifies the launch of ``spec`` with ``env`` in ``cwd`` (:mod:`.processes.upstreamprocess`)."""
    from awf_mcp.processes import upstreamprocess

    return upstreamprocess.launch_key(spec.command, spec.args, env, cwd, spec.name, spec.sandbox)


def launch_early(specs: Sequence[ServerSpec], roots: Sequence[str] = ()) -> None:
    """Spawn every enabled stdio server now, so its start overlaps awf-mcp's own.

    The connection made later adopts the process (see :mod:`awf_mcp.processes.upstreamprocess`);
    nothing is reported here: a server that cannot start is reported by the normal path.
    """
    from awf_mcp.processes import upstreamprocess
    from awf_mcp.processes.childenv import child_environment

    launches = {}
    for spec in specs:
        if spec.enabled and not spec.problem and spec.transport == "stdio":
            env = child_environment()
            env.update(spec.env)
            key = launch_key(spec, env, working_directory(spec, roots))
            launches[spec.name] = (key, tuple(spec.env))
    upstreamprocess.launch_early(launches)
