"""The agents' own configuration: what ``awf-mcp config``, ``servers import`` and
``--replace-native`` read and write in Claude Code's, Gemini CLI's, Codex's and the editors' files.

- :mod:`.clientconfig` writes awf-mcp's entry into a client's file, with :mod:`.clientprofiles`
  (one profile per client: where its file is, which format, which key);
- :mod:`.editors` edits those files (TOML, JSON, JSONC) keeping what the user wrote;
- :mod:`.nativetools` turns a client's own tools off for ``--replace-native``;
- :mod:`.serverimport` reads the MCP servers a client already has, for ``servers import``.

Imports the public face and :mod:`awf_mcp.processes` (a client's environment); nothing above.
"""
