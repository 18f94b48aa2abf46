"""Upstream MCP servers as tool providers: one :class:`UpstreamProvider` per configured server.

Contract
--------
* The core does not speak MCP: it is given a :data:`Connect` function (the CLI runtime
  passes :func:`awf_mcp.wire.client.connect`) that opens a
  :class:`~awf_mcp.core.servers.ServerSpec` and yields an :class:`UpstreamSession`.
* :func:`start_all` starts every enabled server at once and returns when each has
  listed its tools or hit its ``startup_timeout_seconds``. It returns one
  :class:`~awf_mcp.core.plugins.PluginRecord` per server (name = server name, source
  ``server:<name>``), so the registry merges server tools under the plugin rules
  (prefix, collisions, ``[rename]``, ``--only``, ``--exclude``). A server that fails
  is reported (``on_failure``) with its name and reason and served without; with
  ``strict`` the failure raises :class:`~awf_mcp.errors.PluginError`. An ``auth = "oauth"``
  server that needs sign-in (:class:`UpstreamNeedsSignIn`), when the agent declared URL
  elicitation and a :data:`SignIn` function is given, is served as its sign-in tool instead
  (:mod:`~awf_mcp.core.upstream.signin`); so is one that refuses its sign-in mid-session
  (:class:`UpstreamSignedOut`, or a restart's :class:`UpstreamNeedsSignIn`).
* Tools are named ``<server>_<tool>``; description, schemas and annotations are the
  server's own. The registry checks the names (after ``[rename]``): one that breaks the
  rules, or is already taken, is left out with a warning showing the ``[rename]`` line to add.
* A server's tool list is gathered in one place, :meth:`UpstreamProvider.gather_tools`,
  bounded in bytes (a definition's size is its JSON, :func:`definition_bytes`) while the
  pages are read: a tool listed twice (the second), or whose definition passes
  :data:`MAX_TOOL_DEFINITION_BYTES`, is left out; the tools that would take the server past
  its share of definition bytes (:data:`MAX_SERVER_DEFINITION_BYTES`, less when more than
  :data:`MAX_UPSTREAM_DEFINITION_BYTES` / that many servers are enabled) are left out and no
  further page is asked for, as once :data:`MAX_LISTING_BYTES` were read. Each is a warning
  (``log``) and a sentence in :attr:`UpstreamProvider.left_out` (``servers list`` shows
  them); the rest is served. So the merged ``tools/list`` stays far below the 10 MiB frame
  limit however large or many the servers' tools. What is kept then passes
  :func:`~awf_mcp.core.pins.admit_tools`: a tool whose definition changed since the user
  approved it, or that is new, is held back (not served).
* ``notifications/tools/list_changed`` from the server makes the provider list its tools
  again, :data:`RELIST_PAUSE_SECONDS` later (notifications arriving meanwhile, or during
  the listing, are coalesced into one more listing: a server sending a flood of them gets
  at most one listing per pause and round trip); when the set differs, every
  :meth:`UpstreamProvider.watch_tools` callback is awaited (the registry's re-merge, which
  tells the agent). A listing that fails keeps the old set, with a warning. A restarted
  server is listed again the same way.
* A call is forwarded with its progress (to :func:`~awf_mcp.ports.current_call`'s
  reporter; the upstream is asked for progress only when the client asked) and its
  cancellation (the client session sends ``notifications/cancelled``). A per-server
  ``timeout_seconds`` bounds it below the server-wide call timeout.
* When the connection dies, its in-flight calls end in an ``isError`` result that says
  so; the next call restarts it. Restarts after consecutive deaths wait
  :func:`backoff_seconds`; a call inside that wait gets an ``isError`` saying when the
  next attempt is.
* :func:`instructions` gathers the upstreams' own ``instructions`` for awf-mcp's: a
  server's over :data:`MAX_INSTRUCTIONS_BYTES` are left out (a warning, and a sentence in
  :attr:`UpstreamProvider.left_out`), and so are those that would take the gathered text
  past :data:`MAX_RELAYED_INSTRUCTIONS_BYTES`.
* Requests from the server (see "Upstream requests" below) go to :meth:`UpstreamProvider.answer`.
* ``close()`` ends the connection (the adapter stops the process group) and is bounded
  by the runtime's close timeout.

Prompts, resources and the rest
-------------------------------
What a server advertises besides tools (:attr:`~awf_mcp.core.upstream.session.UpstreamSession.offers`)
is relayed by the provider (:mod:`~awf_mcp.core.upstream.offerings`): its prompts (named
``<server>_<prompt>``), resources and resource templates (as the server gave them) are listed
after its tools, each kind under the byte bounds of tools and gated by the pins
(:func:`~awf_mcp.core.pins.admit_items`), and listed again after their ``list_changed``;
``prompts/get``, ``resources/read``, ``completion/complete``, ``resources/subscribe`` and
``unsubscribe``, and ``logging/setLevel`` are forwarded within ``timeout_seconds``, a dead
connection restarted as for a call; resource updates and log messages go to the callbacks
the catalog set (:mod:`awf_mcp.core.catalog`, which merges them with the plugins' and routes
reads), and a log message also to each agent's request following a call of the server
that asked for its level (:class:`~awf_mcp.core.clientchannel.RequestLog`, the stateless revision: the server
is first asked for that level with ``logging/setLevel`` when it was asked for a less verbose one;
at most :data:`~awf_mcp.core.upstream.routing.MAX_PENDING_LOG_BYTES` wait per request).
A failure to list them is a warning; the server's tools are served anyway.

Upstream requests
-----------------
A server may ask its client for ``roots/list``, ``sampling/createMessage`` or
``elicitation/create``. What the connection advertises is the :data:`ClientOffer` the
provider is given: the agent's own declared ``sampling`` and ``elicitation`` capabilities
(verbatim), and ``roots`` when the agent declared roots; nothing at all without an agent
(``awf-mcp tools list``, ``tools call``, ``servers list``, ``serve --transport http``). A
request is answered so:

* ``roots/list`` is answered by awf-mcp itself (even when roots were not advertised),
  never forwarded: the roots the oldest attached call (below) of this server is confined
  to (:attr:`~awf_mcp.ports.CallContext.roots`, the client's roots under the configured
  ceiling), or the configured roots when there is none, as ``file://`` URIs. An upstream
  so never learns of a directory awf-mcp's own tools may not touch. ``roots`` is
  advertised with ``listChanged``: a call whose roots differ from those last sent first
  sends the server ``notifications/roots/list_changed`` (the agent's roots change, say).
* A ``prompts/get`` or ``resources/read`` forwarded to the server is followed as a call is (a
  :class:`~awf_mcp.core.upstream.routing.Flight` keyed by the prompt's name and arguments, or the
  URI): "call" below means any of the three.
* ``sampling/createMessage`` and ``elicitation/create`` are forwarded to the agent
  through the :class:`~awf_mcp.ports.ClientChannel` of a call of this server that an
  agent's call is waiting on ("attached"), the **oldest** one when there are several (the
  request carries nothing that ties it to one call; the oldest is the one the upstream has
  been working on longest). The agent's result goes back unchanged.
* On the stateless revision (2026-07-28) the channel raises
  :class:`~awf_mcp.ports.InputRequired` instead of answering. There the upstream call runs
  in a task of its own, so the agent's call then ends with that ``input_required`` while the
  upstream call stays open, **suspended**, its request waiting (with a back-channel, a
  channel whose ``stateless`` is false, the upstream call runs inside the agent's call: it
  cannot be suspended, and a task would cost two passes of the event loop per call). The
  agent's retry (the same tool and arguments, carrying the answer) finds the oldest
  suspended call of that tool with those arguments, asks its channel the same question
  (which now finds the answer), sends it upstream, and follows the upstream call again, to
  its result or its next question. At most :data:`MAX_SUSPENDED` calls of a server are suspended (beyond that
  the oldest is cancelled upstream), each for at most :data:`SUSPEND_SECONDS` (then its
  request is refused and the upstream call goes on without a follower).
* Refused, with a JSON-RPC error holding one sentence (:class:`UpstreamRequestRefused`),
  the server serving on: a request with no attached call of the server; one the agent
  did not declare the capability for; one the agent answered with an error; one whose
  call ended (answered, timed out, cancelled) before the agent answered.
* Cancelling or timing out the agent's call cancels the upstream call (the SDK sends
  ``notifications/cancelled``); an agent's call ended by ``input_required`` does not.
* At most :data:`MAX_PENDING_REQUESTS` requests of a server wait for the agent at once;
  one more is refused.
* Each request is logged (INFO, logger ``awf_mcp.upstream``) with the server, the method,
  the call and the outcome, and goes into the audit record of the call it was routed to
  (:class:`~awf_mcp.core.observability.UpstreamRequest`: method, outcome, sizes, never
  content), through the list the call path gives each call
  (:func:`~awf_mcp.core.observability.upstream_requests_of_call`), which the flight keeps
  (bounded: past :data:`~awf_mcp.core.observability.MAX_RECORDED_REQUESTS` only counted).
  A retry on the stateless revision takes over the requests of the call that ended with
  ``input_required`` (that call has no record). A request asked outside any call, or whose
  suspended call the agent never retried, is in the log only.

The connection is owned by one task per server (the SDK's session must be entered and
left in the same task); it is an asyncio task because start-up runs before the serve
loop's task group exists.
Where things are
----------------
* :mod:`~awf_mcp.core.upstream.session`  the connection the wire adapter yields
  (:class:`UpstreamSession`), its failures, and the client capabilities it offers;
* :mod:`~awf_mcp.core.upstream.listing`  a server's listing under its byte bounds;
* :mod:`~awf_mcp.core.upstream.provider`  the provider: the connection's lifecycle
  (start, death, restart with backoff, close), relisting on a change, forwarding calls;
* :mod:`~awf_mcp.core.upstream.offerings`  what it offers besides tools (prompts, resources,
  templates, completions, subscriptions, log messages);
* :mod:`~awf_mcp.core.upstream.routing`  the server's requests to its client, routed to the
  agent's calls (suspended and resumed on the stateless revision);
* :mod:`~awf_mcp.core.upstream.signin`  the sign-in through the agent (URL elicitation) of a
  server that needs sign-in;
* :mod:`~awf_mcp.core.upstream.startup`  every server started at once, and the instructions
  relayed.
"""

from awf_mcp.core.upstream.listing import (
    MAX_LISTING_BYTES,
    MAX_SERVER_DEFINITION_BYTES,
    MAX_TOOL_DEFINITION_BYTES,
    MAX_UPSTREAM_DEFINITION_BYTES,
    definition_bytes,
    definition_share,
)
from awf_mcp.core.upstream.provider import (
    MAX_INSTRUCTIONS_BYTES,
    MAX_RELAYED_INSTRUCTIONS_BYTES,
    RELIST_PAUSE_SECONDS,
    UpstreamProvider,
    backoff_seconds,
)
from awf_mcp.core.upstream.session import (
    NO_OFFER,
    OFFERS,
    ClientOffer,
    Connect,
    OfferedItem,
    OfferingKind,
    ProgressCallback,
    RequestAnswerer,
    SignIn,
    UpstreamFailure,
    UpstreamGone,
    UpstreamNeedsSignIn,
    UpstreamRequestRefused,
    UpstreamSession,
    UpstreamSignedOut,
    offer_from,
)
from awf_mcp.core.upstream.startup import instructions, report_failed_server, serving, start_all

__all__ = [
    "MAX_INSTRUCTIONS_BYTES",
    "MAX_LISTING_BYTES",
    "MAX_RELAYED_INSTRUCTIONS_BYTES",
    "MAX_SERVER_DEFINITION_BYTES",
    "MAX_TOOL_DEFINITION_BYTES",
    "MAX_UPSTREAM_DEFINITION_BYTES",
    "NO_OFFER",
    "OFFERS",
    "RELIST_PAUSE_SECONDS",
    "ClientOffer",
    "Connect",
    "OfferedItem",
    "OfferingKind",
    "ProgressCallback",
    "RequestAnswerer",
    "SignIn",
    "UpstreamFailure",
    "UpstreamGone",
    "UpstreamNeedsSignIn",
    "UpstreamProvider",
    "UpstreamRequestRefused",
    "UpstreamSession",
    "UpstreamSignedOut",
    "backoff_seconds",
    "definition_bytes",
    "definition_share",
    "instructions",
    "offer_from",
    "report_failed_server",
    "serving",
    "start_all",
]
