"""The error taxonomy: every failure a user can meet, and the exit code it ends with.

========================  ====  ==============================================
class                     exit  meaning
========================  ====  ==============================================
:class:`UserError`          1   bad configuration, unknown plugin, name clash
(Typer usage errors)        2   bad flags or arguments
:class:`ExecutionError`     3   a tool or plugin failed while running
:class:`SystemFault`        4   the machine failed us: I/O, missing runtime
========================  ====  ==============================================

Each carries one sentence: what was wrong, which input, what to do. An optional
``code`` is a stable identifier for scripts (the AWF proxy's
``USER.MCP_PROXY.*`` codes among them).
"""

from __future__ import annotations

from collections.abc import Iterable


class AwfError(Exception):
    """Base of every error awf-mcp reports to a user; ``str()`` is the sentence to print."""

    exit_code = 3

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


class UserError(AwfError):
    """The user's configuration or request is wrong; exit code 1."""

    exit_code = 1


class ConfigError(UserError):
    """A config file or flag value is invalid."""


class ToolNameError(UserError):
    """A tool name is invalid or clashes with another one."""


class PluginError(UserError):
    """A plugin could not be loaded (fatal only with ``--strict``)."""


class UnknownToolError(UserError):
    """A call named a tool that is not registered."""


class ExecutionError(AwfError):
    """Something failed while running; exit code 3."""

    exit_code = 3


class SystemFault(AwfError):
    """The environment failed (I/O, a missing interpreter); exit code 4."""

    exit_code = 4


def describe_exception(exc: BaseException) -> str:
    """One line for an exception: a ToolError's own sentence, else ``Type: first line``.

    What a client sees for an exception a tool raised, and what ``plugins list`` and the
    start-up warning say of a plugin that failed to load.
    """
    from awf_mcp.ports import ToolError

    if isinstance(exc, ToolError):
        return str(exc) or type(exc).__name__
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


MAX_GUESSED_LENGTH = 200
"""Characters of a mistyped word, and longest choice, that :func:`did_you_mean` compares."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"did you mean 'X'?"`` for the choices closest to a mistyped ``word`` (up to three), or ``""``."""
    import difflib

    word = word[:MAX_GUESSED_LENGTH]  # difflib's time grows with the product of the lengths
    choices = [choice for choice in choices if len(choice) <= MAX_GUESSED_LENGTH]
    close = difflib.get_close_matches(word, choices, n=3, cutoff=0.6)
    if not close:  # a different case, or a fragment: "read", "current_time"
        lowered = word.lower()
        close = [c for c in choices if lowered and (lowered == c.lower() or lowered in c.lower())][:3]
    return f"did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
