"""The application core: configuration, plugin loading, the registry, the call path, observability.

It speaks only the domain types of :mod:`awf_mcp.ports`; it never imports the SDK
(:mod:`awf_mcp.wire`), the command line or the built-in tools.
"""
