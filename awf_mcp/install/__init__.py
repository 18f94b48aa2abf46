"""Plugins and the build: how a plugin gets installed, and what this install of awf-mcp is.

- :mod:`.installer` is the sequence, with :mod:`.fetch` (a source into a wheel),
  :mod:`.resolve` (what pip would install), :mod:`.piprunner` (pip itself) and
  :mod:`.manifest` (what is installed, and from where); :mod:`.plugindirs` says where plugins
  live;
- :mod:`.scaffold` writes a new plugin project from ``templates/``;
- :mod:`.buildinfo` describes the build: commit, platform, C library, one file or not.

Imports the public face and :mod:`awf_mcp.processes` (pip's environment); nothing above.
"""
