"""Protocol fuzzing: hypothesis feeds a running ``awf-mcp serve`` arbitrary frames; it keeps serving.

One server per test (built-ins confined to a temporary root, plus the testkit
plugin); each hypothesis example is a batch of frames written to its stdin,
followed by a ``ping`` and a ``tools/list`` probe. After every batch:

* every line the server wrote is a well-formed JSON-RPC 2.0 message, and every
  reply's id is one that was sent (or null);
* every frame the SDK cannot accept as a JSON-RPC message got exactly one
  framing error (``-32700`` when it is not JSON, ``-32600`` otherwise) before
  the probe was answered, and every well-formed request got an answer;
* the server answers ``ping`` and lists all its tools.

The batches cover arbitrary bytes and text, wrong JSON-RPC shapes, huge and
wrongly typed ids, deep nesting, unknown methods, calls before ``initialize``
and wrongly typed arguments for every tool of ``tools/list``, generated from
its inputSchema. The frame layer (awf_mcp/wire/framing.py) and the framing-error
reply are also fuzzed in-process against a reference model, and so is the
output side: any result a plugin returns (strings with lone surrogates in text,
keys and values, any nesting) maps to one frame that is strict UTF-8 JSON.

``AWF_MCP_FUZZ_EXAMPLES=N`` sets the examples per test (default: a CI-sized
run); the number of frames sent is reported on the terminal.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from awf_mcp.ports import ToolContent, ToolResult
from awf_mcp.wire.framing import Frame, FrameReader, Oversized
from awf_mcp.wire.mapping import result_to_mcp
from awf_mcp.wire.stdio import encode_reply, frame_error, json_problem
from tests.helpers.harness import RawServer, report

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("testkit")]

EXAMPLES = int(os.environ.get("AWF_MCP_FUZZ_EXAMPLES", "0"))
"""Examples per test; 0 means each test's CI default."""

FRAMING_MESSAGES = ("Parse error:", "Invalid Request: not a JSON-RPC")

KNOWN_METHODS = (
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "notifications/initialized",
    "notifications/progress",
    "notifications/roots/list_changed",
)


def fuzz_settings(default_examples: int) -> Any:
    """Hypothesis settings: ``AWF_MCP_FUZZ_EXAMPLES`` or ``default_examples``, no deadline, no database."""
    return settings(
        max_examples=EXAMPLES or default_examples,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# ---------------------------------------------------------------- strategies

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=16,
)
ids = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -1, 2**31, 2**63, 2**64, 10**100, -(10**100)]),
    st.text(max_size=40),
    st.floats(allow_nan=False),
    st.none(),
    st.booleans(),
    st.lists(scalars, max_size=2),
    st.dictionaries(st.text(max_size=4), scalars, max_size=2),
)
methods = st.sampled_from(KNOWN_METHODS) | st.text(max_size=30)
messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0") | scalars},
    optional={
        "id": ids,
        "method": methods,
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)


def nested(depth: int, kind: str) -> bytes:
    """A JSON text nested ``depth`` levels deep (arrays, objects, or inside a ping's params)."""
    if kind == "array":
        return b"[" * depth + b"]" * depth
    if kind == "object":
        return b'{"a":' * depth + b"1" + b"}" * depth
    inner = b'{"a":' * depth + b"1" + b"}" * depth
    return b'{"jsonrpc":"2.0","id":"deep","method":"ping","params":{"x":' + inner + b"}}"


deep_frames = st.builds(
    nested, st.integers(min_value=1, max_value=100_000), st.sampled_from(["array", "object", "params"])
)
byte_lines = st.binary(max_size=300).map(lambda data: data.replace(b"\n", b""))
text_lines = st.text(max_size=300).map(lambda text: text.encode("utf-8", "surrogatepass").replace(b"\n", b""))
message_lines = messages.map(lambda message: json.dumps(message).encode())
any_frames = st.one_of(
    byte_lines, text_lines, message_lines, deep_frames, json_values.map(json.dumps).map(str.encode)
)


def wrong_value(schema: dict[str, Any]) -> Any:
    """Values that never satisfy the property ``schema``: aimed at its type, then checked by jsonschema."""
    kind = schema.get("type")
    aimed = json_values | st.booleans()
    if kind == "integer":  # JSON Schema counts 2.0 (and 1e300) as integers: aim at fractions too
        aimed = aimed | st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: not x.is_integer())
    if kind in ("integer", "number"):
        aimed = aimed | st.integers(max_value=schema.get("minimum", 0) - 1)
        if "maximum" in schema:
            aimed = aimed | st.integers(min_value=schema["maximum"] + 1)
    if "enum" in schema:
        aimed = aimed | st.text(max_size=20)
    validator = Draft202012Validator(schema)
    return aimed.filter(lambda value: not validator.is_valid(value))


def wrong_arguments(tool: dict[str, Any]) -> Any:
    """Arguments ``tool``'s inputSchema refuses: not an object, a wrongly typed property, extras, none."""
    schema = tool["inputSchema"]
    properties: dict[str, Any] = schema.get("properties", {})
    options = [st.lists(scalars, max_size=3) | st.text(max_size=10) | st.integers() | st.booleans()]
    if properties:
        options.append(
            st.sampled_from(sorted(properties)).flatmap(
                lambda name: wrong_value(properties[name]).map(lambda value: {name: value})
            )
        )
    if schema.get("additionalProperties") is False:
        options.append(
            st.dictionaries(
                st.text(min_size=1, max_size=10).filter(lambda key: key not in properties),
                json_values,
                min_size=1,
                max_size=3,
            )
        )
    if schema.get("required"):
        options.append(st.just({}))
    return st.one_of(options)


# ---------------------------------------------------------------- the exchange and its checks


def rejected_by_sdk(frame: bytes) -> bool:
    """True when the SDK does not accept the (stripped, non-empty) frame as a JSON-RPC message."""
    try:
        types.jsonrpc_message_adapter.validate_json(frame, by_name=False)
    except Exception:
        return True
    return False


def requests_in(frames: list[bytes]) -> tuple[set[Any], bool]:
    """Ids of the well-formed requests among ``frames``, and whether any cancels a request."""
    request_ids: set[Any] = set()
    cancels = False
    for frame in frames:
        if rejected_by_sdk(frame.strip()):
            continue
        message = types.jsonrpc_message_adapter.validate_json(frame.strip(), by_name=False)
        if isinstance(message, types.JSONRPCRequest):
            request_ids.add(message.id)
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            cancels = True
    return request_ids, cancels


def well_formed(reply: dict[str, Any]) -> bool:
    """A JSON-RPC 2.0 response (exactly one of result/error, a proper error object) or notification."""
    if reply.get("jsonrpc") != "2.0":
        return False
    if "method" in reply:
        return isinstance(reply["method"], str)
    if "id" not in reply or ("result" in reply) == ("error" in reply):
        return False
    if "error" in reply:
        error = reply["error"]
        return isinstance(error.get("code"), int) and isinstance(error.get("message"), str)
    return isinstance(reply["result"], dict)


class Fuzzer:
    """A running server, the ids sent to it, and the probe run after every batch."""

    def __init__(self, server: RawServer, expected_tools: int | None) -> None:
        self.server = server
        self.expected_tools = expected_tools
        self.probes = 0
        self.sent_ids: set[Any] = set()

    def ids_of(self, frames: list[bytes]) -> None:
        for frame in frames:
            try:
                parsed = json.loads(frame)
            except (ValueError, RecursionError):
                continue
            if isinstance(parsed, dict) and isinstance(parsed.get("id"), str | int):
                self.sent_ids.add(parsed["id"])

    def exchange(self, frames: list[bytes], *, initialized: bool = True) -> list[dict[str, Any]]:
        """Send ``frames`` and the probe; check every reply; return the replies to ``frames``."""
        self.ids_of(frames)
        self.probes += 1
        probe = f"probe-{self.probes}"
        self.server.send_lines(
            [*frames, json.dumps({"jsonrpc": "2.0", "id": probe, "method": "ping"}).encode()]
        )
        replies: list[dict[str, Any]] = []
        while True:
            reply = self.server.receive()
            if reply.get("id") == probe:
                assert reply.get("result") == {}, reply
                break
            replies.append(reply)
        framing_errors = sum(
            1 for r in replies if str(r.get("error", {}).get("message", "")).startswith(FRAMING_MESSAGES)
        )
        rejected = sum(1 for frame in frames if frame.strip() and rejected_by_sdk(frame.strip()))
        assert framing_errors == rejected, (framing_errors, rejected, frames, replies)
        pending, cancels = requests_in(frames)
        pending -= {r.get("id") for r in replies}
        while pending and not cancels:
            reply = self.server.receive()
            replies.append(reply)
            pending.discard(reply.get("id"))
        for reply in replies:
            assert well_formed(reply), reply
            assert reply.get("id") is None or reply.get("id") in self.sent_ids, reply
        listed = self.server.request("tools/list")
        if initialized:
            assert len(listed["result"]["tools"]) == self.expected_tools, listed
        else:
            assert well_formed(listed), listed
        return replies


@pytest.fixture
def fuzz_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Callable[..., Fuzzer]]:
    """Start (and afterwards kill) a server: built-ins in ``tmp_path/root`` and the testkit plugin."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "file.txt").write_text("hello\n")
    started: list[Fuzzer] = []

    def start(*, initialize: bool = True) -> Fuzzer:
        server = RawServer("--root", str(root), cwd=root)
        expected = None
        if initialize:
            server.initialize()
            expected = len(server.request("tools/list")["result"]["tools"])
            assert expected >= 14
        fuzzer = Fuzzer(server, expected)
        started.append(fuzzer)
        return fuzzer

    yield start
    for fuzzer in started:
        report(
            request.config,
            f"fuzz {request.node.name}: {fuzzer.server.frames_sent:,} frames sent in "
            f"{fuzzer.probes:,} batches; the server answered every probe",
        )
        alive = fuzzer.server.process.poll() is None
        fuzzer.server.kill()
        assert alive, f"the server exited: {fuzzer.server.stderr()}"


# ---------------------------------------------------------------- end to end


def test_arbitrary_lines_get_framing_errors_and_the_server_keeps_serving(
    fuzz_server: Callable[..., Fuzzer],
) -> None:
    fuzzer = fuzz_server()

    @fuzz_settings(500)
    @given(st.lists(st.one_of(byte_lines, text_lines, deep_frames), min_size=1, max_size=12))
    def batch(frames: list[bytes]) -> None:
        fuzzer.exchange(frames)

    batch()


def test_wrong_json_rpc_shapes_ids_and_methods_never_break_the_session(
    fuzz_server: Callable[..., Fuzzer],
) -> None:
    fuzzer = fuzz_server()

    @fuzz_settings(600)
    @given(st.lists(any_frames, min_size=1, max_size=12))
    def batch(frames: list[bytes]) -> None:
        fuzzer.exchange(frames)

    batch()


def test_calls_before_initialize_are_answered_and_initialize_still_works(
    fuzz_server: Callable[..., Fuzzer],
) -> None:
    fuzzer = fuzz_server(initialize=False)
    before_init = st.fixed_dictionaries(
        {
            "jsonrpc": st.just("2.0"),
            "id": st.integers(min_value=1, max_value=2**53),
            "method": st.sampled_from([m for m in KNOWN_METHODS if m != "initialize"]) | st.text(max_size=20),
        },
        optional={"params": st.dictionaries(st.text(max_size=10), json_values, max_size=3)},
    ).map(lambda message: json.dumps(message).encode())

    @fuzz_settings(150)
    @given(st.lists(before_init | any_frames, min_size=1, max_size=8))
    def batch(frames: list[bytes]) -> None:
        fuzzer.exchange(frames, initialized=False)

    batch()
    reply = fuzzer.server.initialize()
    assert reply["result"]["serverInfo"]["name"] == "awf-mcp-server"
    assert len(fuzzer.server.request("tools/list")["result"]["tools"]) >= 14


def test_wrongly_typed_arguments_for_every_tool_are_error_results(
    fuzz_server: Callable[..., Fuzzer],
) -> None:
    fuzzer = fuzz_server()
    tools = fuzzer.server.request("tools/list")["result"]["tools"]
    names = {tool["name"] for tool in tools}
    assert {"Read", "Write", "Edit", "Bash", "Glob", "Grep", "testkit_echo", "testkit_sleep"} <= names
    calls = st.sampled_from(tools).flatmap(
        lambda tool: wrong_arguments(tool).map(lambda arguments: (tool["name"], arguments))
    )
    tried: set[str] = set()

    @fuzz_settings(500)
    @given(st.lists(calls, min_size=1, max_size=8))
    def batch(batch_calls: list[tuple[str, Any]]) -> None:
        first = fuzzer.server.next_id + 1000
        fuzzer.server.next_id = first + len(batch_calls)
        frames = [
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": first + n,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
            ).encode()
            for n, (name, arguments) in enumerate(batch_calls)
        ]
        replies = {reply["id"]: reply for reply in fuzzer.exchange(frames)}
        for n, (name, arguments) in enumerate(batch_calls):
            reply = replies[first + n]
            tried.add(name)
            if "error" in reply:
                assert reply["error"]["code"] == types.INVALID_PARAMS, reply
                assert not isinstance(arguments, dict), reply
            else:
                assert reply["result"]["isError"] is True, (name, arguments, reply)
                text = reply["result"]["content"][0]["text"]
                assert text.startswith(f"invalid arguments for {name}"), (name, arguments, text)

    batch()
    assert len(tried) >= min(len(tools), 10)


# ---------------------------------------------------------------- in process: the frame layer


def reference_frames(data: bytes, limit: int) -> list[Frame | Oversized]:
    """What FrameReader must yield for ``data``: stripped non-empty lines, Oversized past ``limit``."""
    lines = data.split(b"\n")
    expected: list[Frame | Oversized] = []
    for line in lines:
        if len(line) > limit:
            expected.append(Oversized(len(line)))
        elif line.strip():
            expected.append(Frame(line.strip()))
    return expected


def read_all(chunks: list[bytes], limit: int) -> list[Frame | Oversized]:
    """Feed ``chunks`` through a pipe to a FrameReader and collect what it yields until EOF."""
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as out:
            for chunk in chunks:
                out.write(chunk)

    writer = threading.Thread(target=feed)
    writer.start()

    async def collect() -> list[Frame | Oversized]:
        return [item async for item in FrameReader(read_fd, limit).frames()]

    try:
        return anyio.run(collect)
    finally:
        writer.join()
        os.close(read_fd)


@fuzz_settings(300)
@given(
    st.lists(st.binary(max_size=200) | st.sampled_from([b"\n", b"\r\n", b" \n", b"x" * 70]), max_size=20),
    st.integers(min_value=1, max_value=64),
)
def test_frame_reader_matches_the_line_model(chunks: list[bytes], limit: int) -> None:
    assert read_all(chunks, limit) == reference_frames(b"".join(chunks), limit)


@fuzz_settings(1000)
@given(
    st.one_of(
        st.binary(max_size=300), message_lines, deep_frames, json_values.map(json.dumps).map(str.encode)
    )
)
def test_the_framing_error_reply_is_one_json_rpc_error_line(data: bytes) -> None:
    line = frame_error(data)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    reply = json.loads(line)
    assert well_formed(reply) and reply["error"]["code"] in (types.PARSE_ERROR, types.INVALID_REQUEST)
    request_id = reply.get("id")
    assert request_id is None or (isinstance(request_id, str | int) and not isinstance(request_id, bool))


@fuzz_settings(500)
@given(
    st.one_of(
        st.binary(max_size=300), message_lines, deep_frames, json_values.map(json.dumps).map(str.encode)
    )
)
def test_the_servers_framing_error_names_the_sdks_reason(data: bytes) -> None:
    try:
        types.jsonrpc_message_adapter.validate_json(data, by_name=False)
    except Exception as exc:
        problem = json_problem(exc)
    else:
        return
    reply = json.loads(frame_error(data, problem))
    assert well_formed(reply) and str(reply["error"]["message"]).startswith(FRAMING_MESSAGES)
    expected = types.PARSE_ERROR if problem is not None else types.INVALID_REQUEST
    assert reply["error"]["code"] == expected


lone_surrogates = st.integers(min_value=0xD800, max_value=0xDFFF).map(chr)
any_text = st.text(alphabet=st.characters() | lone_surrogates, max_size=40)
plugin_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_text, inner, max_size=4),
    max_leaves=20,
)


@fuzz_settings(500)
@given(st.lists(any_text, max_size=4), plugin_values, st.booleans())
def test_any_plugin_result_becomes_one_strict_utf8_frame(
    texts: list[str], structured: Any, error: bool
) -> None:
    result = ToolResult(
        content=[ToolContent.of_text(t) for t in texts], is_error=error, structured_content=structured
    )
    mapped = result_to_mcp(result, "fuzz_tool").model_dump(by_alias=True, mode="json", exclude_none=True)
    frame = encode_reply(types.JSONRPCResponse(jsonrpc="2.0", id=1, result=mapped))
    assert frame is not None and frame.endswith(b"\n") and frame.count(b"\n") == 1
    reply = json.loads(frame.decode("utf-8"))  # strict: a lone surrogate cannot pass
    assert reply["id"] == 1 and "result" in reply, reply
