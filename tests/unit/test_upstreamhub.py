"""The shared upstream hub's routing (awf_mcp.wire.upstreamhub.Hub), message by message.

The hub's ends are recorded by writers that keep what they are given; end-to-end behaviour
(real sessions, real servers) is in tests/e2e/test_shared_upstreams.py.
"""

from __future__ import annotations

import json
from typing import Any

from awf_mcp.wire.upstreamhub import Hub, _Session, share_note


class Recorder:
    """A stand-in for an ``asyncio.StreamWriter``: the lines written, parsed."""

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.closed = False
        self.transport = self

    def write(self, data: bytes) -> None:
        self.lines.extend(line for line in data.split(b"\n") if line)

    def is_closing(self) -> bool:
        return self.closed

    def close(self) -> None:
        self.closed = True

    def get_write_buffer_size(self) -> int:
        return 0

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.lines if not line.startswith(b"#")]

    def take(self) -> list[dict[str, Any]]:
        taken = self.messages()
        self.lines.clear()
        return taken


def hub_with(count: int) -> tuple[Hub, Recorder, list[tuple[_Session, Recorder]]]:
    hub = Hub(None, ([], {}, ""), 60.0, -1)  # type: ignore[arg-type]
    server = Recorder()
    hub.stdin = server  # type: ignore[assignment]
    sessions = []
    for _ in range(count):
        writer = Recorder()
        session = _Session(writer)  # type: ignore[arg-type]
        hub.sessions.append(session)
        sessions.append((session, writer))
    return hub, server, sessions


def send(hub: Hub, session: _Session, message: dict[str, Any]) -> None:
    hub.from_session(session, json.dumps({"jsonrpc": "2.0", **message}).encode())


def reply(hub: Hub, message: dict[str, Any]) -> None:
    hub.from_server(json.dumps({"jsonrpc": "2.0", **message}).encode())


def test_two_sessions_with_the_same_ids_each_get_their_own_answer() -> None:
    hub, server, [(a, a_out), (b, b_out)] = hub_with(2)
    send(hub, a, {"id": 1, "method": "tools/call", "params": {"name": "x"}})
    send(hub, b, {"id": 1, "method": "tools/call", "params": {"name": "y"}})
    first, second = server.take()
    assert first["id"] != second["id"]  # the hub's own ids upstream
    reply(hub, {"id": second["id"], "result": {"said": "to b"}})
    reply(hub, {"id": first["id"], "result": {"said": "to a"}})
    assert a_out.take() == [{"jsonrpc": "2.0", "id": 1, "result": {"said": "to a"}}]
    assert b_out.take() == [{"jsonrpc": "2.0", "id": 1, "result": {"said": "to b"}}]


def test_an_answer_to_no_request_and_a_repeated_answer_reach_nobody() -> None:
    hub, server, [(a, a_out), (_b, b_out)] = hub_with(2)
    send(hub, a, {"id": 5, "method": "tools/call", "params": {}})
    (request,) = server.take()
    reply(hub, {"id": 999, "result": {}})  # an upstream that lies
    reply(hub, {"id": request["id"], "result": {"n": 1}})
    reply(hub, {"id": request["id"], "result": {"n": 2}})  # answered twice
    assert a_out.take() == [{"jsonrpc": "2.0", "id": 5, "result": {"n": 1}}]
    assert b_out.take() == []


def test_progress_goes_to_its_caller_under_the_callers_token() -> None:
    hub, server, [(a, a_out), (b, b_out)] = hub_with(2)
    send(hub, a, {"id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "t"}}})
    send(hub, b, {"id": 1, "method": "tools/call", "params": {"_meta": {"progressToken": "t"}}})
    first, second = server.take()
    tokens = [first["params"]["_meta"]["progressToken"], second["params"]["_meta"]["progressToken"]]
    assert tokens[0] != tokens[1]
    reply(hub, {"method": "notifications/progress", "params": {"progressToken": tokens[1], "progress": 1}})
    reply(hub, {"method": "notifications/progress", "params": {"progressToken": "forged", "progress": 9}})
    assert a_out.take() == []
    (progress,) = b_out.take()
    assert progress["params"] == {"progressToken": "t", "progress": 1}
    reply(hub, {"id": second["id"], "result": {}})
    reply(hub, {"method": "notifications/progress", "params": {"progressToken": tokens[1], "progress": 2}})
    assert b_out.take() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]  # none after the answer


def test_a_cancellation_names_the_hubs_id_and_a_session_that_leaves_cancels_its_calls() -> None:
    hub, server, [(a, _a_out), (b, _b_out)] = hub_with(2)
    send(hub, a, {"id": 3, "method": "tools/call", "params": {}})
    send(hub, b, {"id": 3, "method": "tools/call", "params": {}})
    for_a, for_b = server.take()
    send(hub, a, {"method": "notifications/cancelled", "params": {"requestId": 3}})
    send(hub, a, {"method": "notifications/cancelled", "params": {"requestId": 77}})  # none such
    assert server.take() == [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": for_a["id"]}}
    ]
    hub.leave(b)
    (cancelled,) = server.take()
    assert (
        cancelled["method"] == "notifications/cancelled" and cancelled["params"]["requestId"] == for_b["id"]
    )
    assert hub.sessions == [a]


def test_initialize_goes_upstream_once_and_later_sessions_get_its_answer() -> None:
    hub, server, [(a, a_out), (b, b_out), (c, c_out)] = hub_with(3)
    initialize = {"method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}}}
    send(hub, a, {"id": 1, **initialize})
    send(hub, b, {"id": 9, **initialize})  # while the first is on its way
    (sent,) = server.take()
    reply(hub, {"id": sent["id"], "result": {"serverInfo": {"name": "s"}}})
    send(hub, c, {"id": 4, **initialize})
    for session in (a, b, c):
        send(hub, session, {"method": "notifications/initialized"})
    assert server.take() == [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    assert [m["id"] for m in a_out.take() + b_out.take() + c_out.take()] == [1, 9, 4]


def test_the_servers_question_goes_to_the_one_session_with_a_call_running_else_it_is_refused() -> None:
    hub, server, [(a, a_out), (b, b_out)] = hub_with(2)
    elicit = {"method": "elicitation/create", "params": {"message": "name?"}}
    reply(hub, {"id": "q1", **elicit})  # no call running, two sessions: whose user?
    (refused,) = server.take()
    assert refused["id"] == "q1" and "ambiguous" in refused["error"]["message"]
    send(hub, b, {"id": 1, "method": "tools/call", "params": {}})
    server.take()
    reply(hub, {"id": "q2", **elicit})
    assert a_out.take() == [] and [m["id"] for m in b_out.take()] == ["q2"]
    send(hub, a, {"id": "q2", "result": {"action": "accept"}})  # not a's to answer
    assert server.take() == []
    send(hub, b, {"id": "q2", "result": {"action": "decline"}})
    assert server.take() == [{"jsonrpc": "2.0", "id": "q2", "result": {"action": "decline"}}]
    send(hub, a, {"id": 2, "method": "tools/call", "params": {}})
    server.take()
    reply(hub, {"id": "q3", **elicit})  # both have calls running
    (refused,) = server.take()
    assert refused["id"] == "q3" and "error" in refused
    assert a_out.take() == [] and b_out.take() == []


def test_ping_is_answered_by_the_hub() -> None:
    hub, server, [(_a, a_out)] = hub_with(1)
    reply(hub, {"id": 12, "method": "ping"})
    assert server.take() == [{"jsonrpc": "2.0", "id": 12, "result": {}}]
    assert a_out.take() == []


def test_a_uri_stays_subscribed_while_any_session_is_subscribed() -> None:
    hub, server, [(a, a_out), (b, b_out)] = hub_with(2)
    subscribe = {"method": "resources/subscribe", "params": {"uri": "x://1"}}
    send(hub, a, {"id": 1, **subscribe})
    send(hub, b, {"id": 1, **subscribe})
    (sent,) = server.take()  # once upstream; b is answered by the hub
    assert b_out.take() == [{"jsonrpc": "2.0", "id": 1, "result": {}}]
    send(hub, a, {"id": 2, "method": "resources/unsubscribe", "params": {"uri": "x://1"}})
    assert server.take() == [] and a_out.take() == [{"jsonrpc": "2.0", "id": 2, "result": {}}]
    hub.leave(b)
    (unsubscribed,) = server.take()
    assert unsubscribed["method"] == "resources/unsubscribe" and unsubscribed["params"] == {"uri": "x://1"}
    reply(hub, {"id": unsubscribed["id"], "result": {}})  # the hub's own request: answered to nobody
    assert a_out.take() == []
    assert sent["method"] == "resources/subscribe"


def test_notifications_of_the_server_go_to_every_session() -> None:
    hub, _server, [(_a, a_out), (_b, b_out)] = hub_with(2)
    reply(hub, {"method": "notifications/tools/list_changed"})
    assert a_out.take() == b_out.take() == [{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]


def test_what_decides_sharing_is_the_declared_capabilities_not_the_clients_name() -> None:
    def first(name: str, capabilities: dict[str, Any]) -> bytes:
        params = {"protocolVersion": "2025-06-18", "capabilities": capabilities, "clientInfo": {"name": name}}
        return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}).encode()

    assert share_note(first("a", {})) == share_note(first("b", {}))
    assert share_note(first("a", {})) != share_note(first("a", {"elicitation": {}}))
    assert share_note(first("a", {}), ["/a"]) != share_note(first("a", {}), ["/b"])  # roots
    assert share_note(b"not json") == "" == share_note(b"[1, 2]")


def test_a_servers_line_that_is_not_json_never_passes_for_a_note_of_the_hubs() -> None:
    hub, _server, [(_a, a_out)] = hub_with(1)
    hub.from_server(b"#exit it was fine, honest")
    hub.from_server(b"plain garbage")
    assert a_out.lines == [b" #exit it was fine, honest", b"plain garbage"]
