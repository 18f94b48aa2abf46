"""The escape corpus (tests/data/escape_corpus.json): the world it needs and the calls it makes.

One corpus serves both the in-process sandbox tests (tests/test_sandbox.py) and
the end-to-end ones (tests/e2e/test_escapes.py). :func:`build_world` creates
the directories, files and symbolic links the data file describes below a
temporary directory; :func:`escape_paths` fills the placeholders in;
:func:`refused_calls` and :func:`glob_pattern_calls` turn one path into the tool
calls that feed it to each path-taking argument; :func:`leaks` says whether a
result shows anything from outside the root.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CORPUS_FILE = Path(__file__).parents[1] / "data" / "escape_corpus.json"

BASH_PROBE = "touch escaped-marker; echo ran-outside"
"""The command given to Bash with an escaping ``cwd``: it must never run."""

PATH_ARGUMENTS: tuple[tuple[str, str], ...] = (
    ("Read", "path"),
    ("Write", "path"),
    ("Edit", "path"),
    ("Bash", "cwd"),
    ("Glob", "cwd"),
    ("Grep", "path"),
)
"""Every (tool, argument) that names a path and must refuse every corpus entry."""

GLOB_PATTERN_FORMS: tuple[str, ...] = ("{path}", "{path}/*", "{path}/**")
"""Glob's ``pattern`` gets each entry in these forms; it may refuse or match nothing."""

SYSTEM_FILE_MARKERS: tuple[str, ...] = ("root:x:0:0", "root:*:0:0")
"""Text of /etc/passwd that must never appear in a result."""


def load_corpus() -> dict[str, Any]:
    """The data file, parsed."""
    corpus: dict[str, Any] = json.loads(CORPUS_FILE.read_text(encoding="utf-8"))
    return corpus


@dataclass(frozen=True, slots=True)
class EscapeWorld:
    """A sandbox root next to an ``outside`` directory whose files carry ``secret``."""

    base: Path
    root: Path
    outside: Path
    secret: str

    def fill(self, template: str) -> str:
        """``template`` with ``{root}``, ``{outside}`` and ``{secret}`` replaced."""
        return (
            template.replace("{root}", str(self.root))
            .replace("{outside}", str(self.outside))
            .replace("{secret}", self.secret)
        )


def build_world(base: Path) -> EscapeWorld:
    """Create, below ``base``, the root, the outside directory and the links the corpus needs."""
    world = EscapeWorld(
        base=base, root=base / "root", outside=base / "outside", secret=f"awf-secret-{uuid.uuid4().hex}"
    )
    world.root.mkdir()
    description = load_corpus()["world"]
    for directory in description["directories"]:
        Path(world.fill(directory)).mkdir(parents=True, exist_ok=True)
    for path, content in description["files"].items():
        Path(world.fill(path)).write_text(world.fill(content))
    for link, target in description["links"].items():
        Path(world.fill(link)).symlink_to(world.fill(target))
    return world


def escape_paths(world: EscapeWorld) -> list[str]:
    """Every corpus entry, placeholders filled in, in file order."""
    paths = []
    for attempt in load_corpus()["attempts"]:
        if "path" in attempt:
            paths.append(world.fill(attempt["path"]))
        else:
            paths.append(world.fill(attempt.get("prefix", "")) + attempt["repeat"] * attempt["times"])
    return paths


def refused_calls(path: str) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(tool, argument, arguments) for each of :data:`PATH_ARGUMENTS` given ``path``."""
    yield "Read", "path", {"path": path}
    yield "Write", "path", {"path": path, "content": "pwned"}
    yield "Edit", "path", {"path": path, "old": "TOP-SECRET", "new": "pwned"}
    yield "Bash", "cwd", {"command": BASH_PROBE, "cwd": path}
    yield "Glob", "cwd", {"pattern": "*", "cwd": path}
    yield "Grep", "path", {"pattern": "SECRET", "path": path}


def glob_pattern_calls(path: str) -> Iterator[dict[str, Any]]:
    """Glob arguments using ``path`` as (part of) the pattern."""
    for form in GLOB_PATTERN_FORMS:
        yield {"pattern": form.replace("{path}", path.rstrip("/") or "/")}


def leaks(world: EscapeWorld, text: str) -> bool:
    """True when ``text`` shows the secret, a system file's content or a name from outside."""
    return (
        world.secret in text
        or "TOP-SECRET" in text
        or "ran-outside" in text
        or any(marker in text for marker in SYSTEM_FILE_MARKERS)
    )
