"""What checking an upstream's listing against its pins costs: one command, figures on stdout.

Run from the repository root: ``PYTHONPATH=. python bench/pins.py``. For listings of 10, 100
and 1,000 tools (descriptions of 500 characters, a three-property schema), in a state
directory of its own: the first listing (every tool pinned), an unchanged listing (the
common case, at every start and ``tools/list_changed``), and a listing in which every tool
changed (every one held and described); the median of 5 runs each, and the record's size.
"""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

from awf_mcp.core import pins
from awf_mcp.core.servers import ServerSpec
from awf_mcp.ports import ToolAnnotations, ToolDefinition

SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "depth": {"type": "integer"}, "all": {"type": "boolean"}},
    "required": ["path"],
}


def listing(count: int, text: str) -> list[ToolDefinition]:
    return [
        ToolDefinition(
            f"tool{n}", f"{text} {n} " + "x" * 480, SCHEMA, annotations=ToolAnnotations(read_only=True)
        )
        for n in range(count)
    ]


def timed(spec: ServerSpec, tools: list[ToolDefinition]) -> float:
    started = time.perf_counter()
    pins.admit_tools(spec, tools)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    logging.getLogger("awf_mcp").setLevel(logging.CRITICAL)
    print(f"{'tools':>6} {'first ms':>9} {'same ms':>8} {'changed ms':>11} {'record KiB':>11}")
    for count in (10, 100, 1000):
        first, same, changed = [], [], []
        for run in range(5):
            with tempfile.TemporaryDirectory() as state:
                os.environ["XDG_STATE_HOME"] = state
                spec = ServerSpec(name=f"bench{run}", command="bench", args=(str(count),))
                first.append(timed(spec, listing(count, "Original")))
                same.append(timed(spec, listing(count, "Original")))
                changed.append(timed(spec, listing(count, "Changed")))
                size = (Path(state) / "awf-mcp" / "pins.json").stat().st_size / 1024
        medians = [statistics.median(v) for v in (first, same, changed)]
        print(f"{count:>6} {medians[0]:>9.1f} {medians[1]:>8.1f} {medians[2]:>11.1f} {size:>11.0f}")


if __name__ == "__main__":
    main()
