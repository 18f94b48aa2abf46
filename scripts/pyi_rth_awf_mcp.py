"""PyInstaller runtime hook of the single executable: runs before ``awf_mcp.__main__``.

``build.spec`` packs what the bundle only reads into one zip at its top, ``packed.zip``: the
metadata of every bundled distribution (``METADATA``, ``entry_points.txt``, the licences),
instead of a ``.dist-info`` directory each, and the packages that are only data read through
``importlib.resources`` (``jsonschema_specifications``). This puts the zip on ``sys.path``,
last: ``importlib.metadata`` (and its backport) find the distributions in it as in a
directory, so entry points, versions and ``plugins install`` see what was bundled, and
zipimport serves those packages and their files. Every other module is found before it.
"""

import os
import sys

_archive = os.path.join(getattr(sys, "_MEIPASS", os.path.dirname(sys.executable)), "packed.zip")
if os.path.isfile(_archive) and _archive not in sys.path:
    sys.path.append(_archive)
