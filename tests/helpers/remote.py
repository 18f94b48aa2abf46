"""A loopback MCP server on HTTP for tests: ``tests/upstreams/remote_upstream.py`` as a subprocess."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "upstreams" / "remote_upstream.py"


@contextlib.contextmanager
def remote_upstream(*args: str) -> Iterator[str]:
    """Run ``remote_upstream.py ARGS...``; yield its base URL (``http://127.0.0.1:<port>``)."""
    process = subprocess.Popen(
        [sys.executable, str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().decode()
        assert line.startswith("port "), f"the test upstream did not start: {line!r}"
        yield f"http://127.0.0.1:{int(line.split()[1])}"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
