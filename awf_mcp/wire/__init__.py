"""The protocol edge: the SDK server adapter and the stdio framing under it.

The only package that imports the MCP SDK (``mcp``, ``mcp_types``).
"""
