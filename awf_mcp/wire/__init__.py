"""The protocol edge: the SDK server and client adapters, and the stdio framing under them.

Only its SDK adapters import the MCP SDK (``mcp``, ``mcp_types``):

* the server side: :mod:`~awf_mcp.wire.server` and, beside it, :mod:`~awf_mcp.wire.mapping`,
  :mod:`~awf_mcp.wire.channel`, :mod:`~awf_mcp.wire.changes`, :mod:`~awf_mcp.wire.offerings`,
  :mod:`~awf_mcp.wire.replay`, the transports :mod:`~awf_mcp.wire.stdio` and
  :mod:`~awf_mcp.wire.http` (which take a :class:`~awf_mcp.wire.served.ServedServer`), and the
  HTTP callers' checks :mod:`~awf_mcp.wire.httpauth` and :mod:`~awf_mcp.wire.httptokens`;
* the client side: :mod:`~awf_mcp.wire.client` and, beside it, :mod:`~awf_mcp.wire.clientsession`,
  :mod:`~awf_mcp.wire.clientmapping`, :mod:`~awf_mcp.wire.clientstdio`,
  :mod:`~awf_mcp.wire.clienthttp`, and the SDK's OAuth client in :mod:`~awf_mcp.wire.oauth` and
  :mod:`~awf_mcp.wire.oauthsignin`.

:mod:`~awf_mcp.wire.framing`, :mod:`~awf_mcp.wire.httpguard`, :mod:`~awf_mcp.wire.health` and
:mod:`~awf_mcp.wire.asgi` import no SDK.
"""
