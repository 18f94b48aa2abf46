"""Starting every configured server at once, and what their records carry for the rest.

See :mod:`awf_mcp.core.upstream` for the contract.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import anyio

from awf_mcp.core.plugins import PluginRecord, ProviderTools
from awf_mcp.core.servers import ServerSpec
from awf_mcp.core.upstream.listing import definition_share, text_bytes
from awf_mcp.core.upstream.provider import MAX_RELAYED_INSTRUCTIONS_BYTES, UpstreamProvider
from awf_mcp.core.upstream.session import (
    NO_OFFER,
    ClientOffer,
    Connect,
    SignIn,
    UpstreamFailure,
    UpstreamNeedsSignIn,
)
from awf_mcp.errors import PluginError

log = logging.getLogger("awf_mcp.upstream")


def instructions(records: Sequence[PluginRecord]) -> str | None:
    """The served upstreams' own ``instructions``, each under its server's name, for awf-mcp's."""
    parts = []
    total = 0
    for record in records:
        for entry in record.providers if record.ok else ():
            provider = entry.provider
            if isinstance(provider, UpstreamProvider) and provider.instructions:
                text = provider.instructions.strip()
                part = f"## Server '{record.name}' (tools {record.name}_*)\n\n{text}"
                total += text_bytes(part)
                if total > MAX_RELAYED_INSTRUCTIONS_BYTES:
                    sentence = (
                        f"its instructions are left out: with those of the servers before it they pass the "
                        f"{MAX_RELAYED_INSTRUCTIONS_BYTES:,} bytes awf-mcp relays"
                    )
                    provider.left_out.append(sentence)
                    log.warning("server '%s': %s", record.name, sentence)
                    total -= text_bytes(part)
                    continue
                parts.append(part)
    if not parts:
        return None
    return "Instructions of the upstream MCP servers whose tools this server relays:\n\n" + "\n\n".join(parts)


def report_failed_server(record: PluginRecord) -> None:
    """The one stderr line for a server that did not start."""
    log.warning("server '%s' not served: %s", record.name, record.status.removeprefix("failed: "))


async def start_all(
    specs: Sequence[ServerSpec],
    connect: Connect,
    *,
    roots: Sequence[str] = (),
    strict: bool = False,
    on_failure: Callable[[PluginRecord], None] | None = report_failed_server,
    offer: ClientOffer = NO_OFFER,
    sign_in: SignIn | None = None,
) -> list[PluginRecord]:
    """Start every enabled server concurrently, advertising ``offer``; one record per server (see the
    module docstring). With ``sign_in``, a server that needs sign-in is offered to an agent that
    declared URL elicitation as its sign-in tool (:mod:`~awf_mcp.core.upstream.signin`)."""
    records: list[PluginRecord] = []

    async def start_one(record: PluginRecord, provider: UpstreamProvider) -> None:
        try:
            tools = await provider.start()
        except UpstreamNeedsSignIn as exc:
            if not provider.can_sign_in_through_agent():
                record.fail(str(exc))
                return
            tools = provider.offer_sign_in(str(exc).removeprefix("the handshake failed: "))
        except UpstreamFailure as exc:
            record.fail(str(exc))
            return
        record.providers.append(ProviderTools(provider=provider, tools=tools))

    share = definition_share(sum(1 for spec in specs if spec.enabled and not spec.problem))
    async with anyio.create_task_group() as group:
        for spec in specs:
            record = PluginRecord(name=spec.name, source=spec.source, distribution=f"{spec.transport} server")
            records.append(record)
            if not spec.enabled:
                record.status = "disabled"
            elif spec.problem:
                record.fail(spec.problem)
            else:
                provider = UpstreamProvider(
                    spec, connect, roots=roots, offer=offer, definition_bytes=share, sign_in=sign_in
                )
                group.start_soon(start_one, record, provider)
    failed = [record for record in records if not record.ok and record.status != "disabled"]
    if failed and strict:
        for record in records:
            for entry in record.providers:
                await entry.provider.close()  # type: ignore[misc]
        first = failed[0]
        raise PluginError(f"server '{first.name}' failed to start: {first.status.removeprefix('failed: ')}")
    if on_failure is not None:
        for record in failed:
            on_failure(record)
    return records


@contextlib.asynccontextmanager
async def serving(*args: Any, **kwargs: Any) -> AsyncIterator[list[PluginRecord]]:
    """:func:`start_all`, closing every started provider on exit (for one-shot commands)."""
    records = await start_all(*args, **kwargs)
    try:
        yield records
    finally:
        for record in records:
            for entry in record.providers:
                await entry.provider.close()  # type: ignore[misc]
