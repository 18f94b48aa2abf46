"""Config: the AWF proxy JSON (with its five codes), TOML extensions, flags over file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from awf_mcp.core.config import ServeOptions, load
from awf_mcp.errors import ConfigError
from tests.helpers.harness import write_approved


def write(path: Path, data: object) -> Path:
    return write_approved(path, json.dumps(data) if path.suffix == ".json" else str(data))


def test_defaults_serve_the_builtins_from_the_working_directory(tmp_path: Path) -> None:
    settings = load(cwd=str(tmp_path))
    assert settings.builtins and settings.roots == (str(tmp_path.resolve()),)
    assert settings.plugin_tools is None


def test_awf_proxy_json_is_accepted(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    config = write(
        tmp_path / "proxy.json",
        {
            "intercept_builtins": True,
            "plugin_tools": [{"plugin": "echo", "expose": ["echo"]}],
            "root_dir": "work",
        },
    )
    settings = load(ServeOptions(config=str(config)), cwd=str(tmp_path))
    assert settings.roots == (str((tmp_path / "work").resolve()),)
    assert settings.plugin_tools is not None
    assert [(s.plugin, s.expose) for s in settings.plugin_tools] == [("echo", ("echo",))]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        ({"intercept_builtins": True, "colour": "blue"}, "USER.MCP_PROXY.UNKNOWN_KEY"),
        ({"plugin_tools": [{"plugin": "echo", "expose": [], "extra": 1}]}, "USER.MCP_PROXY.UNKNOWN_KEY"),
        ({"intercept_builtins": False}, "USER.MCP_PROXY.EMPTY_PROXY"),
        ({"intercept_builtins": False, "plugin_tools": []}, "USER.MCP_PROXY.EMPTY_PROXY"),
    ],
)
def test_proxy_validation_codes(tmp_path: Path, data: object, code: str) -> None:
    config = write(tmp_path / "proxy.json", data)
    with pytest.raises(ConfigError) as caught:
        load(ServeOptions(config=str(config)), cwd=str(tmp_path))
    assert caught.value.code == code
    assert caught.value.exit_code == 1
    assert "\n" not in str(caught.value)


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.json"
    write_approved(config, '{"intercept_builtins": true,\n oops}')
    with pytest.raises(ConfigError, match="not valid JSON \\(line 2"):
        load(ServeOptions(config=str(config)), cwd=str(tmp_path))


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load(ServeOptions(config=str(tmp_path / "absent.json")), cwd=str(tmp_path))


def test_toml_is_found_in_the_working_directory(tmp_path: Path) -> None:
    write_approved(
        tmp_path / "awf-mcp.toml",
        'exclude = ["Bash"]\ncall_timeout_seconds = 5\n[rename]\nRead = "ReadFile"\n'
        '[plugins.sqlite]\ndatabase = "app.db"\n',
        encoding="utf-8",
    )
    settings = load(cwd=str(tmp_path))
    assert settings.exclude == ("Bash",)
    assert settings.call_timeout_seconds == 5.0
    assert settings.renames == {"Read": "ReadFile"}
    assert settings.settings_for("sqlite") == {"database": "app.db"}


def test_environment_overrides_plugin_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_approved(
        tmp_path / "awf-mcp.toml", '[plugins.sqlite]\ndatabase = "a.db"\nrows = 5\n', encoding="utf-8"
    )
    monkeypatch.setenv("AWF_MCP_PLUGIN_SQLITE_DATABASE", "b.db")
    assert load(cwd=str(tmp_path)).settings_for("sqlite") == {"database": "b.db", "rows": 5}


def test_invalid_toml_is_a_clear_error(tmp_path: Path) -> None:
    write_approved(tmp_path / "awf-mcp.toml", "exclude = [", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load(cwd=str(tmp_path))


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    config = write(tmp_path / "proxy.json", {"root_dir": "a"})
    options = ServeOptions(config=str(config), roots=("b", "a"), no_builtins=True, exclude=("Bash",))
    settings = load(options, cwd=str(tmp_path))
    assert settings.roots == (str((tmp_path / "b").resolve()), str((tmp_path / "a").resolve()))
    assert not settings.builtins and settings.exclude == ("Bash",)


def test_a_root_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load(ServeOptions(roots=("nowhere",)), cwd=str(tmp_path))


@pytest.mark.parametrize(
    "text",
    ['strict = "yes"', "call_timeout_seconds = -1", "only = [1]", 'rename = "x"', "plugins = { a = 1 }"],
)
def test_wrongly_typed_toml_values_are_refused(tmp_path: Path, text: str) -> None:
    write_approved(tmp_path / "awf-mcp.toml", text + "\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        load(cwd=str(tmp_path))
