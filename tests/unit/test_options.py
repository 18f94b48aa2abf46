"""The option table: one definition of every ``serve`` option, and what is generated from it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from awf_mcp.cli import options as table
from awf_mcp.cli.commands import app
from awf_mcp.cli.options import LAUNCH, SETTINGS, LaunchOptions, parse_serve, serve_argv, serve_parser
from awf_mcp.core import config
from awf_mcp.core.config import ServeOptions


def field_names(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def test_every_settings_option_is_a_serve_options_field_and_back() -> None:
    assert {option.field for option in SETTINGS} == field_names(ServeOptions)


def test_every_launch_option_is_a_launch_options_field_and_back() -> None:
    assert {option.field for option in LAUNCH} == field_names(LaunchOptions)


def test_flags_are_unique_and_documented() -> None:
    flags = [option.flag for option in SETTINGS + LAUNCH]
    assert len(flags) == len(set(flags))
    assert all(option.help.strip() for option in SETTINGS + LAUNCH)


def test_serve_parses_into_typed_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWF_MCP_TOKEN", raising=False)
    options, launch = parse_serve(
        ["--root", "a", "--root", "b", "--only", "Read", "--strict", "--call-timeout", "5", "--port", "9"]
    )
    assert options == ServeOptions(roots=("a", "b"), only=("Read",), strict=True, call_timeout_seconds=5.0)
    assert launch == LaunchOptions(port=9)


def test_nothing_given_means_every_default() -> None:
    options, launch = parse_serve([])
    assert options == ServeOptions()
    assert dataclasses.replace(launch, token=None) == LaunchOptions()


def test_the_token_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWF_MCP_TOKEN", "s3cret")
    assert parse_serve([])[1].token == "s3cret"
    assert parse_serve(["--token", "given"])[1].token == "given"


def test_a_bad_value_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        parse_serve(["--output-budget", "lots"])
    assert exit_info.value.code == 2
    assert "invalid int value: 'lots'" in capsys.readouterr().err


def test_the_client_argv_round_trips_through_the_serve_parser(tmp_path: Path) -> None:
    given = ServeOptions(
        config="cfg.toml",
        roots=("src", str(tmp_path)),
        no_builtins=True,
        only=("Read", "Grep"),
        exclude=("Bash",),
        strict=True,
        call_timeout_seconds=30.0,
        output_budget=20000,
    )
    argv = serve_argv(given, base=tmp_path)
    parsed, _ = parse_serve(argv)
    assert parsed == dataclasses.replace(
        given, config=str(tmp_path / "cfg.toml"), roots=(str(tmp_path / "src"), str(tmp_path))
    )


def test_the_client_argv_leaves_out_what_was_not_given() -> None:
    assert serve_argv(ServeOptions()) == []
    assert serve_argv(ServeOptions(only=("Read",))) == ["--only", "Read"]


def test_the_parsed_options_load_as_settings(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    options, _ = parse_serve(["--root", "a", "--exclude", "Bash", "--output-budget", "5000"])
    settings = config.load(options, cwd=str(tmp_path))
    assert settings.roots == (str((tmp_path / "a").resolve()),)
    assert settings.exclude == ("Bash",) and settings.output_budget == 5000


@pytest.mark.parametrize("command", [["tools", "list"], ["tools", "call"], ["config"]])
def test_typer_commands_show_the_table_s_flags_and_help(command: list[str]) -> None:
    done = CliRunner().invoke(app, [*command, "--help"], env={"COLUMNS": "400", "NO_COLOR": "1"})
    assert done.exit_code == 0, done.output
    root = next(option for option in SETTINGS if option.field == "roots")
    assert root.flag in done.output and root.help.split(" (")[0] in done.output


def test_a_typer_command_receives_one_serve_options(tmp_path: Path) -> None:
    import typer

    seen: list[ServeOptions] = []
    probe = typer.Typer()

    @probe.command()
    @table.with_options("roots", "only", "call_timeout_seconds")
    def run(*, options: ServeOptions) -> None:
        seen.append(options)

    done = CliRunner().invoke(probe, ["--root", "x", "--root", "y", "--call-timeout", "2.5"])
    assert done.exit_code == 0, done.output
    assert seen == [ServeOptions(roots=("x", "y"), call_timeout_seconds=2.5)]


def test_only_settings_options_can_be_given_to_a_typer_command() -> None:
    with pytest.raises(ValueError, match="not a settings option: port"):
        table.with_options("port")


def test_serve_help_lists_every_flag_of_the_table() -> None:
    text = serve_parser().format_help()
    assert all(option.flag in text for option in SETTINGS + LAUNCH)
