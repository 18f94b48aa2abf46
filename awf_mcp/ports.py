"""The domain ports: what a tool is, what a call returns, what a provider does.

Everything else in awf-mcp speaks these types; only the SDK adapter
(:mod:`awf_mcp.wire.server`) translates them to and from MCP wire types. This module
imports the standard library only, so a provider never depends on the SDK.

Contract
--------
* A :class:`ToolProvider` lists :class:`ToolDefinition` objects and answers
  ``call_tool(name, arguments)`` with a :class:`ToolResult`. ``call_tool`` and
  ``close`` may be plain functions or coroutines: synchronous ones are run in a
  worker thread so a slow tool never blocks other requests.
* Arguments reach ``call_tool`` already validated against the tool's
  ``input_schema`` (required keys present, JSON types right).
* Raising from ``call_tool`` is allowed: the caller turns the exception into an
  ``isError`` result (``<ExceptionType>: <message>``). Return
  ``ToolResult.error(...)`` for errors the model should read verbatim.
* While a call runs, :func:`current_call` returns its :class:`CallContext`:
  progress reporting, a cancellation flag a long synchronous tool can poll, the
  roots the call is confined to, and the :class:`ClientChannel` to the agent's client.

The client channel
------------------
During a call the server may ask the agent's client something: its roots
(``roots/list``), a question for the user (``elicitation/create``), a completion from
its model (``sampling/createMessage``), or to follow a link (``elicitation/create`` in URL
mode, the ``elicitation_url`` feature). :class:`ClientChannel` is that port; the SDK
adapter implements it for both protocol families:

* up to revision 2025-11-25, as a request on the session's back-channel: ``ask``
  awaits the client's answer (the call timeout applies);
* on the stateless revision 2026-07-28 there is no back-channel: ``ask`` raises
  :class:`InputRequired`, the call ends with an ``input_required`` result, the
  client retries the call with its answers, and the same question, asked again by the
  re-run call, finds its answer. A call that asks must therefore ask the same
  questions, in the same order, before doing anything it cannot do twice.

``ask`` raises :class:`ClientCannotAnswer` when the client lacks the capability or
answers with an error. :class:`InputRequired` derives from :class:`BaseException` so
that a tool's ``except Exception`` cannot swallow it.
"""

from __future__ import annotations

import base64
import contextvars
import re
import threading
from collections.abc import Awaitable, Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

JSONSchema = Mapping[str, Any]
"""A JSON Schema document as a plain dict (``{"type": "object", ...}``)."""

BUILTIN_SOURCE = "builtin"
"""The ``source`` label of the built-in tools; plugins are ``plugin:<name>``."""


TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a tool name (and an MCP server name in a client's configuration) may be."""

MAX_TOOL_NAME_LENGTH = 64
"""The longest tool name clients accept, counted after their own prefix."""


def client_tool_name(server: str, tool: str = "") -> str:
    """How agents name a server's tool in permissions and limits: ``mcp__<server>__<tool>``.

    Without ``tool``, ``mcp__<server>``: every tool of that server.
    """
    return f"mcp__{server}__{tool}" if tool else f"mcp__{server}"


def visible_text(text: str) -> str:
    """``text`` with every lone surrogate written as a visible escape, so it always encodes as UTF-8.

    A file name that is not valid UTF-8 reaches Python as lone surrogates
    (``os.fsdecode``): byte ``0xe9`` becomes ``\\udce9``, shown here as ``\\xe9``. Any other
    lone surrogate, which a plugin may return, is shown as ``\\udXXX``. Text without any is
    returned unchanged (one cheap check).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(visible_char(char) for char in text)
    return text


def visible_char(char: str) -> str:
    """One character as :func:`visible_text` writes it: a lone surrogate escaped, anything else kept."""
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return f"\\u{code:04x}"
    return char


_NOT_INERT = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
"""What text from elsewhere may not put on a terminal or in a log line as it is: control characters
(C0, DEL, C1: ESC starts every ANSI sequence), line and paragraph separators, and the bidirectional
marks, embeddings, overrides and isolates (U+061C, U+200E/F, U+202A-202E, U+2066-2069) that make
text display in another order than it reads; and lone surrogates (bytes that were not UTF-8)."""


def _inert_char(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return visible_char(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def inert_text(text: str) -> str:
    """``text`` made inert for a terminal or a log line: each character of :data:`_NOT_INERT` is written
    as a visible escape (``\\x1b``, ``\\u202e``; an undecodable byte as :func:`visible_char` writes it),
    so it can neither run a terminal escape, reorder what is shown, nor start a line of its own.
    Every other character, backslashes included, is kept; text without any is returned unchanged.
    """
    if text.isascii() and text.isprintable():
        return text
    return _NOT_INERT.sub(_inert_char, text)


def inert_json(line: str) -> str:
    """A line of JSON with each character of :data:`_NOT_INERT` that it holds raw written as a JSON
    ``\\uXXXX`` escape: the same value, read back, but inert on a terminal (``json.dumps`` with
    ``ensure_ascii=False`` keeps C1 controls and bidirectional overrides raw)."""
    if line.isascii() and "\x7f" not in line:
        return line  # json.dumps escapes every other ASCII control character itself
    return _NOT_INERT.sub(lambda match: f"\\u{ord(match.group()):04x}", line)


_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)


def image_mime_type(head: bytes) -> str | None:
    """The MIME type of a PNG, JPEG, GIF or WebP image from its first bytes, else ``None``."""
    for magic, mime in _IMAGE_MAGIC:
        if head.startswith(magic):
            return mime
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def plugin_setting_variable(plugin_name: str, key: str = "") -> str:
    """The environment variable that sets ``key`` of plugin ``plugin_name`` (without ``key``: its prefix)."""
    return f"AWF_MCP_PLUGIN_{plugin_name.upper().replace('-', '_')}_{key.upper()}"


@dataclass(frozen=True, slots=True)
class ToolAnnotations:
    """Behaviour hints for clients (MCP ``ToolAnnotations``); ``None`` means unstated."""

    title: str | None = None
    read_only: bool | None = None
    destructive: bool | None = None
    idempotent: bool | None = None
    open_world: bool | None = None

    def hints(self) -> dict[str, Any]:
        """The stated hints under their MCP names (``title``, ``readOnlyHint``, ``destructiveHint``, ...)."""
        named = {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }
        return {key: value for key, value in named.items() if value is not None}


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """One tool as an agent sees it in ``tools/list``."""

    name: str
    description: str
    input_schema: JSONSchema
    source: str = BUILTIN_SOURCE
    annotations: ToolAnnotations | None = None
    output_schema: JSONSchema | None = None
    meta: Mapping[str, Any] | None = field(default=None, hash=False)
    """The tool's ``_meta`` as MCP carries it (an upstream's, kept: MCP Apps' ``ui/resourceUri``)."""
    icons: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    """The tool's ``icons`` (MCP ``Icon`` objects: ``src``, ``mimeType``, ``sizes``)."""


@dataclass(frozen=True, slots=True)
class PromptArgument:
    """One argument of a prompt (a string the client fills in)."""

    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True, slots=True)
class PromptDefinition:
    """One prompt as an agent sees it in ``prompts/list`` (named like a tool: ``<plugin>_<prompt>``).

    Getting it gives a :class:`ToolResult` whose content items are the prompt's messages, in
    order; its ``structured_content`` is ``{"description": str, "roles": [role, ...]}``, one
    role (``user`` or ``assistant``) per message (:data:`PROMPT_ROLES`).
    """

    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()
    source: str = BUILTIN_SOURCE
    title: str | None = None
    meta: Mapping[str, Any] | None = field(default=None, hash=False)
    icons: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)


PROMPT_ROLES = "roles"
"""The key of a prompt result's ``structured_content`` listing each message's role."""


@dataclass(frozen=True, slots=True)
class ResourceDefinition:
    """One resource (or, with ``template``, a resource template: ``uri`` is an RFC 6570 template)
    as an agent sees it in ``resources/list`` (``resources/templates/list``).

    Reading it gives a :class:`ToolResult` whose content items are ``resource`` items, one per
    content of the resource (``uri``, ``mime_type``, and ``text`` or base64 ``data``).
    """

    uri: str
    name: str
    description: str = ""
    mime_type: str = ""
    source: str = BUILTIN_SOURCE
    template: bool = False
    title: str | None = None
    size: int | None = None
    meta: Mapping[str, Any] | None = field(default=None, hash=False)
    icons: tuple[Mapping[str, Any], ...] = field(default=(), hash=False)
    annotations: Mapping[str, Any] | None = field(default=None, hash=False)
    """MCP's resource ``annotations`` (``audience``, ``priority``, ``lastModified``)."""


ContentType = Literal["text", "image", "audio", "resource", "resource_link"]
"""The MCP content block types a result may carry."""


@dataclass(frozen=True, slots=True)
class ToolContent:
    """One content item of a result, as MCP defines them.

    * ``text``: ``text``;
    * ``image`` and ``audio``: base64 ``data`` and its ``mime_type``;
    * ``resource`` (an embedded resource): ``uri``, optional ``mime_type``, and either
      ``text`` or base64 ``data`` (the resource's ``blob``);
    * ``resource_link``: ``uri`` and ``name``, optional ``mime_type``.

    ``extra`` holds the item's other wire fields verbatim (``annotations``, ``_meta``,
    a link's ``title``, ``description`` or ``size``), so a result relayed from another
    MCP server passes through whole.
    """

    type: ContentType
    text: str = ""
    data: str = ""
    mime_type: str = ""
    uri: str = ""
    name: str = ""
    extra: Mapping[str, Any] | None = None

    @classmethod
    def of_text(cls, text: str) -> ToolContent:
        """A text item."""
        return cls(type="text", text=text)

    @classmethod
    def of_image(cls, raw: bytes, mime_type: str) -> ToolContent:
        """An image item from raw bytes (encoded to base64 here)."""
        return cls(type="image", data=base64.b64encode(raw).decode("ascii"), mime_type=mime_type)

    @classmethod
    def of_audio(cls, raw: bytes, mime_type: str) -> ToolContent:
        """An audio item from raw bytes (encoded to base64 here)."""
        return cls(type="audio", data=base64.b64encode(raw).decode("ascii"), mime_type=mime_type)

    @classmethod
    def of_resource(
        cls, uri: str, *, text: str | None = None, blob: bytes | None = None, mime_type: str = ""
    ) -> ToolContent:
        """An embedded resource holding ``text`` or the raw bytes ``blob``."""
        if (text is None) == (blob is None):
            raise ValueError("an embedded resource holds either text or blob")
        if blob is not None:
            return cls(
                type="resource", uri=uri, data=base64.b64encode(blob).decode("ascii"), mime_type=mime_type
            )
        return cls(type="resource", uri=uri, text=text or "", mime_type=mime_type)

    @classmethod
    def of_resource_link(cls, uri: str, name: str, *, mime_type: str = "") -> ToolContent:
        """A link to a resource the client may read."""
        return cls(type="resource_link", uri=uri, name=name, mime_type=mime_type)


@dataclass(slots=True)
class ToolResult:
    """What a tool call returns: content items, an error flag, optional structured data."""

    content: list[ToolContent] = field(default_factory=list)
    is_error: bool = False
    structured_content: Any = None

    @classmethod
    def text(cls, text: str) -> ToolResult:
        """A successful result with one text item."""
        return cls(content=[ToolContent.of_text(text)])

    @classmethod
    def error(cls, message: str) -> ToolResult:
        """An ``isError`` result with one text item the model can read."""
        return cls(content=[ToolContent.of_text(message)], is_error=True)


@runtime_checkable
class ToolProvider(Protocol):
    """A source of tools: built-ins, a plugin's decorated functions, a dynamic set."""

    def list_tools(self) -> Sequence[ToolDefinition]:
        """The tools this provider offers; called once at start-up."""
        ...

    def call_tool(
        self, name: str, arguments: Mapping[str, Any]
    ) -> ToolResult | Awaitable[ToolResult | None] | None:
        """Run tool ``name`` with validated ``arguments``."""
        ...

    def close(self) -> Awaitable[None] | None:
        """Release resources; called once when the server stops."""
        ...


class ToolError(Exception):
    """An error whose message the model should read verbatim (no type prefix).

    Raise it from a tool for expected failures: a missing file, an ambiguous
    edit, a refused path. Any other exception is reported as
    ``<ExceptionType>: <message>``.
    """


ClientFeature = Literal["roots", "elicitation", "elicitation_url", "sampling"]
"""What a server may ask a client for, named after the client capability it needs
(``elicitation``: a form; ``elicitation_url``: a link the user follows, ``elicitation.url``)."""


class ClientCannotAnswer(ToolError):
    """The client cannot answer a question: it lacks the capability, or it answered with an error."""


class InputRequired(BaseException):
    """The stateless revision's "ask and come back": the call ends here and is retried with the answer.

    ``key`` identifies the question (the same question always has the same key),
    ``method`` and ``params`` are the request the client is to answer.
    """

    def __init__(self, key: str, method: str, params: Mapping[str, Any]) -> None:
        super().__init__(key)
        self.key = key
        self.method = method
        self.params = params


@runtime_checkable
class ClientChannel(Protocol):
    """What a call may ask the agent's client; see the module docstring."""

    def supports(self, feature: ClientFeature) -> bool:
        """True when the client declared the capability ``feature`` needs."""
        ...

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The client's result for request ``method`` with ``params`` (JSON objects, as on the wire).

        Raises :class:`ClientCannotAnswer`, or :class:`InputRequired` on the stateless revision.
        """
        ...


class NoClientChannel:
    """The channel of a call with no client behind it (``awf-mcp tools call``, unit tests)."""

    def supports(self, feature: ClientFeature) -> bool:
        """Nothing is supported."""
        return False

    async def ask(self, method: str, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """Always :class:`ClientCannotAnswer`."""
        raise ClientCannotAnswer(f"there is no client to answer {method}")


NO_CLIENT: ClientChannel = NoClientChannel()


@dataclass(frozen=True, slots=True)
class AskUser:
    """A policy's answer "ask the user first" (see ``awf_mcp_authorize_call``), with the plugin's reason."""

    reason: str


CallerKind = Literal["local", "anonymous", "token", "oauth"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made a call: what the audit log records and the policy hooks are told.

    ``kind`` is ``local`` for the one client of ``serve`` on stdio and for ``awf-mcp tools
    call`` (the user who started awf-mcp), ``anonymous`` for ``serve --transport http
    --no-token`` (anyone who reaches the port), ``token`` for a static bearer token (named
    ``token_name``: ``default`` for ``--token``/``AWF_MCP_TOKEN`` and the kept token, else its
    name in ``--token-file``) and ``oauth`` for an access token of the configured
    authorization server (``subject`` its ``sub``, ``issuer`` its ``iss``, ``client_id`` the
    client it was issued to). ``claims`` holds the configured claims of an access token
    (``groups`` by default), as ``(name, value)`` pairs with JSON values, bounded in bytes
    when the token is checked.
    """

    kind: CallerKind = "local"
    subject: str | None = None
    token_name: str | None = None
    issuer: str | None = None
    client_id: str | None = None
    claims: tuple[tuple[str, Any], ...] = ()

    def claim(self, name: str) -> Any:
        """The value of claim ``name`` (``None`` when the token did not carry it, or it was not kept)."""
        for key, value in self.claims:
            if key == name:
                return value
        return None

    @property
    def groups(self) -> frozenset[str]:
        """The caller's groups: the ``groups`` claim, a list of strings or one string."""
        value = self.claim("groups")
        if isinstance(value, str):
            return frozenset({value})
        if isinstance(value, list | tuple):
            return frozenset(item for item in value if isinstance(item, str))
        return frozenset()

    @property
    def identity(self) -> tuple[str, str | None, str | None, str | None]:
        """Who the caller is, whatever client or connection it calls through: the kind, the
        issuer and subject of an access token, the name of a static token."""
        return (self.kind, self.issuer, self.subject, self.token_name)

    def fields(self) -> dict[str, Any]:
        """The caller as the audit log records it: ``kind`` and whatever else is known."""
        fields: dict[str, Any] = {"kind": self.kind}
        for key in ("subject", "token_name", "issuer", "client_id"):
            value = getattr(self, key)
            if value is not None:
                fields[key] = value
        if self.claims:
            fields["claims"] = dict(self.claims)
        return fields


LOCAL_CALLER = Caller()
"""The caller on stdio and of ``awf-mcp tools call``: the user who started awf-mcp."""
ANONYMOUS_CALLER = Caller(kind="anonymous")
"""The caller of ``serve --transport http --no-token``: anyone who reaches the port."""


ProgressReporter = Callable[[float, "float | None", "str | None"], None]


@dataclass(slots=True)
class CallContext:
    """Per-call facilities a tool may use, reachable through :func:`current_call`.

    ``report_progress(progress, total, message)`` is safe to call from the event
    loop or a worker thread and does nothing when the client asked for no
    progress. ``cancelled`` is set when the client cancels the call, the call
    times out, or the server shuts down; a long synchronous tool should poll it.
    ``output_budget`` is how many UTF-8 bytes of result content reach the model
    (``None`` outside a served call; :func:`awf_mcp.budget.current_budget` fills
    in the default): a tool that sizes its own result stays within it.
    ``path_denied(path)`` asks the path policy (the ``awf_mcp_authorize_path``
    hook) about one resolved, absolute path the call is about to touch: a reason
    string means refuse it, ``None`` allow it (the default allows everything).
    ``roots`` are the directories this call is confined to when the client's roots
    decide them (already resolved, the first the base for relative paths); ``None``
    means the configured roots; the sandbox sets ``refused_outside_roots`` when it
    refuses a path for lying outside them. ``channel`` reaches the agent's client.
    ``session`` names the client session the call came from (stdio: its one client;
    HTTP: its ``mcp-session-id``; ``None``: no session, as for ``awf-mcp tools call`` and
    the stateless revision). ``caller`` says who made the call (:class:`Caller`). What a tool
    keeps between calls (background jobs) belongs to :attr:`owner`: the session and the caller
    together, so that calls without a session keep one caller's things from every other.
    """

    tool_name: str
    report_progress: ProgressReporter = field(default=lambda progress, total, message: None)
    cancelled: threading.Event = field(default_factory=threading.Event)
    output_budget: int | None = None
    path_denied: Callable[[str], str | None] = field(default=lambda path: None)
    roots: tuple[str, ...] | None = None
    refused_outside_roots: bool = False
    channel: ClientChannel = NO_CLIENT
    session: Hashable | None = None
    caller: Caller = LOCAL_CALLER

    @property
    def owner(self) -> Hashable:
        """Whose the things a tool keeps between calls are: this session's and this caller's."""
        return (self.session, self.caller.identity)


_current_call: contextvars.ContextVar[CallContext | None] = contextvars.ContextVar(
    "awf_mcp_current_call", default=None
)


def current_call() -> CallContext:
    """The context of the tool call running in this task or worker thread.

    Outside a call (a unit test calling a provider directly) a fresh, inert
    context is returned, so tools never need to check for ``None``.
    """
    context = _current_call.get()
    return context if context is not None else CallContext(tool_name="")


def bind_call_context(context: CallContext) -> contextvars.Token[CallContext | None]:
    """Make ``context`` the current call context; returns the token to reset it."""
    return _current_call.set(context)


def unbind_call_context(token: contextvars.Token[CallContext | None]) -> None:
    """Undo :func:`bind_call_context`."""
    _current_call.reset(token)


class PluginSettingError(ToolError):
    """A plugin needs a setting that the configuration does not provide."""


_MISSING: Any = object()


@dataclass(slots=True)
class PluginContext:
    """What the ``awf_mcp_register_tools`` hook receives: one plugin's view of start-up.

    ``name`` is the plugin's name (its entry-point name) and the prefix its tool
    names must carry (``<name>_<tool>``). ``settings`` holds its
    ``[plugins.<name>]`` table from the config file merged with
    ``AWF_MCP_PLUGIN_<NAME>_<KEY>`` environment variables. ``roots`` are the
    directories the server is confined to, the first being the base for
    relative paths. ``register`` takes a :class:`ToolProvider` or a function
    decorated with :func:`awf_mcp.tool`.
    """

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)
    roots: tuple[str, ...] = ()
    registered: list[Any] = field(default_factory=list)

    def register(self, item: Any) -> None:
        """Contribute a :class:`ToolProvider` or an ``@tool``-decorated function."""
        self.registered.append(item)

    def setting(self, key: str, default: Any = _MISSING) -> Any:
        """The value of setting ``key``; without a default, a missing one is an error."""
        if key in self.settings:
            return self.settings[key]
        if default is not _MISSING:
            return default
        env = plugin_setting_variable(self.name, key)
        raise PluginSettingError(
            f"plugin '{self.name}' needs setting '{key}': add `{key} = ...` under "
            f"[plugins.{self.name}] in awf-mcp.toml or set {env}"
        )
