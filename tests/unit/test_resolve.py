"""``awf_mcp.install.resolve``: the running interpreter's wheel tags and what awf-mcp already has."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from awf_mcp.install import resolve


def test_target_spec_describes_the_running_interpreter() -> None:
    spec = resolve.target_spec()
    assert spec.python_version == f"{sys.version_info[0]}.{sys.version_info[1]}"
    options = spec.pip_options()
    assert (
        "--only-binary=:all:" in options
        and options[options.index("--python-version") + 1] == spec.python_version
    )
    if sys.platform == "linux" and os.uname().machine == "x86_64" and os.confstr("CS_GNU_LIBC_VERSION"):
        assert {"manylinux_2_17_x86_64", "manylinux2014_x86_64", "linux_x86_64"} <= set(spec.platforms)
        assert (
            spec.platforms[-1] == "linux_x86_64"
            and spec.abi == f"cp{sys.version_info[0]}{sys.version_info[1]}"
        )


def test_bundled_distributions_exclude_plugin_directories(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.helpers.distributions import provider_plugin

    provider_plugin(tmp_path, "elsewhere", "elsewhere_x")
    monkeypatch.setenv("AWF_MCP_PLUGIN_PATH", str(tmp_path))
    monkeypatch.syspath_prepend(str(tmp_path))
    bundled = resolve.bundled_distributions()
    assert {"awf-mcp", "mcp", "pydantic"} <= set(bundled)
    assert "awf-plugin-elsewhere" not in bundled
