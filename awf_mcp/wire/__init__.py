"""The protocol edge: the SDK server and client adapters, and the stdio framing under them.

Only its two adapters, :mod:`~awf_mcp.wire.server` and :mod:`~awf_mcp.wire.client`, import
the MCP SDK (``mcp``, ``mcp_types``).
"""
