"""What doctor's checks look at: :class:`Context`, whose :meth:`Context.loaded` starts the plugins
and servers once for every check (:class:`Loaded`).

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from awf_mcp.cli.doctor.report import Finding
from awf_mcp.core.config import ServeOptions

if TYPE_CHECKING:
    from awf_mcp.core.config import Settings
    from awf_mcp.core.plugins import PluginRecord
    from awf_mcp.core.registry import Registry


DEFAULT_TIMEOUT_SECONDS = 10.0
"""How long a client's awf entry may take to start and answer ``tools/list``."""


@dataclass
class Loaded:
    """What ``serve`` would start with: plugin and server records, and the registry (or why not)."""

    plugins: list[PluginRecord]
    servers: list[PluginRecord]
    registry: Registry | None
    plugin_error: str = ""
    registry_error: str = ""


class Context:
    """What the checks look at; :meth:`loaded` starts plugins and servers once for all checks."""

    def __init__(
        self,
        *,
        cwd: Path,
        home: Path,
        env: Mapping[str, str],
        options: ServeOptions,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        frozen: bool | None = None,
    ) -> None:
        self.cwd = cwd
        self.home = home
        self.env = env
        self.options = options
        self.timeout = timeout
        self.frozen = bool(getattr(sys, "frozen", False)) if frozen is None else frozen
        self.settings: Settings | None = None
        self.settings_error = ""
        self._loaded: Loaded | None = None
        self._providers: list[Any] = []
        self._lock: Any = None

    def load_settings(self) -> None:
        """Load the settings as ``serve`` does; remember the error sentence when they do not load."""
        from awf_mcp.core import config
        from awf_mcp.errors import AwfError

        try:
            self.settings = config.load(self.options, cwd=str(self.cwd))
        except AwfError as exc:
            self.settings_error = str(exc)

    def config_file(self) -> Path | None:
        """The config file the settings come from, if any (found as ``serve`` finds it)."""
        from awf_mcp.core.config import find_config

        found = find_config(self.options, self.cwd)
        return found[0].absolute() if found else None

    async def loaded(self) -> Loaded | None:
        """Plugins loaded, servers started and the registry built, once (None: no settings)."""
        import anyio

        if self.settings is None:
            return None
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._loaded is None:
                self._loaded = await self._load(self.settings)
        return self._loaded

    async def _load(self, settings: Settings) -> Loaded:
        from dataclasses import replace

        from awf_mcp.cli import runtime
        from awf_mcp.core.plugins import load
        from awf_mcp.core.registry import build
        from awf_mcp.errors import AwfError, describe_exception

        # Not strict while looking: every failure is reported, not only the first.
        lenient = replace(settings, strict=False)
        plugins: list[PluginRecord] = []
        plugin_error = ""
        try:
            loaded = load(lenient)
            plugins = loaded.records
            self._providers += loaded.providers
        except AwfError as exc:
            plugin_error = str(exc)
        runtime.announce_servers(lenient)
        servers = await runtime.start_servers(lenient)
        self._providers += [entry.provider for record in servers for entry in record.providers]
        registry = None
        registry_error = ""
        if not plugin_error:
            try:
                registry = build([*plugins, *servers], lenient)
            except Exception as exc:
                registry_error = describe_exception(exc)
        return Loaded(plugins, servers, registry, plugin_error, registry_error)

    async def close(self) -> None:
        """Close every provider the checks started."""
        from awf_mcp.cli import runtime

        providers, self._providers = self._providers, []
        await runtime.close_providers(providers)


Check = Callable[[Context], Awaitable[list[Finding]]]
