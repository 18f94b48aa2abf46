"""awf-mcp's own state on disk: the state directory, tokens, keys and private files.

- :mod:`.statestore` places and locks the state directory;
- :mod:`.tokenstore` keeps upstream OAuth tokens, :mod:`.httptoken` the HTTP serve's bearer
  token, :mod:`.statekey` the key that signs state handed to clients;
- :mod:`.privatefile` writes a file only its owner can read, atomically.

Standard library only, plus the public face.
"""
