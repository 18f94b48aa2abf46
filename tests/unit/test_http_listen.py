"""The HTTP listener: its connections send each answer at once (TCP_NODELAY)."""

from __future__ import annotations

import asyncio
import socket

from awf_mcp.wire.http import listen


def test_connections_of_the_listener_have_nagle_off() -> None:
    """Without TCP_NODELAY an answer's body waits for the client's delayed ACK of its headers."""

    async def accepted_nodelay() -> int:
        seen: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Record(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                seen.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        listener = listen("127.0.0.1", 0)
        server = await asyncio.get_running_loop().create_server(Record, sock=listener)
        async with server:
            _, writer = await asyncio.open_connection(*listener.getsockname()[:2])
            value = await asyncio.wait_for(seen, 10)
            writer.close()
        return value

    assert asyncio.run(accepted_nodelay()) != 0
