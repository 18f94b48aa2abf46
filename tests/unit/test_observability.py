"""Call logs, the audit log and spans: unit checks and 50 concurrent calls end to end."""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import anyio
import pytest

from awf_mcp.cli.runtime import log_call
from awf_mcp.core.callrecord import CallRecord
from awf_mcp.core.observability import MASK, MAX_VALUE_CHARS, AuditLog, JsonLogFormatter, call_span, redact
from tests.helpers.harness import mcp_session


def record(**arguments: object) -> CallRecord:
    return CallRecord("demo_a", "plugin:demo", arguments, 1.5, False, None)


def test_secret_looking_keys_are_masked_at_any_depth() -> None:
    masked = redact(
        {
            "token": "t",
            "nested": {"Password": "p", "API_KEY": "k", "ok": 1},
            "headers": [{"authorization": "a"}],
        }
    )
    assert masked == {
        "token": MASK,
        "nested": {"Password": MASK, "API_KEY": MASK, "ok": 1},
        "headers": [{"authorization": MASK}],
    }


def test_long_values_are_truncated_with_a_note() -> None:
    value = redact({"text": "x" * (MAX_VALUE_CHARS + 50)})["text"]
    assert value.startswith("x" * MAX_VALUE_CHARS) and value.endswith("(50 more characters)")


def test_a_long_error_text_is_truncated_in_every_record(tmp_path: Path) -> None:
    failed = CallRecord("Bash", "builtin", {}, 2.0, True, "exit code 1\n" + "y" * 100_000)
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    audit(failed)
    audit.close()
    entry = json.loads((tmp_path / "audit.jsonl").read_text())
    assert len(entry["error"]) < MAX_VALUE_CHARS + 100 and entry["error"].startswith("exit code 1")
    assert entry["error"].endswith(f"({len(failed.error or '') - MAX_VALUE_CHARS} more characters)")

    captured: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = captured.append  # type: ignore[method-assign]
    logger = logging.getLogger("awf_mcp")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        log_call(failed)
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    (logged,) = [json.loads(JsonLogFormatter().format(r)) for r in captured]
    assert logged["error"] == entry["error"]
    assert len(logged["message"]) < MAX_VALUE_CHARS + 200


def test_the_call_log_costs_nothing_when_its_level_is_filtered_out(monkeypatch: pytest.MonkeyPatch) -> None:
    from awf_mcp.cli import runtime

    def unexpected(record: CallRecord) -> dict[str, object]:
        raise AssertionError("call fields built for a record nobody logs")

    monkeypatch.setattr(runtime, "call_fields", unexpected)
    logger = logging.getLogger("awf_mcp")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        log_call(record(text="x"))
    finally:
        logger.setLevel(level)


def test_audit_records_from_many_threads_never_interleave(tmp_path: Path) -> None:
    audit = AuditLog(str(tmp_path / "audit.jsonl"))
    threads = [
        threading.Thread(target=lambda: [audit(record(text="y" * 900)) for _ in range(50)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    audit.close()
    lines = (tmp_path / "audit.jsonl").read_text().splitlines()
    assert len(lines) == 400
    assert all(json.loads(line)["arguments"]["text"] == "y" * 900 for line in lines)


def test_json_log_lines_carry_the_call_fields() -> None:
    log_record = logging.LogRecord("awf_mcp", logging.INFO, __file__, 1, "call %s", ("demo_a",), None)
    log_record.call = {"tool": "demo_a", "is_error": False}
    payload = json.loads(JsonLogFormatter().format(log_record))
    assert payload["message"] == "call demo_a" and payload["tool"] == "demo_a" and payload["level"] == "INFO"


def test_a_span_is_opened_per_call() -> None:
    with call_span("demo_a", "plugin:demo") as span:
        span.set_attribute("tool.is_error", False)


def test_without_a_tracer_provider_the_call_runs_in_the_invalid_span_as_the_noop_tracer_has_it() -> None:
    from opentelemetry import trace

    with trace.get_tracer("awf_mcp").start_as_current_span("tools/call demo_a") as noop:
        pass
    with call_span("demo_a", "plugin:demo") as span:
        assert span is noop is trace.INVALID_SPAN
        assert trace.get_current_span() is trace.INVALID_SPAN


@pytest.mark.e2e
@pytest.mark.anyio
@pytest.mark.usefixtures("testkit")
async def test_fifty_concurrent_calls_give_fifty_audit_records(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    calls_log = tmp_path / "calls.log"
    async with mcp_session(
        "--no-builtins", "--audit-log", str(audit), "--log-format", "json", "--log-file", str(calls_log)
    ) as session:
        async with anyio.create_task_group() as group:
            for index in range(50):
                group.start_soon(
                    session.call_tool,
                    "testkit_echo",
                    {"text": f"call-{index}" + "z" * 3000, "api_token": "s3cret"},
                )
        await session.call_tool("testkit_boom", {})
    entries = [json.loads(line) for line in audit.read_text().splitlines()]
    assert len(entries) == 51
    echoes = [e for e in entries if e["tool"] == "testkit_echo"]
    assert sorted(e["arguments"]["text"].split("z")[0] for e in echoes) == sorted(
        f"call-{i}" for i in range(50)
    )
    assert all(
        e["arguments"]["api_token"] == MASK and "more characters" in e["arguments"]["text"] for e in echoes
    )
    assert all(
        e["source"] == "plugin:testkit" and e["duration_ms"] >= 0 and not e["is_error"] for e in echoes
    )
    boom = next(e for e in entries if e["tool"] == "testkit_boom")
    assert boom["is_error"] and boom["error"] == "ValueError: kaboom"
    logged = [json.loads(line) for line in calls_log.read_text().splitlines()]
    assert sum(1 for line in logged if line.get("tool") == "testkit_echo") == 50
    assert "s3cret" not in audit.read_text()
