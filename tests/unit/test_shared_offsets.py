"""A session forked by the shared server reads its open files at offsets of its own.

Forked processes share their parent's open file descriptions, so their file offsets: a zip
archive the server keeps open (the single executable's bundled metadata and standard library)
read by two sessions at once was read at each other's offsets. The control shows the sharing
that :func:`awf_mcp.cli.shared.own_file_offsets` removes.
"""

from __future__ import annotations

import os
from pathlib import Path

from awf_mcp.cli.shared import own_file_offsets


def offset_seen_by_parent_after_child_seeks(path: Path, own: bool) -> tuple[int, bytes]:
    """Open ``path`` read-only at offset 0, fork a child that (after ``own_file_offsets`` when
    ``own``) seeks to 10 and reads; the parent's offset afterwards, and what the child read."""
    fd = os.open(path, os.O_RDONLY)
    log = os.open(path.with_suffix(".log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports through the pipe
            try:
                if own:
                    own_file_offsets()
                os.lseek(fd, 10, os.SEEK_SET)
                os.write(write_end, os.read(fd, 5))
                os.write(log, b"child\n")  # a file open for writing stays shared, and appends
            finally:
                os._exit(0)
        os.close(write_end)
        read = os.read(read_end, 100)
        os.waitpid(pid, 0)
        os.write(log, b"parent\n")
        return os.lseek(fd, 0, os.SEEK_CUR), read
    finally:
        for each in (fd, log, read_end):
            os.close(each)


def test_a_forked_child_reads_at_offsets_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "archive.zip"
    path.write_bytes(bytes(range(100)))
    parent_offset, read = offset_seen_by_parent_after_child_seeks(path, own=True)
    assert read == bytes(range(10, 15))
    assert parent_offset == 0  # the child's seek and read did not move the parent
    assert path.with_suffix(".log").read_bytes() == b"child\nparent\n"


def test_control_without_it_the_child_moves_the_parents_offset(tmp_path: Path) -> None:
    path = tmp_path / "archive.zip"
    path.write_bytes(bytes(range(100)))
    parent_offset, read = offset_seen_by_parent_after_child_seeks(path, own=False)
    assert read == bytes(range(10, 15))
    assert parent_offset == 15


def test_an_open_file_that_was_removed_is_reopened_too(tmp_path: Path) -> None:
    path = tmp_path / "gone.zip"
    path.write_bytes(bytes(range(100)))
    fd = os.open(path, os.O_RDONLY)
    path.unlink()
    try:
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover
            try:
                own_file_offsets()
                os.lseek(fd, 50, os.SEEK_SET)
                os.write(write_end, os.read(fd, 3))
            finally:
                os._exit(0)
        os.close(write_end)
        assert os.read(read_end, 10) == bytes([50, 51, 52])
        os.waitpid(pid, 0)
        os.close(read_end)
        assert os.lseek(fd, 0, os.SEEK_CUR) == 0
    finally:
        os.close(fd)
