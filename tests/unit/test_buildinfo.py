"""``awf_mcp.install.buildinfo``: what the single executable says it was built as."""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

from awf_mcp.install.buildinfo import BUILD_RECORD, build_identity


def in_a_bundle(monkeypatch: pytest.MonkeyPatch, bundle: Path) -> None:
    monkeypatch.setattr(sys, "_MEIPASS", str(bundle), raising=False)
    monkeypatch.setattr(sys, "frozen", True, raising=False)


def test_a_portable_build_names_its_commit_platform_and_the_libc_it_carries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    record = {"commit": "0123456789ab", "platform": "linux-x86_64", "libc": "glibc 2.36", "portable": True}
    (tmp_path / BUILD_RECORD).write_text(json.dumps(record))
    in_a_bundle(monkeypatch, tmp_path)
    identity = build_identity(None)
    assert identity["commit"] == "0123456789ab"
    assert identity["built for"] == "linux-x86_64, against glibc 2.36"
    assert identity["libc"].endswith(" (carried by the binary)")
    assert identity["python"] == f"{platform.python_implementation()} {platform.python_version()}"


@pytest.mark.parametrize(
    "content", [b"", b"[1, 2]", b"\xff\xfe not json", b'{"commit": ' + b"9" * 70_000 + b"}"]
)
def test_a_missing_or_malformed_record_reads_as_unknown(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: bytes
) -> None:
    (tmp_path / BUILD_RECORD).write_bytes(content)
    in_a_bundle(monkeypatch, tmp_path)
    identity = build_identity(None)
    assert identity["commit"] == "unknown" and identity["libc"].endswith(" (the machine's)")


def test_a_pip_install_has_no_record() -> None:
    assert build_identity(None)["commit"] == "unknown"


def test_the_rg_it_is_given_is_named_by_its_version_or_why_it_does_not_run(tmp_path: Path) -> None:
    fake = tmp_path / "rg"
    fake.write_text("#!/bin/sh\necho 'ripgrep 14.1.0'\n")
    fake.chmod(0o755)
    assert build_identity(str(fake))["rg"] == "ripgrep 14.1.0"
    assert build_identity(str(tmp_path / "missing"))["rg"].startswith("does not run (")
    assert build_identity(None)["rg"] == "does not run (none found)"
