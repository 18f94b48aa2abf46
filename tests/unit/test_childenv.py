"""``awf_mcp.ops.childenv``: children of the frozen binary get the user's environment back."""

from __future__ import annotations

from awf_mcp.ops.childenv import child_environment

BOOTLOADER_SET = {
    "LD_LIBRARY_PATH": "/tmp/_MEIabc",
    "LD_LIBRARY_PATH_ORIG": "/opt/lib",
    "DYLD_LIBRARY_PATH": "/tmp/_MEIabc",
    "_PYI_APPLICATION_HOME_DIR": "/tmp/_MEIabc",
    "_MEIPASS2": "/tmp/_MEIabc",
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
