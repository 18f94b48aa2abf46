"""One stdio upstream process shared by the shared server's sessions: the hub that runs it.

Contract
--------
In a session of the shared server (:mod:`awf_mcp.cli.shared`), a stdio upstream is not started
by the session: :func:`open_shared` asks the shared server for the *hub* of its launch (the
contained command line, environment and directory:
:func:`~awf_mcp.processes.upstreamprocess.contained_launch`) and of the session's first message
to it (its protocol version and client capabilities) and its roots: see :func:`share_note`.
Sessions whose launch and note are equal get the same hub, hence the same server process; any
difference (another root, policy, ``env``, client capabilities) another.

A hub (:func:`run_hub`) is a process forked by the shared server. It starts the server under
its own keeper when its first session connects, and passes every message between the server
and its sessions, parsed as JSON and otherwise untouched but for what routing needs:

* **ids**: a session's request goes upstream under an id of the hub's own, and the answer goes
  back under the session's id; so does the progress token in its ``_meta``, and a session's
  ``notifications/cancelled`` names the hub's id. A session that leaves has its requests still
  running cancelled upstream.
* **initialize** is sent upstream once. Later sessions get its cached result (their note is
  the same, so is what they would have been answered); ``notifications/initialized`` goes once.
* **the server's notifications**: progress goes to the session whose token it carries;
  everything else (lists changed, log messages, resource updates) to every session.
* **the server's requests**: ``ping`` is answered here. ``roots/list``, ``sampling`` and
  ``elicitation`` go to the one session with a request running (each session's provider
  forwards to its own agent); with none, to the only session; where that is ambiguous, the
  server gets an error saying so rather than another session's agent being asked.
* **subscriptions** are counted: the server is subscribed to a URI while any session is, and
  unsubscribed when the last one unsubscribes or leaves.
* the server's stderr lines reach every session as ``#stderr LINE``, and its end as
  ``#exit HOW`` (a ``#`` line is never JSON-RPC); then the hub closes and exits, and the next
  call starts a new one.

Bounds: a line over :data:`~awf_mcp.wire.framing.MAX_MESSAGE_BYTES` from a session drops that
session, from the server ends the hub; a session that does not read has its connection dropped
once :data:`CLIENT_BUFFER_BYTES` wait for it, and a server that does not read ends the hub the
same way. A line of the server's that is not JSON reaches the sessions as such (each reports
it), never as a ``#`` note. Each connection's peer must be this uid. The hub
ends with the shared server (its lifeline pipe), on SIGTERM (stopping the server as a session
does: stdin closed, SIGTERM, SIGKILL), and after ``[shared] idle_seconds`` with no session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import anyio

from awf_mcp.processes.upstreamprocess import UPSTREAM_VARIABLE, start_kept
from awf_mcp.wire.framing import MAX_MESSAGE_BYTES
from awf_mcp.wire.processpipes import describe_exit, exited, lines, pipes, stderr_lines, stop_process

log = logging.getLogger("awf_mcp.upstream")

Launch = tuple[list[str], dict[str, str], str]
"""A contained command line, its environment and its working directory."""

Broker = Callable[[Launch, str], str]
"""Asks the shared server for the hub of a launch and note: its socket's path (:class:`OSError`
when there is none to be had)."""

CLIENT_BUFFER_BYTES = 4 * MAX_MESSAGE_BYTES
CONNECT_ATTEMPTS = 3
STDERR_LINE_BYTES = 2000
SUBSCRIPTIONS = ("resources/subscribe", "resources/unsubscribe")

_broker: list[Broker] = []


def use_broker(broker: Broker) -> None:
    """In a session of the shared server: share stdio upstreams through ``broker``."""
    _broker[:] = [broker]


def sharing() -> bool:
    """Whether stdio upstreams are shared (this process is a session of the shared server)."""
    return bool(_broker)


def share_note(first: bytes, roots: Sequence[str] = ()) -> str:
    """What besides the launch decides that two sessions may share a server, as canonical JSON:
    the session's ``roots`` (the server may ask for them; under the sandbox they are part of the
    launch already), and of its first message the method, and the protocol version and client
    capabilities it declares (``initialize``'s params, or a stateless request's ``_meta``)."""
    try:
        message = json.loads(first)
    except ValueError:
        return ""
    if not isinstance(message, dict):
        return ""
    params = _params(message)
    declared = params.get("_meta") if message.get("method") != "initialize" else params
    declared = dict(declared) if isinstance(declared, dict) else {}
    for personal in ("clientInfo", "progressToken"):
        declared.pop(personal, None)
    return json.dumps([message.get("method"), declared, sorted(roots)], sort_keys=True, separators=(",", ":"))


async def open_shared(
    launch: Launch, first: bytes, roots: Sequence[str]
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection to the hub of ``launch`` for a session with ``roots`` whose first message
    is ``first``."""
    broker = _broker[0]
    failure: OSError = ConnectionRefusedError("no hub")
    for _attempt in range(CONNECT_ATTEMPTS):  # a hub that was just ending is replaced by the next
        path = await anyio.to_thread.run_sync(broker, launch, share_note(first, roots))
        try:
            return await asyncio.open_unix_connection(path, limit=MAX_MESSAGE_BYTES)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            failure = exc
            await anyio.sleep(0.05)
    raise failure


def run_hub(listener: socket.socket, launch: Launch, idle_seconds: float, lifeline: int) -> NoReturn:
    """In the forked hub process: serve ``listener``'s sessions with ``launch``'s server, then exit."""
    code = 0
    try:
        asyncio.run(Hub(listener, launch, idle_seconds, lifeline).run())
    except BaseException:
        log.exception("the shared upstream hub failed")
        code = 1
    finally:
        os._exit(code)


def _params(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params")
    return params if isinstance(params, dict) else {}


@dataclass(eq=False)
class _Session:
    """One session connected to the hub."""

    writer: asyncio.StreamWriter
    running: dict[Any, int] = field(default_factory=dict)
    """Its requests upstream: its id to the hub's."""
    subscribed: set[str] = field(default_factory=set)


class Hub:
    """The server's process and its sessions; see the module docstring."""

    def __init__(self, listener: socket.socket, launch: Launch, idle_seconds: float, lifeline: int) -> None:
        self.listener = listener
        self.launch = launch
        self.idle_seconds = idle_seconds
        self.lifeline = lifeline
        self.sessions: list[_Session] = []
        self.done = asyncio.Event()
        self.changed = asyncio.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.backlog: list[bytes] = []
        self.next_id = 0
        self.pending: dict[int, tuple[_Session, Any] | None] = {}
        """The hub's id of each request upstream: whose, and under which id (``None``: the hub's own)."""
        self.tokens: dict[int, tuple[_Session, Any]] = {}
        self.asked: dict[Any, _Session] = {}
        """The server's requests out: its id to the session asked."""
        self.subscribers: dict[str, set[_Session]] = {}
        self.initialize_id: int | None = None
        self.initialized: dict[str, Any] | None = None
        self.waiting: list[tuple[_Session, Any]] = []
        self.initialized_sent = False
        self.ended = ""

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        loop.add_reader(self.lifeline, self.finish, "the shared server ended")
        loop.add_signal_handler(signal.SIGTERM, self.finish, "stopped (SIGTERM)")
        server = await asyncio.start_unix_server(self.connected, sock=self.listener, limit=MAX_MESSAGE_BYTES)
        process_task: asyncio.Task[None] | None = None
        try:
            while not self.done.is_set():
                if process_task is None and self.sessions:
                    process_task = asyncio.create_task(self.run_server())
                self.changed.clear()
                timeout = self.idle_seconds if not self.sessions else None
                waiters = [asyncio.ensure_future(event.wait()) for event in (self.done, self.changed)]
                finished, _ = await asyncio.wait(
                    waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
                )
                for waiter in waiters:
                    waiter.cancel()
                if not finished and not self.sessions:
                    self.finish(f"no session used it for {self.idle_seconds:g} s")
        finally:
            with contextlib.suppress(OSError):
                os.unlink(self.listener.getsockname())  # no session is sent here any more
            server.close()
            if self.process is not None and self.stdin is not None:
                await stop_process(self.process, self.stdin)
            if process_task is not None:
                process_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await process_task
            for session in self.sessions:
                session.writer.close()

    async def run_server(self) -> None:
        argv, env, cwd = self.launch
        try:  # from the event loop's thread: the keeper's death signal follows the thread
            process = start_kept(argv, env, cwd)
        except OSError as exc:
            self.end(f"it could not be started: {exc}")
            return
        stdin, stdout, stderr, readers = await pipes(process)
        self.process, self.stdin = process, stdin
        for data in self.backlog:
            stdin.write(data)
        self.backlog = []

        async def pump_stderr() -> None:
            async for line in stderr_lines(stderr, STDERR_LINE_BYTES):
                self.broadcast(b"#stderr " + line[:STDERR_LINE_BYTES].replace(b"\r", b"") + b"\n")

        errors = asyncio.create_task(pump_stderr())
        try:
            async for line in lines(stdout):
                if line is None:
                    self.end(f"it sent a message over the {MAX_MESSAGE_BYTES}-byte limit")
                    return
                self.from_server(line)
            await exited(process, 0.2)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(errors, 0.2)
            self.end(describe_exit(process.returncode))
        finally:
            errors.cancel()
            for reader in readers:
                reader.close()

    def end(self, how: str) -> None:
        self.broadcast(f"#exit {how}\n".encode())
        self.finish(f"the server ended: {how}")

    def finish(self, why: str) -> None:
        if not self.done.is_set():
            name = self.launch[1].get(UPSTREAM_VARIABLE, "?")
            said = f"awf-mcp: shared upstream '{name}' (pid {os.getpid()}) ends: {why}"
            print(said, file=sys.stderr, flush=True)  # the shared server's log
        self.done.set()

    # -- sessions --------------------------------------------------------------------------

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("socket")
        try:
            credentials = peer.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            if struct.unpack("3i", credentials)[1] != os.getuid():
                writer.close()
                return
        except OSError:
            writer.close()
            return
        session = _Session(writer)
        self.sessions.append(session)
        self.changed.set()
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                except asyncio.CancelledError:
                    return  # the hub is ending: the server's own callback would report it as a failure
                if line.strip():
                    self.from_session(session, line)
        finally:
            self.leave(session)

    def leave(self, session: _Session) -> None:
        if session not in self.sessions:
            return
        self.sessions.remove(session)
        self.changed.set()
        session.writer.close()
        for hub_id in session.running.values():
            self.pending.pop(hub_id, None)
            self.tokens.pop(hub_id, None)
            note = {"requestId": hub_id, "reason": "the session that sent it ended"}
            self.to_server({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": note})
        for uri in session.subscribed:
            self.unsubscribe(session, uri)
        for request_id, asked in list(self.asked.items()):
            if asked is session:
                self.refuse(request_id, "the session asked ended before answering")
        self.waiting = [(waiter, id_) for waiter, id_ in self.waiting if waiter is not session]

    def send(self, session: _Session, message: dict[str, Any]) -> None:
        self.write(session, json.dumps(message, separators=(",", ":")).encode() + b"\n")

    def write(self, session: _Session, data: bytes) -> None:
        if session.writer.is_closing():
            return
        session.writer.write(data)
        if session.writer.transport.get_write_buffer_size() > CLIENT_BUFFER_BYTES:
            log.warning("a session of the shared upstream does not read; dropping it")
            self.leave(session)

    def broadcast(self, data: bytes) -> None:
        for session in list(self.sessions):
            self.write(session, data)

    def from_session(self, session: _Session, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            return  # the session's SDK sends JSON-RPC only
        if not isinstance(message, dict):
            return
        method, message_id = message.get("method"), message.get("id")
        if method is None:  # an answer to a request of the server's
            if self.asked.get(message_id) is session:
                del self.asked[message_id]
                self.to_server(message)
            return
        if message_id is None:
            self.session_notification(session, method, message)
            return
        params = _params(message)
        if method == "initialize" and self.initialized is not None:
            self.send(session, {"jsonrpc": "2.0", "id": message_id, "result": self.initialized})
        elif method == "initialize" and self.initialize_id is not None:
            self.waiting.append((session, message_id))
        elif method in SUBSCRIPTIONS and isinstance(params.get("uri"), str):
            self.subscription(session, method, params["uri"], message)
        else:
            hub_id = self.forward(session, message)
            if method == "initialize":
                self.initialize_id = hub_id

    def forward(self, session: _Session | None, message: dict[str, Any]) -> int:
        """Send a request upstream under an id (and progress token) of the hub's own."""
        self.next_id += 1
        hub_id = self.next_id
        self.pending[hub_id] = None if session is None else (session, message.get("id"))
        if session is not None:
            session.running[message.get("id")] = hub_id
            params = _params(message)
            meta = params.get("_meta")
            if isinstance(meta, dict) and "progressToken" in meta:
                self.tokens[hub_id] = (session, meta["progressToken"])
                message = {**message, "params": {**params, "_meta": {**meta, "progressToken": hub_id}}}
        self.to_server({**message, "id": hub_id})
        return hub_id

    def session_notification(self, session: _Session, method: str, message: dict[str, Any]) -> None:
        if method == "notifications/initialized":
            if not self.initialized_sent:
                self.initialized_sent = True
                self.to_server(message)
        elif method == "notifications/cancelled":
            params = _params(message)
            hub_id = session.running.get(params.get("requestId"))
            if hub_id is not None:
                self.to_server({**message, "params": {**params, "requestId": hub_id}})
        else:
            self.to_server(message)

    def subscription(self, session: _Session, method: str, uri: str, message: dict[str, Any]) -> None:
        holders = self.subscribers.setdefault(uri, set())
        if method == "resources/subscribe":
            first = not holders
            holders.add(session)
            session.subscribed.add(uri)
        else:
            holders.discard(session)
            session.subscribed.discard(uri)
            first = not holders
            if first:
                del self.subscribers[uri]
        if first:
            self.forward(session, message)
        else:
            self.send(session, {"jsonrpc": "2.0", "id": message.get("id"), "result": {}})

    def unsubscribe(self, session: _Session, uri: str) -> None:
        holders = self.subscribers.get(uri, set())
        holders.discard(session)
        if not holders:
            self.subscribers.pop(uri, None)
            request = {"jsonrpc": "2.0", "method": "resources/unsubscribe", "params": {"uri": uri}}
            self.forward(None, request)

    # -- the server ------------------------------------------------------------------------

    def to_server(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        if self.stdin is None:
            self.backlog.append(data)  # the server is starting: it reads these first
        elif not self.stdin.is_closing():
            self.stdin.write(data)
            if self.stdin.transport.get_write_buffer_size() > CLIENT_BUFFER_BYTES:
                self.end(f"it did not read its input ({CLIENT_BUFFER_BYTES} bytes waited)")

    def refuse(self, request_id: Any, why: str) -> None:
        self.asked.pop(request_id, None)
        error = {"code": -32603, "message": f"awf-mcp: {why}"}
        self.to_server({"jsonrpc": "2.0", "id": request_id, "error": error})

    def from_server(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:  # each session reports it as its own stdio relay does; never as a note
            self.broadcast((b" " + line if line.startswith(b"#") else line) + b"\n")
            return
        if not isinstance(message, dict):
            return
        method, message_id = message.get("method"), message.get("id")
        if method is None:
            self.answer(message_id, message)
        elif message_id is not None:
            self.server_request(method, message_id, message)
        elif method == "notifications/progress":
            params = _params(message)
            owner = self.tokens.get(params.get("progressToken"))  # type: ignore[arg-type]
            if owner is not None:
                self.send(owner[0], {**message, "params": {**params, "progressToken": owner[1]}})
        elif method == "notifications/cancelled":
            params = _params(message)
            asked = self.asked.pop(params.get("requestId"), None)
            if asked is not None:
                self.send(asked, message)
        else:
            self.broadcast(line + b"\n")

    def answer(self, hub_id: Any, message: dict[str, Any]) -> None:
        if not isinstance(hub_id, int):
            return
        owner = self.pending.pop(hub_id, None)
        self.tokens.pop(hub_id, None)
        if hub_id == self.initialize_id:
            self.initialize_id = None
            result = message.get("result")
            if isinstance(result, dict):
                self.initialized = result
            for waiter, waiter_id in self.waiting:
                self.send(waiter, {**message, "id": waiter_id})
            self.waiting = []
        if owner is None:
            return
        session, session_id = owner
        session.running.pop(session_id, None)
        self.send(session, {**message, "id": session_id})

    def server_request(self, method: str, request_id: Any, message: dict[str, Any]) -> None:
        if method == "ping":
            self.to_server({"jsonrpc": "2.0", "id": request_id, "result": {}})
            return
        busy = [session for session in self.sessions if session.running]
        candidates = busy or self.sessions
        if not candidates:
            self.refuse(request_id, "no session is connected to answer it")
        elif len(candidates) > 1 and method != "roots/list":
            self.refuse(request_id, "this server is shared by sessions, and which one it asks is ambiguous")
        else:
            self.asked[request_id] = candidates[-1]
            self.send(candidates[-1], message)
