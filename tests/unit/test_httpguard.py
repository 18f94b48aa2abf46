"""The HTTP connection guard's sums and its log filter (the guard at work: e2e/test_http_slow_clients.py)."""

from __future__ import annotations

import logging

from awf_mcp.wire.httpguard import ACCEPT_BATCH, MAX_CONNECTIONS, OneLinePerCondition, connection_limit


def test_the_connection_cap_leaves_room_below_the_open_file_limit() -> None:
    for open_files in (256, 512, 1024, 4096):
        limit = connection_limit(open_files)
        assert limit >= 8 and limit + 2 * ACCEPT_BATCH + 64 <= open_files
    assert connection_limit(1024) == 640
    assert connection_limit(1 << 20) == MAX_CONNECTIONS


def record(message: str, *args: object, exc: BaseException | None = None) -> logging.LogRecord:
    return logging.LogRecord(
        "asyncio", logging.ERROR, __file__, 1, message, args, (type(exc), exc, None) if exc else None
    )


def test_a_record_becomes_one_line_without_traceback() -> None:
    one_line = OneLinePerCondition()
    item = record("socket.accept() out of system resource\nsocket: %s", "<fd 6>", exc=OSError(24, "Too many"))
    assert one_line.filter(item)
    assert (
        item.getMessage()
        == "socket.accept() out of system resource socket: <fd 6>: OSError: [Errno 24] Too many"
    )
    assert item.exc_info is None


def test_a_repeat_within_the_minute_is_held_back_and_counted() -> None:
    one_line = OneLinePerCondition(repeat_seconds=60)
    assert one_line.filter(record("closed %d", 1))
    assert not one_line.filter(record("closed %d", 2))
    assert not one_line.filter(record("closed %d", 3))
    assert one_line.filter(record("another kind"))
    one_line.repeat_seconds = 0
    again = record("closed %d", 4)
    assert one_line.filter(again)
    assert again.getMessage() == "closed 4 (2 more like it in the last 0 s)"
