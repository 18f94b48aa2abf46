"""The client channel: how a call asks its client for roots, a confirmation or a sample.

Each call gets a :class:`ClientChannel` (the :class:`~awf_mcp.ports.ClientChannel`
port) through which the core asks the client, on whichever protocol family the call arrived:

* up to 2025-11-25, as a server-to-client request on the session's back-channel,
  tied to the call (``related_request_id``, so over HTTP it rides the call's stream);
* on the stateless revision (2026-07-28: ``server/discover``, capabilities in each
  request's ``_meta``), a question raises :class:`~awf_mcp.ports.InputRequired`; the
  call is answered with an ``InputRequiredResult`` holding the request under a key
  derived from the question (method and parameters), and a ``request_state`` listing
  the keys asked and the answers received so far. The client retries the call with
  ``inputResponses``; the re-run call asks the same question, and its answer counts
  only if its key was asked (an answer to a question the server never put is
  ignored). ``request_state`` is sealed by the SDK's :class:`RequestStateBoundary`
  (AES-GCM under a key made at start-up, or the replicas' shared key, bound to the tool
  name and arguments, ten minutes to live), so a client can neither read nor forge it, nor move it to another
  call.

On the stateless revision the channel is also the call's :class:`~awf_mcp.core.clientchannel.RequestLog`:
the log level the request's ``_meta`` asked for (``io.modelcontextprotocol/logLevel``), and the
log messages of the upstreams it reaches sent on its own response stream, at that level and
above (the SDK drops the rest). Up to 2025-11-25 it has no level: log messages go to the
connections that set one with ``logging/setLevel`` (:mod:`awf_mcp.wire.offerings`).

The channel is also the call's :class:`~awf_mcp.core.clientchannel.ElicitationCompletion`: on 2025-11-25,
``notifications/elicitation/complete`` goes on the session's own channel (stdout, or the HTTP
session's standalone GET stream), bounded to :data:`NOTIFY_SECONDS`; earlier revisions lack
the notification and the stateless revision removed it, so nothing is sent there.

Client capabilities are read from the handshake or from the request's ``_meta``; a
question the client has no capability for is :class:`~awf_mcp.ports.ClientCannotAnswer`.
The client's roots are kept per session (stdio: the one client; HTTP: the
``mcp-session-id``, :func:`session_key`), and ``notifications/roots/list_changed`` drops them.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
from collections.abc import Hashable, Mapping
from typing import Any, TypedDict

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.request_state import compact_json
from mcp.server.validation import wants_sampling_tools
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, TypeAdapter, ValidationError

from awf_mcp.core.clientchannel import CLIENT_METHODS, LOG_LEVELS, feature_of
from awf_mcp.ports import (
    LOCAL_CALLER,
    Caller,
    ClientCannotAnswer,
    ClientFeature,
    InputRequired,
    visible_text,
)


def client_name(ctx: ServerRequestContext[Any]) -> str | None:
    """The ``clientInfo.name`` of the client making this request, when it said.

    From ``initialize`` on the handshake revisions; on the stateless revision (2026-07-28)
    from the request's own ``_meta`` envelope, which the SDK turns into the same
    ``client_params`` when it carries capabilities too, and which is read directly otherwise.
    """
    params = ctx.session.client_params
    if params is not None:
        return params.client_info.name
    info = (ctx.meta or {}).get(types.CLIENT_INFO_META_KEY)
    name = info.get("name") if isinstance(info, dict) else None
    return name if isinstance(name, str) else None


ELICITATION_COMPLETE_VERSION = "2025-11-25"
"""The revision that added ``notifications/elicitation/complete`` (the next one removed it)."""
NOTIFY_SECONDS = 1.0
"""How long a notification to a client that does not read may hold up its sender."""

INPUT_REQUIRED_VERSION = "2026-07-28"
"""The first revision without a back-channel: questions go out as ``InputRequiredResult``."""

_INPUT_REQUEST: TypeAdapter[types.InputRequest] = TypeAdapter(types.InputRequest)


def _result_type(method: str, params: Mapping[str, Any]) -> type[BaseModel]:
    if method == "roots/list":
        return types.ListRootsResult
    if method == "elicitation/create":
        return types.ElicitResult
    if wants_sampling_tools(params.get("tools"), params.get("toolChoice")):
        return types.CreateMessageResultWithTools
    return types.CreateMessageResult


def question_key(method: str, params: Mapping[str, Any]) -> str:
    """The key of a question in ``inputRequests``: the same question always has the same key."""
    digest = hashlib.sha256(compact_json({"m": method, "p": params}, sort_keys=True).encode()).digest()
    return f"{CLIENT_METHODS[method]}-{base64.urlsafe_b64encode(digest[:12]).decode()}"


def caller(ctx: ServerRequestContext[Any]) -> Caller:
    """Who made this request: the local user on stdio, else the HTTP request's authenticated caller."""
    if ctx.request is None:
        return LOCAL_CALLER
    from awf_mcp.wire.httpauth import caller_of  # HTTP only: stdio never loads the token checks

    return caller_of(ctx.request)


class CallOrigin(TypedDict):
    """Where a request comes from, as the invoker and the catalog take it (:func:`call_origin`)."""

    client_name: str | None
    channel: ClientChannel
    session: Hashable | None
    caller: Caller


def call_origin(ctx: ServerRequestContext[Any], channel: ClientChannel) -> CallOrigin:
    """The client, channel, session and caller of the request ``ctx``, for ``invoker.call`` and
    the catalog's prompts and reads alike."""
    return CallOrigin(
        client_name=client_name(ctx), channel=channel, session=session_key(ctx), caller=caller(ctx)
    )


def session_key(ctx: ServerRequestContext[Any]) -> Hashable | None:
    """Which client session a request belongs to: stdio has one; HTTP says it in a header."""
    if ctx.request is None:
        return "stdio"
    headers = getattr(ctx.request, "headers", None)
    session_id = headers.get("mcp-session-id") if headers is not None else None
    return f"http:{session_id}" if session_id else None


class ClientChannel:
    """The :class:`~awf_mcp.ports.ClientChannel` of one call; see the module docstring."""

    def __init__(self, ctx: ServerRequestContext[Any], params: types.InputResponseRequestParams) -> None:
        self.ctx = ctx
        self.stateless = is_version_at_least(ctx.protocol_version or "", INPUT_REQUIRED_VERSION)
        self.asked: set[str] = set()
        self.answers: dict[str, Any] = {}
        self.responses: Mapping[str, Any] = {}
        if self.stateless:
            self._restore(ctx, params)

    def _restore(self, ctx: ServerRequestContext[Any], params: types.InputResponseRequestParams) -> None:
        """What earlier rounds of this call asked and learnt (the state was unsealed by the SDK)."""
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            state = json.loads(params.request_state or "{}")
            self.asked = {key for key in state.get("asked", []) if isinstance(key, str)}
            answers = state.get("answers", {})
            self.answers = dict(answers) if isinstance(answers, dict) else {}
        raw = (ctx.params or {}).get("inputResponses")
        if isinstance(raw, dict):
            self.responses = raw
        elif params.input_responses:
            self.responses = {
                key: value.model_dump(by_alias=True, mode="json", exclude_none=True)
                for key, value in params.input_responses.items()
            }

    def log_level(self) -> str | None:
        """The log level this request asked for on the stateless revision; ``None`` otherwise."""
        if not self.stateless:
            return None
        level = (self.ctx.meta or {}).get(types.LOG_LEVEL_META_KEY)
        return level if level in LOG_LEVELS else None

    async def log(self, level: str, logger: str, data: Any) -> None:
        """Send one log message on this request's stream (the SDK keeps to the level asked)."""
        if level in LOG_LEVELS:
            await self.ctx.session.send_log_message(level, data, logger=visible_text(logger))  # type: ignore[arg-type]

    async def elicitation_complete(self, elicitation_id: str) -> None:
        """``notifications/elicitation/complete`` for ``elicitation_id``; see the module docstring."""
        version = self.ctx.protocol_version or ""
        if self.stateless or not is_version_at_least(version, ELICITATION_COMPLETE_VERSION):
            return
        with contextlib.suppress(Exception), anyio.move_on_after(NOTIFY_SECONDS):
            await self.ctx.session.send_elicit_complete(elicitation_id)

    def supports(self, feature: ClientFeature) -> bool:
        """True when the client declared the capability ``feature`` needs."""
        capabilities = self.ctx.session.client_capabilities
        if capabilities is None:
            return False
        if feature == "roots":
            return capabilities.roots is not None
        if feature == "sampling":
            return capabilities.sampling is not None
        elicitation = capabilities.elicitation
        if feature == "elicitation_url":
            return elicitation is not None and elicitation.url is not None
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The client's result for ``method``; see :class:`~awf_mcp.ports.ClientChannel`."""
        feature = feature_of(method, params)
        if feature is None:
            raise ClientCannotAnswer(f"{method} is not a request a server may send a client")
        if not self.supports(feature):
            raise ClientCannotAnswer(f"the client does not support {feature} (it did not declare it)")
        result_type = _result_type(method, params)
        if self.stateless:
            return self._answer(method, params, result_type)
        try:
            request = _INPUT_REQUEST.validate_python(
                {"method": method, "params": dict(params)}, by_name=False
            )
        except ValidationError as exc:
            raise ClientCannotAnswer(
                f"the {method} request is malformed ({exc.error_count()} errors)"
            ) from None
        try:
            result = await self.ctx.session.send_request(
                request,
                result_type,
                metadata=ServerMessageMetadata(related_request_id=self.ctx.request_id),
            )
        except MCPError as exc:
            raise ClientCannotAnswer(
                f"the client answered {method} with an error: {exc.error.message}"
            ) from None
        except ValidationError:
            raise ClientCannotAnswer(f"the client's answer to {method} is malformed") from None
        answer: Mapping[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        return answer

    def _answer(
        self, method: str, params: Mapping[str, Any], result_type: type[BaseModel]
    ) -> Mapping[str, Any]:
        key = question_key(method, params)
        known = self.answers.get(key)
        if isinstance(known, dict):
            return known
        response = self.responses.get(key)
        if response is None or key not in self.asked:
            raise InputRequired(key, method, params)
        try:
            answer: dict[str, Any] = result_type.model_validate(response, by_name=False).model_dump(
                by_alias=True, mode="json", exclude_none=True
            )
        except ValidationError:
            raise ClientCannotAnswer(f"the client's answer to {method} is malformed") from None
        self.answers[key] = answer
        return answer

    def input_required(self, question: InputRequired) -> types.InputRequiredResult:
        """The result that puts ``question`` to the client, carrying this call's progress so far."""
        request = _INPUT_REQUEST.validate_python(
            {"method": question.method, "params": dict(question.params)}, by_name=False
        )
        state = compact_json({"asked": [question.key], "answers": self.answers})
        return types.InputRequiredResult(input_requests={question.key: request}, request_state=state)
