"""The benchmark harness runs and writes well-formed JSON (it never asserts how fast anything is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RUN = REPO / "bench" / "run.py"

pytestmark = pytest.mark.slow


def test_quick_startup_and_exit_write_well_formed_json(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    # No frozen binaries: keeps the test well under a minute, and exercises the SKIP path.
    missing = str(tmp_path / "no-such-binary")
    env = {**os.environ, "AWF_MCP_BINARY": missing, "AWF_MCP_BINARY_ONEDIR": missing}
    done = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--only", "startup,exit", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "start-up <= 1.10 x bare SDK server" in done.stdout

    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["quick"] is True
    assert data["sections"] == ["startup", "exit"]
    assert data["failures"] == {}
    assert {"nproc", "cpu", "free_h"} <= set(data["machine"])
    assert data["rows"] and all({"section", "metric", "value", "unit"} <= set(r) for r in data["rows"])
    assert {r["section"] for r in data["rows"]} == {"startup", "exit"}
    for target in data["targets"]:
        assert target["verdict"] in {"PASS", "MISS", "SKIP"}
        assert isinstance(target["measured"], int | float)
    names = {t["name"] for t in data["targets"]}
    assert "start-up <= 1.10 x bare SDK server" in names
    assert "exit after EOF <= 0.3 s" in names
    startup = data["details"]["startup"]
    assert len(startup["awf-mcp"]["runs"]) == 3
    assert startup["awf-mcp"]["tools"] >= 6
    assert startup["bare SDK"]["tools"] == 1
    assert data["frozen_binary"] is None
    assert any(s["section"] == "startup" and "frozen" in s["reason"] for s in data["skipped"])


def test_quick_relay_measures_direct_and_relayed_calls_in_one_run(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    done = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--only", "relay", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    data = json.loads(out.read_text(encoding="utf-8"))
    if data["skipped"]:
        assert data["skipped"][0]["section"] == "relay"
        pytest.skip(data["skipped"][0]["reason"])
    relay = data["details"]["relay"]
    assert len(relay["ratios"]) == relay["rounds"] == 6
    assert all(ratio > 0 for ratio in relay["ratios"])
    targets = {t["name"]: t for t in data["targets"]}
    [ratio_target] = [t for name, t in targets.items() if name.startswith("relay: relayed / direct calls/s")]
    assert ratio_target["verdict"] in {"PASS", "MISS"} and ratio_target["op"] == ">="
    assert "relay: added p50 <= 500 µs" in targets
    floor = relay["sdk_floor_us"]  # the SDK's own share, measured in the same run
    assert floor["server_dispatch_us"] > 0 and floor["client_call_us"] > 0
    assert floor["relay_floor_us"] == floor["server_dispatch_us"] + floor["client_call_us"]
    assert "added by awf-mcp beyond the SDK's floor" in done.stdout


def test_session_floor_reports_each_forked_session_s_own_memory() -> None:
    done = subprocess.run(
        [sys.executable, str(RUN.with_name("session_floor.py")), "--sessions", "2", "--calls", "3"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sessions = [line for line in done.stdout.splitlines() if line.startswith("session ")]
    assert len(sessions) == 2
    own = float(done.stdout.split("own memory, p50: ")[1].split()[0])
    assert own > 1.0  # a forked SDK session writes megabytes of its parent's pages


def test_unknown_section_is_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(RUN), "--only", "nonsense", "--json", str(tmp_path / "x.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "unknown section" in done.stderr
    assert not (tmp_path / "x.json").exists()
