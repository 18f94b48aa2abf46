"""The protocol edge: the SDK server and client adapters, and the stdio framing under them.

Only its SDK adapters import the MCP SDK (``mcp``, ``mcp_types``): the server side
(:mod:`~awf_mcp.wire.server` and, beside it, :mod:`~awf_mcp.wire.mapping`,
:mod:`~awf_mcp.wire.channel`, :mod:`~awf_mcp.wire.changes`, :mod:`~awf_mcp.wire.offerings`,
:mod:`~awf_mcp.wire.stdio`, :mod:`~awf_mcp.wire.http`) and the client side (:mod:`~awf_mcp.wire.client`).
"""
