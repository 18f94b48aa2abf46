"""The sandbox policy: one object for the file tools, Bash and its jobs, and stdio upstreams.

Contract
--------
* :class:`SandboxPolicy` is what ``[sandbox]`` (and ``[servers.NAME.sandbox]``) says:
  ``mode`` (``contained``, the default, or ``off``), ``network`` (hosts reachable through
  awf-mcp's proxy; ``[]`` none, ``["*"]`` all), ``deny_read``, ``allow_write`` and
  ``env_pass``. :func:`parse_table` checks a table; :meth:`SandboxPolicy.for_server` merges a
  server's own table over the user's (its ``mode`` and ``network`` replace, its lists add).
* :func:`activate` makes a policy and the roots the one this process enforces; :func:`active`
  returns it, and :func:`own_config` the user's own config file it came from, if any (where a
  host the user always allows is written). Every process awf-mcp starts
  (:mod:`awf_mcp.processes.containment.plan`) and every path the file tools touch
  (:func:`read_denied`, :func:`write_protected`) is judged by it, so no setting can widen one
  of them and leave the others behind.
* :data:`BUILTIN_DENY_READ` is the credential stores nothing contained may read;
  :data:`PACKAGE_CACHES` the caches builds write to; :data:`PROTECTED_IN_ROOTS` what stays
  read-only inside a root, because it runs later, outside any sandbox (git hooks and config) or
  governs awf-mcp itself.
* :func:`contained_environment` is the environment a contained process gets: no variable whose
  name holds ``KEY``, ``SECRET``, ``TOKEN``, ``PASSWORD`` or ``CREDENTIAL`` (any case) unless
  ``env_pass`` names it, and no proxy or agent-socket variable of the user's.

Standard library only.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

MODES = ("contained", "off")
KEYS = ("mode", "network", "deny_read", "allow_write", "env_pass")

BUILTIN_DENY_READ = (
    "~/.ssh",
    "~/.aws",
    "~/.azure",
    "~/.config/gcloud",
    "~/.kube",
    "~/.docker/config.json",
    "~/.netrc",
    "~/.gnupg",
    "~/.config/gh",
    "~/.npmrc",
    "~/.pypirc",
    "~/.git-credentials",
    "~/.config/git/credentials",
    "~/.password-store",
    "~/.vault-token",
    "~/.terraform.d/credentials.tfrc.json",
    "~/.config/hub",
    "~/.cargo/credentials.toml",
    "~/.gem/credentials",
    "~/.local/share/keyrings",
    "~/.mozilla",
    "~/.thunderbird",
    "~/.config/google-chrome",
    "~/.config/chromium",
    "~/.config/BraveSoftware",
    "~/.config/microsoft-edge",
    "~/.config/vivaldi",
    "~/.claude/.credentials.json",
    "~/.codex/auth.json",
    "~/.gemini/oauth_creds.json",
    "~/.config/awf-mcp",
)
"""Credential stores and browser profiles; awf-mcp's own state directory is added by :func:`deny_read`."""

PACKAGE_CACHES = (
    "~/.npm",
    "~/.cache/pip",
    "~/.cache/uv",
    "~/.cache/yarn",
    "~/.cache/pnpm",
    "~/.cache/go-build",
    "~/go/pkg/mod",
    "~/.cargo/registry",
    "~/.cargo/git",
    "~/.m2/repository",
    "~/.gradle/caches",
)
"""Writable for every contained process: what ``npm ci``, ``pip install`` and builds fill."""

PROTECTED_IN_ROOTS = (".git/hooks", ".git/config", "awf-mcp.toml")
"""Read-only inside every root, for Bash, upstreams and the Write and Edit tools alike."""

_HOST_PATTERN = re.compile(r"(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?")
SECRET_NAME = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|CREDENTIAL", re.IGNORECASE)
_USER_NETWORK_VARIABLES = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "FTP_PROXY",
    "SSH_AUTH_SOCK",
    "DBUS_SESSION_BUS_ADDRESS",
)


@dataclass(frozen=True, slots=True)
class SandboxPolicy:
    """A ``[sandbox]`` table, checked. ``network=None``: the default of the process's kind."""

    mode: str = "contained"
    network: tuple[str, ...] | None = None
    deny_read: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    env_pass: tuple[str, ...] = ()

    @property
    def contained(self) -> bool:
        """Whether processes run contained (``mode = "contained"``)."""
        return self.mode != "off"

    def for_server(self, table: Mapping[str, Any] | None) -> SandboxPolicy:
        """This policy with a server's own ``[servers.NAME.sandbox]`` (checked) over it."""
        if not table:
            return self
        return replace(
            self,
            mode=table.get("mode", self.mode),
            network=tuple(table["network"]) if "network" in table else self.network,
            deny_read=self.deny_read + tuple(table.get("deny_read", ())),
            allow_write=self.allow_write + tuple(table.get("allow_write", ())),
            env_pass=self.env_pass + tuple(table.get("env_pass", ())),
        )


def parse_table(table: object, where: str) -> dict[str, Any]:
    """The checked content of a ``[sandbox]`` table; :class:`ValueError` names what is wrong."""
    if not isinstance(table, Mapping):
        raise ValueError(f"{where} must be a table")
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r} in {where}; allowed keys: {', '.join(KEYS)}")
    checked: dict[str, Any] = {}
    if "mode" in table:
        if table["mode"] not in MODES:
            raise ValueError(f'mode in {where} must be "contained" or "off", not {table["mode"]!r}')
        checked["mode"] = table["mode"]
    for key in KEYS[1:]:
        if key in table:
            value = table[key]
            if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
                raise ValueError(f"{key} in {where} must be a list of non-empty strings")
            checked[key] = tuple(value)
    for host in checked.get("network", ()):
        if host != "*" and not re.fullmatch(
            r"(\*\.)?[A-Za-z0-9.-]+(:\d{1,5})?|\[[0-9A-Fa-f:.]+\](:\d{1,5})?", host
        ):
            raise ValueError(f"network in {where}: {host!r} is not a host, *.domain or host:port")
    return checked


def policy_from(table: Mapping[str, Any] | None) -> SandboxPolicy:
    """The policy a checked ``[sandbox]`` table sets (defaults for what it leaves out)."""
    return SandboxPolicy().for_server(table)


@dataclass(slots=True)
class _Active:
    policy: SandboxPolicy = field(default_factory=SandboxPolicy)
    roots: tuple[str, ...] = ()
    own_config: str | None = None


_active = _Active()


def activate(policy: SandboxPolicy, roots: Sequence[str], own_config: str | None = None) -> None:
    """Make ``policy``, with ``roots``, the policy of this process (see the module docstring);
    ``own_config``: the user's own config file it was read from (not a project's)."""
    _active.policy = policy
    _active.roots = tuple(os.path.realpath(root) for root in roots)
    _active.own_config = own_config


def own_config() -> str | None:
    """The user's own config file the active policy was read from; ``None``: none, or a project's."""
    return _active.own_config


def active() -> SandboxPolicy:
    """The policy this process enforces (the default until :func:`activate`)."""
    return _active.policy


def active_roots() -> tuple[str, ...]:
    """The roots :func:`activate` was given."""
    return _active.roots


def state_directories(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """awf-mcp's own state: tokens, OAuth store, trust records (``$XDG_STATE_HOME/awf-mcp``)."""
    env = os.environ if env is None else env
    state = env.get("XDG_STATE_HOME", "")
    base = state if os.path.isabs(os.path.expanduser(state)) else "~/.local/state"
    config = env.get("XDG_CONFIG_HOME", "")
    found = [os.path.join(os.path.expanduser(base), "awf-mcp")]
    if os.path.isabs(os.path.expanduser(config)):
        found.append(os.path.join(os.path.expanduser(config), "awf-mcp"))
    return tuple(found)


def expand(paths: Sequence[str]) -> tuple[str, ...]:
    """``paths`` with ``~`` expanded and every symbolic link resolved, each once."""
    seen: list[str] = []
    for path in paths:
        real = os.path.realpath(os.path.expanduser(path))
        if os.path.isabs(real) and real not in seen:
            seen.append(real)
    return tuple(seen)


@functools.lru_cache(maxsize=8)
def deny_read(policy: SandboxPolicy) -> tuple[str, ...]:
    """Every path nothing contained may read: the built-in list, awf-mcp's state, the user's own.

    Both the path as written and where its links lead are listed, so a store that is a link
    is hidden under either name. Computed once per policy (``HOME`` is read then).
    """
    written = (*BUILTIN_DENY_READ, *state_directories(), *policy.deny_read)
    literal = [os.path.abspath(os.path.expanduser(path)) for path in written]
    return tuple(dict.fromkeys([*literal, *expand(written)]))


@functools.lru_cache(maxsize=8)
def _denied_prefixes(policy: SandboxPolicy) -> tuple[frozenset[str], tuple[str, ...]]:
    paths = deny_read(policy)
    return frozenset(paths), tuple(path.rstrip("/") + "/" for path in paths)


def within(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies beneath it (both absolute, resolved)."""
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def read_denied(real_path: str, policy: SandboxPolicy | None = None) -> str | None:
    """Why a file tool may not read ``real_path`` (resolved), or ``None``."""
    policy = policy or active()
    if not policy.contained:
        return None
    exact, prefixes = _denied_prefixes(policy)
    if real_path in exact or real_path.startswith(prefixes):
        return "it is on the sandbox's deny list (a credential store, or [sandbox] deny_read)"
    return None


def write_protected(real_path: str, roots: Sequence[str], policy: SandboxPolicy | None = None) -> str | None:
    """Why nothing may write ``real_path`` (resolved) inside ``roots``, or ``None``."""
    policy = policy or active()
    if not policy.contained:
        return None
    for root in roots:
        for protected in PROTECTED_IN_ROOTS:
            if within(real_path, os.path.join(root, protected)):
                return (
                    f"{protected} stays read-only inside the root: it runs later, outside any sandbox, "
                    "or governs awf-mcp itself"
                )
    return read_denied(real_path, policy)


def contained_environment(
    env: Mapping[str, str], policy: SandboxPolicy, named: Sequence[str] = ()
) -> dict[str, str]:
    """``env`` without secrets and the user's proxy and agent variables (see the module docstring).

    ``named``: variables a server's own ``env`` table sets, which pass whatever their name.
    """
    passed = {*policy.env_pass, *named}
    blocked = {name.upper() for name in _USER_NETWORK_VARIABLES}
    return {
        name: value
        for name, value in env.items()
        if name in passed or (not SECRET_NAME.search(name) and name.upper() not in blocked)
    }
