"""``awf_mcp.processes.childenv``: children of the frozen binary get the user's environment back."""

from __future__ import annotations

import sys

import pytest

from awf_mcp.processes.childenv import child_environment, launched_executable, reentry_environment

BOOTLOADER_SET = {
    "LD_LIBRARY_PATH": "/tmp/_MEIabc",
    "LD_LIBRARY_PATH_ORIG": "/opt/lib",
    "DYLD_LIBRARY_PATH": "/tmp/_MEIabc",
    "_PYI_APPLICATION_HOME_DIR": "/tmp/_MEIabc",
    "_MEIPASS2": "/tmp/_MEIabc",
    "STATICX_BUNDLE_DIR": "/tmp/staticx-abc",
    "STATICX_PROG_PATH": "/opt/bin/awf-mcp",
    "HOME": "/home/u",
}


def test_frozen_restores_the_original_library_path_and_drops_the_bootloaders_variables() -> None:
    env = child_environment(BOOTLOADER_SET, frozen=True)
    assert env == {"LD_LIBRARY_PATH": "/opt/lib", "HOME": "/home/u"}


def test_a_library_path_the_user_never_had_is_removed() -> None:
    env = child_environment({"LD_LIBRARY_PATH": "/tmp/_MEIabc", "PATH": "/bin"}, frozen=True)
    assert env == {"PATH": "/bin"}


def test_not_frozen_is_a_plain_copy() -> None:
    source = dict(BOOTLOADER_SET)
    env = child_environment(source, frozen=False)
    assert env == BOOTLOADER_SET and env is not source


@pytest.mark.parametrize(
    "command_env",
    [
        {"HOME": "/home/u", "LD_LIBRARY_PATH": "/opt/users/lib"},
        {"HOME": "/home/u"},
        {"HOME": "/home/u", "DYLD_LIBRARY_PATH": "/opt/mac", "LIBPATH": "/opt/aix"},
    ],
)
def test_the_binary_started_again_gets_the_bootloaders_variables_and_hands_back_the_command_env(
    command_env: dict[str, str],
) -> None:
    passed = reentry_environment(command_env, BOOTLOADER_SET, frozen=True)
    assert passed["_PYI_APPLICATION_HOME_DIR"] == "/tmp/_MEIabc" and passed["_MEIPASS2"] == "/tmp/_MEIabc"
    assert passed["LD_LIBRARY_PATH"] == "/tmp/_MEIabc"  # the bundle's libraries load in place
    assert "/opt/lib" not in passed.values()  # the server's own user path is not the command's
    assert child_environment(passed, frozen=True) == command_env


def test_reentry_outside_a_frozen_binary_is_a_plain_copy() -> None:
    command_env = {"HOME": "/home/u"}
    passed = reentry_environment(command_env, BOOTLOADER_SET, frozen=False)
    assert passed == command_env and passed is not command_env


def test_the_portable_binary_is_named_by_the_file_started_not_its_unpacked_copy() -> None:
    assert launched_executable(BOOTLOADER_SET, frozen=True) == "/opt/bin/awf-mcp"
    assert launched_executable({"HOME": "/home/u"}, frozen=True) == sys.executable
    assert launched_executable(BOOTLOADER_SET, frozen=False) == sys.executable
