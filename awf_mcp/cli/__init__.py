"""The command line: the entry point (a fast path for ``serve``), the Typer commands, the runtime.

Top layer: it may import every other layer; nothing imports it.
"""
