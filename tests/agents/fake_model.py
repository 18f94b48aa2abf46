"""A loopback stand-in for the model APIs of Claude Code, Gemini CLI and Codex CLI.

One HTTP server on 127.0.0.1 speaks just enough of three wire protocols:

* the Anthropic Messages API (``POST /v1/messages``, streaming SSE or JSON),
* the Gemini API (``:generateContent`` / ``:streamGenerateContent?alt=sse``),
* the OpenAI Responses API (``POST /v1/responses``, streaming SSE).

The script is one scenario: when a request offers the awf tool named by the
scenario (``mcp__awf__Read``, ``mcp_awf_Read`` ...: any tool name that ends in
the awf tool's name and mentions the server), the first turn answers with a call
to it; when the request carries that call's result, the answer is final text that
echoes the result (``FINAL: <result>``). Anything else (title generation,
routing, quota probes) gets a short plain answer. Every request is recorded, so a
test can assert what the agent sent back: the tool result, produced by
``awf-mcp serve``, arrives here only if the agent really ran the tool.

Run as a script for manual experiments::

    python tests/agents/fake_model.py --port 8765 --tool Read --args '{"path": "marker.txt"}'
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

FINAL_PREFIX = "FINAL: "
CALL_ID = "call_awf_1"


@dataclass
class Scenario:
    """Which awf tool the fake model calls, with which arguments."""

    tool: str = "Read"
    arguments: dict[str, Any] = field(default_factory=dict)
    server: str = "awf"
    then: tuple[str, dict[str, Any]] | None = None
    """A second awf tool to call, with its arguments, once the first one's result came back
    (Gemini API only): the final text then echoes the second result."""


@dataclass
class Exchange:
    """One recorded request and what the fake model answered."""

    path: str
    body: Any
    answer: str  # "tool_call", "final", "plain", "unknown"
    tool_names: list[str] = field(default_factory=list)
    tool_result: str | None = None


class FakeModel:
    """The server; ``url`` is its base URL, ``exchanges`` the recorded requests."""

    def __init__(self, scenario: Scenario, port: int = 0) -> None:
        self.scenario = scenario
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", port), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> FakeModel:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what tests look at

    def tool_results(self) -> list[str]:
        with self._lock:
            return [e.tool_result for e in self.exchanges if e.tool_result is not None]

    def answers(self) -> list[str]:
        with self._lock:
            return [e.answer for e in self.exchanges]

    def summary(self) -> str:
        with self._lock:
            rows = [f"{e.answer:9} {e.path} tools={len(e.tool_names)}" for e in self.exchanges]
        return "\n".join(rows) or "(no requests)"

    def record(self, exchange: Exchange) -> None:
        with self._lock:
            self.exchanges.append(exchange)

    # ---- decisions shared by the three protocols

    def pick_tool(self, names: list[str], wanted: str | None = None) -> str | None:
        """The agent's name for the scenario's tool (or WANTED) among NAMES, if it is offered."""
        wanted = wanted or self.scenario.tool
        for name in names:
            if name.endswith(wanted) and self.scenario.server in name[: -len(wanted)]:
                return name
        return None


class _Handler(BaseHTTPRequestHandler):
    model: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_HEAD(self) -> None:
        self._send_json({})

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        self.model.record(Exchange(path=f"GET {path}", body=None, answer="unknown"))
        if path.endswith("/models"):
            self._send_json({"object": "list", "data": [], "models": []})
        else:
            self._send_json({}, status=404)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.headers.get("Content-Encoding", "") == "zstd" or raw[:4] == b"\x28\xb5\x2f\xfd":
            self.model.record(Exchange(path=self.path, body=None, answer="unknown"))
            self._send_json({"error": "compressed bodies are not supported"}, status=415)
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = None
        url = urlsplit(self.path)
        path = url.path
        if path.endswith("/v1/messages"):
            self._anthropic(body, path)
        elif path.endswith("/count_tokens"):
            self.model.record(Exchange(path=path, body=body, answer="plain"))
            self._send_json({"input_tokens": 10})
        elif ":streamGenerateContent" in path or ":generateContent" in path:
            self._gemini(body, path, stream=":streamGenerateContent" in path)
        elif path.endswith(":countTokens"):
            self.model.record(Exchange(path=path, body=body, answer="plain"))
            self._send_json({"totalTokens": 10})
        elif path.endswith("/responses"):
            self._openai(body, path)
        else:
            self.model.record(Exchange(path=path, body=body, answer="unknown"))
            self._send_json({"error": {"message": f"fake model: no such endpoint {path}"}}, status=404)

    # ---- plumbing

    def _send_json(self, payload: Any, status: int = 200) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_sse(self, events: list[tuple[str | None, Any]]) -> None:
        chunks = []
        for name, payload in events:
            prefix = f"event: {name}\n" if name else ""
            chunks.append(f"{prefix}data: {json.dumps(payload)}\n\n")
        data = "".join(chunks).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    # ---- Anthropic Messages

    def _anthropic(self, body: Any, path: str) -> None:
        body = body or {}
        names = [t.get("name", "") for t in body.get("tools") or [] if isinstance(t, dict)]
        result = _anthropic_tool_result(body.get("messages") or [])
        tool = self.model.pick_tool(names)
        blocks: list[dict[str, Any]]
        if result is not None:
            answer, blocks, stop = "final", [{"type": "text", "text": FINAL_PREFIX + result}], "end_turn"
        elif tool is not None:
            answer = "tool_call"
            blocks = [
                {
                    "type": "tool_use",
                    "id": "toolu_awf_1",
                    "name": tool,
                    "input": self.model.scenario.arguments,
                }
            ]
            stop = "tool_use"
        else:
            answer, blocks, stop = "plain", [{"type": "text", "text": "ok"}], "end_turn"
        self.model.record(Exchange(path, body, answer, names, result))
        message = {
            "id": f"msg_{time.monotonic_ns()}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-fake"),
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        if not body.get("stream"):
            self._send_json({**message, "content": blocks, "stop_reason": stop})
            return
        events: list[tuple[str | None, Any]] = [
            (
                "message_start",
                {"type": "message_start", "message": {**message, "content": [], "stop_reason": None}},
            )
        ]
        for index, block in enumerate(blocks):
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events += [
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": index, "content_block": start},
                ),
                ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
                ("content_block_stop", {"type": "content_block_stop", "index": index}),
            ]
        events += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        self._send_sse(events)

    # ---- Gemini

    def _gemini(self, body: Any, path: str, stream: bool) -> None:
        body = body or {}
        names = [
            d.get("name", "")
            for t in body.get("tools") or []
            if isinstance(t, dict)
            for d in t.get("functionDeclarations") or []
        ]
        result = _gemini_tool_result(body.get("contents") or [])
        tool = self.model.pick_tool(names)
        wants_json = (body.get("generationConfig") or {}).get("responseMimeType") == "application/json"
        parts: list[dict[str, Any]]
        then = self.model.scenario.then
        answered = _gemini_results(body.get("contents") or [])
        if result is not None and then is not None and answered == 1:
            second = self.model.pick_tool(names, then[0])
            answer = "tool_call"
            parts = [{"functionCall": {"name": second or then[0], "args": then[1]}}]
        elif result is not None:
            answer, parts = "final", [{"text": FINAL_PREFIX + result}]
        elif tool is not None:
            answer = "tool_call"
            parts = [{"functionCall": {"name": tool, "args": self.model.scenario.arguments}}]
        elif wants_json:
            answer, parts = "plain", [{"text": _gemini_json_answer(body)}]
        else:
            answer, parts = "plain", [{"text": "ok"}]
        self.model.record(Exchange(path, body, answer, names, result))
        payload = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-fake",
        }
        if stream:
            self._send_sse([(None, payload)])
        else:
            self._send_json(payload)

    # ---- OpenAI Responses

    def _openai(self, body: Any, path: str) -> None:
        body = body or {}
        namespaces = _openai_tools(body.get("tools") or [])
        names = list(namespaces)
        result = _openai_tool_result(body.get("input") or [])
        tool = self.model.pick_tool(names)
        response_id = f"resp_{time.monotonic_ns()}"
        if result is not None:
            answer = "final"
            item: dict[str, Any] = {
                "type": "message",
                "id": "msg_awf_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": FINAL_PREFIX + result, "annotations": []}],
            }
        elif tool is not None:
            answer = "tool_call"
            namespace, short = namespaces[tool]
            item = {
                "type": "function_call",
                "id": "fc_awf_1",
                "call_id": CALL_ID,
                "name": short,
                "arguments": json.dumps(self.model.scenario.arguments),
                "status": "completed",
            }
            if namespace:
                item["namespace"] = namespace
        else:
            answer = "plain"
            item = {
                "type": "message",
                "id": "msg_plain",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "ok", "annotations": []}],
            }
        self.model.record(Exchange(path, body, answer, names, result))
        response = {"id": response_id, "object": "response", "status": "in_progress", "output": []}
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        events: list[tuple[str | None, Any]] = [
            ("response.created", {"type": "response.created", "response": response}),
            (
                "response.output_item.added",
                {"type": "response.output_item.added", "output_index": 0, "item": item},
            ),
        ]
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                (
                    "response.output_text.delta",
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": 0,
                        "content_index": 0,
                        "delta": text,
                    },
                )
            )
        events += [
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": 0, "item": item},
            ),
            (
                "response.completed",
                {
                    "type": "response.completed",
                    "response": {**response, "status": "completed", "output": [item], "usage": usage},
                },
            ),
        ]
        self._send_sse(events)


# ---- request parsing


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(c) for c in content)
    if isinstance(content, dict):
        if "text" in content:
            return str(content["text"])
        if "content" in content:
            return _text_of(content["content"])
        return json.dumps(content)
    return "" if content is None else str(content)


def _anthropic_tool_result(messages: list[Any]) -> str | None:
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        return None
    content = messages[-1].get("content")
    if not isinstance(content, list):
        return None
    for block in content:
        if (
            isinstance(block, dict)
            and block.get("type") == "tool_result"
            and block.get("tool_use_id") == "toolu_awf_1"
        ):
            return _text_of(block.get("content"))
    return None


def _gemini_tool_result(contents: list[Any]) -> str | None:
    if not contents or not isinstance(contents[-1], dict):
        return None
    for part in contents[-1].get("parts") or []:
        if isinstance(part, dict) and "functionResponse" in part:
            response = part["functionResponse"].get("response")
            return _text_of(response.get("output", response) if isinstance(response, dict) else response)
    return None


def _gemini_results(contents: list[Any]) -> int:
    """How many tool results the conversation holds."""
    return sum(
        1
        for content in contents
        if isinstance(content, dict)
        for part in content.get("parts") or []
        if isinstance(part, dict) and "functionResponse" in part
    )


def _openai_tool_result(items: list[Any]) -> str | None:
    found = None
    for item in items if isinstance(items, list) else []:
        if (
            isinstance(item, dict)
            and item.get("type") == "function_call_output"
            and item.get("call_id") == CALL_ID
        ):
            output = item.get("output")
            found = _text_of(output)
    if found is None:
        return None
    # Only the turn right after the call is "final": later turns have an assistant reply.
    last = items[-1]
    if isinstance(last, dict) and last.get("type") == "message" and last.get("role") == "assistant":
        return None
    return found


def _openai_tools(tools: list[Any]) -> dict[str, tuple[str | None, str]]:
    """Full tool name -> (namespace, name): Codex groups MCP tools as ``namespace`` tools."""
    found: dict[str, tuple[str | None, str]] = {}
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        if tool.get("type") == "function" and tool.get("name"):
            found[str(tool["name"])] = (None, str(tool["name"]))
        elif tool.get("type") == "namespace":
            namespace = str(tool.get("name") or "")
            for child in tool.get("tools") or []:
                if isinstance(child, dict) and child.get("name"):
                    name = str(child["name"])
                    found[f"{namespace}__{name}".replace("____", "__")] = (namespace, name)
    return found


def _gemini_json_answer(body: dict[str, Any]) -> str:
    """A plausible answer to the CLI's own JSON-mode helper requests (routing, next speaker)."""
    schema = (
        (body.get("generationConfig") or {}).get("responseJsonSchema")
        or (body.get("generationConfig") or {}).get("responseSchema")
        or {}
    )
    props = schema.get("properties") or {}
    answer: dict[str, Any] = {}
    for key, spec in props.items():
        kind = (spec or {}).get("type", "string")
        enum = (spec or {}).get("enum")
        if enum:
            answer[key] = enum[0]
        elif str(kind).lower() == "boolean":
            answer[key] = False
        elif str(kind).lower() in ("number", "integer"):
            answer[key] = (spec or {}).get("minimum", 1)
        else:
            answer[key] = "user" if key == "next_speaker" else "fake"
    return json.dumps(answer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--tool", default="Read")
    parser.add_argument("--args", default="{}", help="tool arguments as JSON")
    options = parser.parse_args()
    model = FakeModel(Scenario(tool=options.tool, arguments=json.loads(options.args)), port=options.port)
    print(f"fake model on {model.url}", flush=True)
    model.start()
    try:
        while True:
            time.sleep(1)
    except KeyboardInterrupt:
        print(model.summary())
        model.stop()


if __name__ == "__main__":
    main()
