"""Configuration: CLI flags and an optional config file, merged into one :class:`Settings`.

Two file formats carry the same keys:

* the AWF proxy JSON of ``awf mcp-serve --config FILE`` (``intercept_builtins``,
  ``plugin_tools: [{"plugin": NAME, "expose": [OPERATION, ...]}]``, ``root_dir``),
  accepted exactly as the Go version accepted it;
* TOML (``awf-mcp.toml`` in the working directory, or ``--config x.toml``), which
  adds ``roots``, ``only``, ``exclude``, ``rename``, ``call_timeout_seconds``, ``output_budget``,
  ``strict``, per-plugin settings under ``[plugins.<name>]``, upstream MCP servers
  under ``[servers.<name>]`` (``mcpServers`` in JSON; :mod:`awf_mcp.core.servers`) and the
  authorization server of ``serve --transport http`` under ``[http.auth]`` (:class:`HttpAuth`),
  and the sandbox of Bash and the upstreams under ``[sandbox]``
  (:mod:`awf_mcp.processes.containment.policy`; :func:`load` makes it the process's policy).
  What a file would do, in words, is :mod:`awf_mcp.core.configsummary`'s.

Validation failures raise :class:`~awf_mcp.errors.ConfigError` with one of the
AWF codes (``USER.MCP_PROXY.UNKNOWN_KEY``, ``...EMPTY_PROXY``; the plugin- and
name-dependent ``UNKNOWN_PLUGIN``, ``UNKNOWN_OPERATION`` and ``NAME_COLLISION``
are raised by the registry once plugins are loaded). Flags win over the file.
Relative paths in a file are relative to the file's directory.

Plugin settings also come from the environment: ``AWF_MCP_PLUGIN_<NAME>_<KEY>``
(upper case, ``-`` as ``_``) sets key ``<key>`` of plugin ``<name>`` and wins
over the file.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from awf_mcp.budget import MAX_BUDGET, MIN_BUDGET
from awf_mcp.core import discovery, servers, trust
from awf_mcp.core.configsummary import describe as describe  # the names config gave them
from awf_mcp.core.configsummary import sandbox_widening as sandbox_widening
from awf_mcp.core.discovery import Discovery
from awf_mcp.core.servers import ServerSpec
from awf_mcp.errors import ConfigError
from awf_mcp.ports import inert_text, plugin_setting_variable
from awf_mcp.processes.containment.policy import SandboxPolicy, activate, parse_table, policy_from

DEFAULT_CONFIG_NAME = "awf-mcp.toml"
DEFAULT_CALL_TIMEOUT_SECONDS = 620.0
"""Per-call time limit; just above Bash's own 600 s maximum so Bash reports its own timeout."""

PROXY_CODE = "USER.MCP_PROXY"
_PROXY_KEYS = {"intercept_builtins", "plugin_tools", "root_dir"}
_EXTENDED_KEYS = {
    "roots",
    "only",
    "exclude",
    "rename",
    "call_timeout_seconds",
    "output_budget",
    "strict",
    "plugins",
    "http",
    "sandbox",
    "discovery",
    "shared",
}
_SERVER_KEYS = {"servers", "mcpServers"}
_SELECTION_KEYS = {"plugin", "expose"}
_HTTP_AUTH_KEYS = {
    "issuer",
    "audience",
    "scopes",
    "claims",
    "max_claim_bytes",
    "introspection_endpoint",
    "client_id",
    "client_secret",
}
DEFAULT_CLAIMS = ("groups",)
"""The access-token claims a caller carries when ``claims`` is not set."""
DEFAULT_MAX_CLAIM_BYTES = 4096
"""The most bytes of JSON of the carried claims, together; a claim past it is dropped."""


@dataclass(frozen=True, slots=True)
class PluginToolSelection:
    """One ``plugin_tools`` entry: expose these operations of this plugin."""

    plugin: str
    expose: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HttpAuth:
    """``[http.auth]``, and ``serve --auth-*``: the authorization server whose access tokens are accepted.

    ``issuer`` is its issuer URL (its metadata is found from it, RFC 8414 or OpenID
    discovery); ``audience`` is this server's resource URL (``https://host/mcp``), which a
    token's ``aud`` must name; ``scopes`` must all be granted; ``claims`` are the claims a
    caller carries into the audit log and the policy hooks, at most ``max_claim_bytes`` of
    JSON together. ``introspection_endpoint`` replaces the one of the issuer's metadata for
    opaque tokens (RFC 7662), which awf-mcp authenticates to as ``client_id`` with
    ``client_secret`` (else ``$AWF_MCP_AUTH_CLIENT_ID`` and ``$AWF_MCP_AUTH_CLIENT_SECRET``).
    """

    issuer: str
    audience: str
    scopes: tuple[str, ...] = ()
    claims: tuple[str, ...] = DEFAULT_CLAIMS
    max_claim_bytes: int = DEFAULT_MAX_CLAIM_BYTES
    introspection_endpoint: str | None = None
    client_id: str | None = None
    client_secret: str | None = None


def _http_url(value: Any, where: str) -> str:
    """``value`` as an http(s) URL, or a :class:`ConfigError` naming ``where``."""
    from urllib.parse import urlsplit

    if (
        not isinstance(value, str)
        or urlsplit(value).scheme not in ("http", "https")
        or not urlsplit(value).netloc
    ):
        raise ConfigError(f"{where} must be an http:// or https:// URL, not {value!r}")
    return value


def http_auth(
    table: Mapping[str, Any] | None,
    *,
    issuer: str | None = None,
    audience: str | None = None,
    scopes: tuple[str, ...] = (),
    claims: tuple[str, ...] = (),
    where: str = "[http.auth]",
) -> HttpAuth | None:
    """The :class:`HttpAuth` of a config file's ``[http.auth]`` table with the flags' values over it.

    ``None`` when neither names an issuer. The flags win; ``scopes`` and ``claims`` given
    as flags replace the file's lists.
    """
    values = dict(table or {})
    if issuer:
        values["issuer"] = issuer
    if audience:
        values["audience"] = audience
    if scopes:
        values["scopes"] = list(scopes)
    if claims:
        values["claims"] = list(claims)
    if not values:
        return None
    unknown = sorted(set(values) - _HTTP_AUTH_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_HTTP_AUTH_KEYS))
        raise _fail(f"unknown key {unknown[0]!r} in {where}; allowed: {allowed}", "UNKNOWN_KEY")
    if "issuer" not in values or "audience" not in values:
        raise ConfigError(
            "accepting access tokens needs both the issuer and the audience "
            "(--auth-issuer URL --auth-audience URL, or issuer and audience under [http.auth])"
        )
    fields: dict[str, Any] = {
        "issuer": _http_url(values["issuer"], "the issuer"),
        "audience": _http_url(values["audience"], "the audience"),
    }
    for key in ("scopes", "claims"):
        if key in values:
            fields[key] = _string_list(values[key], key, Path(where))
    if "max_claim_bytes" in values:
        size = values["max_claim_bytes"]
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 65536:
            raise ConfigError(f"max_claim_bytes in {where} must be a whole number from 0 to 65,536")
        fields["max_claim_bytes"] = size
    if values.get("introspection_endpoint") is not None:
        fields["introspection_endpoint"] = _http_url(
            values["introspection_endpoint"], "introspection_endpoint"
        )
    for key in ("client_id", "client_secret"):
        value = values.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{key} in {where} must be a non-empty string")
        fields[key] = value
    return HttpAuth(**fields)


@dataclass(frozen=True, slots=True)
class ServeOptions:
    """What the command line says, before the config file is merged in.

    Field names are the names used end to end, from the option table in
    :mod:`awf_mcp.cli.options` to :func:`load`. ``None``, ``()`` and ``False`` mean
    "not given": the config file or the default decides.
    """

    config: str | None = None
    roots: tuple[str, ...] = ()
    no_builtins: bool = False
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strict: bool = False
    call_timeout_seconds: float | None = None
    output_budget: int | None = None


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything start-up needs, after flags and file are merged."""

    roots: tuple[str, ...] = ()
    roots_explicit: bool = False
    """True when the user gave the roots (``--root``, config); else the client's roots may replace them."""
    builtins: bool = True
    only: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    renames: Mapping[str, str] = field(default_factory=dict)
    plugin_tools: tuple[PluginToolSelection, ...] | None = None
    plugin_settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    strict: bool = False
    call_timeout_seconds: float = DEFAULT_CALL_TIMEOUT_SECONDS
    output_budget: int | None = None
    servers: tuple[ServerSpec, ...] = ()
    ignored_config: IgnoredConfig | None = None
    """The config file found but not used (:mod:`awf_mcp.core.trust`), if any."""
    http_auth: Mapping[str, Any] | None = None
    """The config file's ``[http.auth]`` table, checked; :func:`http_auth` merges it with the flags."""
    sandbox: SandboxPolicy = field(default_factory=SandboxPolicy)
    """The ``[sandbox]`` table: how Bash, its jobs and stdio upstreams are contained."""
    discovery: Discovery = field(default_factory=Discovery)
    """The ``[discovery]`` table: which tools a client that loads every tool is offered."""
    shared_idle_seconds: float | None = None
    """``[shared] idle_seconds``: how long the shared server outlives its last session."""

    def settings_for(self, plugin: str) -> dict[str, Any]:
        """Plugin ``plugin``'s settings: its config table, overridden by its environment variables."""
        merged = dict(self.plugin_settings.get(plugin, {}))
        prefix = plugin_setting_variable(plugin)
        for key, value in os.environ.items():
            if key.startswith(prefix) and len(key) > len(prefix):
                merged[key[len(prefix) :].lower()] = value
        return merged


def _fail(message: str, code: str) -> ConfigError:
    return ConfigError(message, code=f"{PROXY_CODE}.{code}")


def _decode(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    if path.suffix == ".toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {path} must hold a JSON object, not {type(data).__name__}")
    return data


def _string_list(value: Any, key: str, path: Path) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{key} in {path} must be a list of strings")
    return tuple(value)


def _selections(value: Any, path: Path) -> tuple[PluginToolSelection, ...]:
    if not isinstance(value, list):
        raise ConfigError(f"plugin_tools in {path} must be a list of {{plugin, expose}} objects")
    selections = []
    for index, entry in enumerate(value):
        if not isinstance(entry, dict):
            raise ConfigError(f"plugin_tools[{index}] in {path} must be an object with plugin and expose")
        unknown = sorted(set(entry) - _SELECTION_KEYS)
        if unknown:
            raise _fail(
                f"unknown key {unknown[0]!r} in plugin_tools[{index}] of {path}; allowed: plugin, expose",
                "UNKNOWN_KEY",
            )
        plugin = entry.get("plugin")
        if not isinstance(plugin, str) or not plugin:
            raise ConfigError(f"plugin_tools[{index}].plugin in {path} must be a non-empty string")
        expose = _string_list(entry.get("expose", []), f"plugin_tools[{index}].expose", path)
        selections.append(PluginToolSelection(plugin=plugin, expose=expose))
    return tuple(selections)


def checked_budget(value: Any, where: str) -> int:
    """``value`` as an output budget in bytes, or a :class:`ConfigError` naming ``where``."""
    if isinstance(value, bool) or not isinstance(value, int) or not MIN_BUDGET <= value <= MAX_BUDGET:
        raise ConfigError(
            f"{where} must be a whole number of bytes from {MIN_BUDGET:,} to {MAX_BUDGET:,}, not {value!r}"
        )
    return value


def parse_file(path: Path, raw: bytes | None = None) -> dict[str, Any]:
    """Validate a config file (RAW: its bytes, already read); returns the :class:`Settings` fields it sets."""
    return parse_settings(_decode(path, trust.read_bounded(path) if raw is None else raw), path)


def parse_settings(data: Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Validate DATA, the parsed content of the config file PATH; returns :class:`Settings` fields it sets.

    What :func:`parse_file` checks, for a caller holding the content it is about to write.
    """
    unknown = sorted(set(data) - _PROXY_KEYS - _EXTENDED_KEYS - _SERVER_KEYS)
    if unknown:
        allowed = ", ".join(sorted(_PROXY_KEYS | _EXTENDED_KEYS | _SERVER_KEYS))
        raise _fail(f"unknown key {unknown[0]!r} in {path}; allowed keys: {allowed}", "UNKNOWN_KEY")
    base = path.resolve().parent
    fields: dict[str, Any] = {}

    if "intercept_builtins" in data:
        if not isinstance(data["intercept_builtins"], bool):
            raise ConfigError(f"intercept_builtins in {path} must be true or false")
        fields["builtins"] = data["intercept_builtins"]
    if "plugin_tools" in data:
        fields["plugin_tools"] = _selections(data["plugin_tools"], path)
    roots: list[str] = []
    if "root_dir" in data:
        if not isinstance(data["root_dir"], str) or not data["root_dir"]:
            raise ConfigError(f"root_dir in {path} must be a non-empty string")
        roots.append(data["root_dir"])
    if "roots" in data:
        roots.extend(_string_list(data["roots"], "roots", path))
    if roots:
        fields["roots"] = tuple(str((base / os.path.expanduser(root)).resolve()) for root in roots)
    for key in ("only", "exclude"):
        if key in data:
            fields[key] = _string_list(data[key], key, path)
    if "rename" in data:
        rename = data["rename"]
        if not isinstance(rename, dict) or not all(isinstance(v, str) for v in rename.values()):
            raise ConfigError(f"rename in {path} must map tool names to new names")
        fields["renames"] = dict(rename)
    if "plugins" in data:
        plugins = data["plugins"]
        if not isinstance(plugins, dict) or not all(isinstance(v, dict) for v in plugins.values()):
            raise ConfigError(f"plugins in {path} must be a table of per-plugin tables")
        fields["plugin_settings"] = {name: dict(table) for name, table in plugins.items()}
    if "call_timeout_seconds" in data:
        timeout = data["call_timeout_seconds"]
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise ConfigError(f"call_timeout_seconds in {path} must be a positive number")
        fields["call_timeout_seconds"] = float(timeout)
    if "output_budget" in data:
        fields["output_budget"] = checked_budget(data["output_budget"], f"output_budget in {path}")
    fields["servers"] = servers.parse(data, str(path))
    try:
        if "sandbox" in data:
            fields["sandbox"] = policy_from(parse_table(data["sandbox"], f"[sandbox] of {path}"))
        if "discovery" in data:
            fields["discovery"] = discovery.parse_table(data["discovery"], f"[discovery] of {path}")
        if "shared" in data:
            fields["shared_idle_seconds"] = _shared_idle_seconds(data["shared"], f"[shared] of {path}")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if "http" in data:
        table = data["http"]
        if (
            not isinstance(table, dict)
            or set(table) - {"auth"}
            or not isinstance(table.get("auth", {}), dict)
        ):
            raise _fail(f"http in {path} may hold one table, [http.auth]", "UNKNOWN_KEY")
        if table.get("auth"):
            http_auth(table["auth"], where=f"[http.auth] of {path}")  # checked now, merged with flags later
            fields["http_auth"] = dict(table["auth"])
    if "strict" in data:
        if not isinstance(data["strict"], bool):
            raise ConfigError(f"strict in {path} must be true or false")
        fields["strict"] = data["strict"]

    if fields.get("builtins") is False and not fields.get("plugin_tools") and not fields["servers"]:
        raise _fail(
            f"{path} turns the built-ins off (intercept_builtins: false) and lists no plugin_tools: "
            "there would be nothing to serve",
            "EMPTY_PROXY",
        )
    return fields


def _shared_idle_seconds(table: object, where: str) -> float | None:
    """The checked ``idle_seconds`` of a ``[shared]`` table (the only key it has)."""
    if not isinstance(table, Mapping):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - {"idle_seconds"})
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} in {where}; allowed keys: idle_seconds")
    seconds = table.get("idle_seconds")
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= 86400:
        raise ValueError(f"idle_seconds in {where} must be a number of seconds from 0 to 86400")
    return float(seconds)


@dataclass(frozen=True, slots=True)
class IgnoredConfig:
    """A config file that was found but not used, because the user has not approved it."""

    verdict: trust.Verdict
    would: tuple[str, ...]
    """What it would do (:func:`describe`), or why it could not even be read."""

    @property
    def path(self) -> Path:
        return self.verdict.path

    @property
    def fix(self) -> str:
        return f"awf-mcp trust {shlex.quote(str(self.path))}"

    @property
    def notice(self) -> str:
        """One sentence: what was ignored, why, and the command that approves it."""
        would = "; ".join(self.would[:3]) + ("; ..." if len(self.would) > 3 else "")
        what = f" (it would {would})" if would else ""
        return (
            f"ignoring {self.path}{what}: {self.verdict.reason}. Only the built-in tools are served, "
            f"in the working directory. To review and approve it: {self.fix}"
        )


_noticed: set[str] = set()


def _notice_once(ignored: IgnoredConfig) -> None:
    """Say once per process, on stderr, that a config file was ignored."""
    key = f"{ignored.path}\0{ignored.verdict.sha256}"
    if key in _noticed:
        return
    _noticed.add(key)
    log = logging.getLogger("awf_mcp")
    if log.isEnabledFor(logging.WARNING):
        log.warning("%s", ignored.notice)
    else:  # a command that keeps its own log quiet still says this
        print(f"awf-mcp: warning: {inert_text(ignored.notice)}", file=sys.stderr)


def find_config(options: ServeOptions, workdir: Path) -> tuple[Path, bool] | None:
    """The config file ``load`` reads, and whether it was named (``--config``) rather than found."""
    if options.config:
        return workdir / os.path.expanduser(options.config), True
    found = workdir / DEFAULT_CONFIG_NAME
    return (found, False) if found.is_file() else None


def executed_files(fields: Mapping[str, Any], path: Path) -> dict[str, str]:
    """The files inside the project of config file PATH that its stdio servers run, with their
    SHA-256: a ``command``, or an argument, that names a regular file there (relative to the
    config's directory or the server's ``cwd``), as ``./scripts/run.sh`` or ``python srv.py`` do."""
    base = path.resolve().parent
    project = trust.project_of(base).resolve()
    found: dict[str, str] = {}
    for spec in fields.get("servers", ()):
        if spec.transport != "stdio" or not spec.enabled:
            continue
        where = {base, (base / os.path.expanduser(spec.cwd)).resolve()} if spec.cwd else {base}
        for word in (spec.command, *spec.args):
            if not word or word.startswith("-"):
                continue
            for directory in where:
                candidate = (directory / os.path.expanduser(word)).resolve()
                if candidate != project and project in candidate.parents:
                    sha = trust.file_digest(candidate)
                    if sha is not None:
                        found[str(candidate)] = sha
    return found


def activate_sandbox(settings: Settings, options: ServeOptions, workdir: Path) -> None:
    """Make ``settings``' ``[sandbox]`` the process's policy (:func:`load` does, unless ``quiet``)."""
    found = find_config(options, workdir)
    own = found is not None and trust.is_users_own(found[0], named=found[1], cwd=workdir)
    activate(settings.sandbox, settings.roots, str(found[0].resolve()) if found and own else None)


def load(options: ServeOptions | None = None, *, cwd: str | None = None, quiet: bool = False) -> Settings:
    """Merge the config file (``options.config``, else ``./awf-mcp.toml`` if present) with the flags.

    Flags win over the file; ``only`` and ``exclude`` add to the file's lists. Relative
    paths on the command line are relative to ``cwd`` (default: the working directory).
    A file that is not the user's own and not approved (:mod:`awf_mcp.core.trust`) is not
    used at all: it is described in :attr:`Settings.ignored_config` and on stderr, once.
    ``quiet`` (a reload, :mod:`awf_mcp.core.reload`) says nothing and activates no sandbox policy.
    """
    workdir = Path(cwd or os.getcwd())
    settings = Settings()
    options = options or ServeOptions()
    config_file = find_config(options, workdir)
    if config_file is not None:
        path, named = config_file
        raw = trust.read_bounded(path)
        fields: dict[str, Any] | ConfigError
        try:
            fields = parse_file(path, raw)
        except ConfigError as exc:
            fields = exc
        executed = executed_files(fields, path) if isinstance(fields, dict) else None
        verdict = trust.verdict(path, raw, named=named, cwd=workdir, executed=executed)
        if verdict.trusted:
            if isinstance(fields, ConfigError):
                raise fields
            settings = replace(settings, **fields)
        else:
            would = tuple(describe(fields)) if isinstance(fields, dict) else (f"not even load: {fields}",)
            ignored = IgnoredConfig(verdict, would)
            settings = replace(settings, ignored_config=ignored)
            if not quiet:
                _notice_once(ignored)

    overrides: dict[str, Any] = {}
    if options.roots:
        overrides["roots"] = tuple(str((workdir / os.path.expanduser(r)).resolve()) for r in options.roots)
    elif not settings.roots:
        overrides["roots"] = (str(workdir.resolve()),)
    overrides["roots_explicit"] = bool(options.roots or settings.roots)
    if options.no_builtins:
        overrides["builtins"] = False
    if options.only:
        overrides["only"] = settings.only + tuple(options.only)
    if options.exclude:
        overrides["exclude"] = settings.exclude + tuple(options.exclude)
    if options.strict:
        overrides["strict"] = True
    timeout = options.call_timeout_seconds
    if timeout is not None:
        if timeout <= 0:
            raise ConfigError(f"--call-timeout must be a positive number of seconds, not {timeout}")
        overrides["call_timeout_seconds"] = float(timeout)
    if options.output_budget is not None:
        overrides["output_budget"] = checked_budget(options.output_budget, "--output-budget")
    settings = replace(settings, **overrides)

    for root in settings.roots:
        if not Path(root).is_dir():
            raise ConfigError(f"root directory {root} does not exist or is not a directory; pass --root DIR")
    if not quiet:
        activate_sandbox(settings, options, workdir)
    return settings
