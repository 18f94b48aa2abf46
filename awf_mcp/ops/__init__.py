"""Operations around the server: the plugin installer and directories, client configuration,
the plugin scaffold, and the environment of child processes.

- installer: :mod:`.installer` (the sequence) with :mod:`.fetch`, :mod:`.resolve`,
  :mod:`.piprunner` and :mod:`.manifest`; :mod:`.plugindirs` says where plugins live.
- client configuration: :mod:`.clientconfig` with :mod:`.clientprofiles` (one profile per
  client), :mod:`.nativetools` (``--replace-native``) and :mod:`.editors`.
- :mod:`.scaffold` (new plugin projects), :mod:`.childenv` (child process environments).

Bottom layer: it imports only the public face (:mod:`awf_mcp.errors`, :mod:`awf_mcp.ports`,
:mod:`awf_mcp.hookspecs` for the project's name).
"""
