"""The agents' own configuration: what ``awf-mcp config``, ``servers import`` and
``--replace-native`` read and write in Claude Code's, Gemini CLI's, Codex's and the editors' files.

- :mod:`.clientconfig` writes awf-mcp's entry into a client's file, with :mod:`.clientprofiles`
  (one profile per client: where its file is, which format, which key) and :mod:`.clientfiles`
  (where each client's files are, and the readers of what they hold);
- :mod:`.editors` writes those files all or nothing, with backups; the edits that keep what the
  user wrote are :mod:`.jsonedit` (JSON; JSONC spliced by :mod:`.jsonc`) and :mod:`.tomledit`
  (TOML, through ``tomlkit``);
- :mod:`.nativetools` turns a client's own tools off for ``--replace-native``;
- :mod:`.serverimport` reads the MCP servers a client already has, for ``servers import``.

Imports the public face, :mod:`awf_mcp.processes` (a client's environment) and ``tomlkit``; nothing above.
"""
