"""What ``awf-mcp doctor`` reports: one :class:`Finding` per thing checked, gathered in a :class:`Report`.

See :mod:`awf_mcp.cli.doctor` for the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from awf_mcp import __version__

if TYPE_CHECKING:
    pass


OK, INFO, WARNING, ERROR = "ok", "info", "warning", "error"
STATUSES = (OK, INFO, WARNING, ERROR)


@dataclass(frozen=True)
class Finding:
    """One thing checked: its status, what it is, what was found, and what to do about it."""

    check: str
    status: str
    subject: str
    detail: str
    fix: str = ""
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_data(self) -> dict[str, Any]:
        """The finding as JSON-ready data (the keys of docs/doctor.md)."""
        return {
            "check": self.check,
            "status": self.status,
            "subject": self.subject,
            "detail": self.detail,
            "fix": self.fix,
            "data": dict(self.data),
        }


@dataclass(frozen=True)
class Report:
    """Every finding, in check order."""

    findings: list[Finding]

    @property
    def broken(self) -> bool:
        """True when any finding is an error."""
        return any(finding.status == ERROR for finding in self.findings)

    def counts(self) -> dict[str, int]:
        """How many findings have each status."""
        return {status: sum(f.status == status for f in self.findings) for status in STATUSES}

    def as_data(self) -> dict[str, Any]:
        """The report as JSON-ready data (the keys of docs/doctor.md)."""
        return {
            "version": __version__,
            "ok": not self.broken,
            "counts": self.counts(),
            "findings": [finding.as_data() for finding in self.findings],
        }


def counted(number: int, noun: str) -> str:
    """``NUMBER NOUN``, the noun in the plural unless the number is 1."""
    return f"{number} {noun}" + ("" if number == 1 else "s")
