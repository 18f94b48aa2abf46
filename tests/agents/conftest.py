"""Fixtures of the real-agent tests: a throw-away workspace and the fake model."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.fake_model import FakeModel, Scenario
from tests.agents.kit import Workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    marker = f"AWF-MARKER-{uuid.uuid4().hex}"
    (project / "marker.txt").write_text(marker + "\n", encoding="utf-8")
    return Workspace(home, project, marker)


@pytest.fixture
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel(Scenario()).start()
    try:
        yield model
    finally:
        model.stop()
