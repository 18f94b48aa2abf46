"""Operations around the server: the plugin installer and directories, client configuration,
the plugin scaffold, and the environment of child processes.

Bottom layer: it imports only the public face (:mod:`awf_mcp.errors`, :mod:`awf_mcp.ports`).
"""
