"""``awf-mcp config CLIENT --replace-native`` / ``--restore-native``: the client's own tools off and on.

A client that keeps its own file and shell tools beside awf-mcp's lets the model pick
the unconfined ones. The profile's :class:`~awf_mcp.clients.clientprofiles.NativeTools`
names the setting that switches them off: names added to a list (Claude Code
``permissions.deny``, Gemini CLI ``tools.exclude``) or keys set in a table (Codex
``[features]``).

Contract
--------
* :func:`replace` adds the setting to the scope's file through :mod:`awf_mcp.clients.editors`
  (idempotent, ``.bak`` copy, nothing written when the file cannot be parsed), and
  records in a ledger exactly what it added: the list items that were not there yet,
  and each switched key's previous value (or its absence).
* :func:`restore` removes exactly that: the recorded list items (a list left empty
  goes too), and each recorded key goes back to its previous value, unless the user
  has changed it since. Items and keys the user had before are never touched. With
  nothing recorded for the file it changes nothing and says so.
* The ledger is ``$XDG_STATE_HOME/awf-mcp/native-tools.json`` (default
  ``~/.local/state``), keyed by the edited file's absolute path.

TOML through ``tomlkit`` (:mod:`.tomledit`); otherwise the standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from awf_mcp.clients.clientprofiles import ClientProfile, NativeTools, profiles
from awf_mcp.clients.editors import Edit, WriteReport, apply_edits, atomic_write, lookup, read
from awf_mcp.clients.jsonedit import add_to_list, dump_json, json_edit, nest, parse_json, remove_from_list
from awf_mcp.clients.tomledit import parse_toml, toml_set_keys, toml_table
from awf_mcp.errors import UserError

LEDGER_NAME = "native-tools.json"


def setting(profile: ClientProfile) -> NativeTools:
    """PROFILE's native-tools setting, or a :class:`UserError` naming the clients that have one."""
    if profile.native is None:
        known = [p.name for p in profiles() if p.native is not None]
        raise UserError(
            f"awf-mcp knows no setting that switches off {profile.title}'s own tools; "
            f"--replace-native works for {', '.join(known)}"
        )
    return profile.native


def file_format(profile: ClientProfile) -> str:
    """The format of the file that holds the setting (a separate trust file is plain JSON)."""
    native = setting(profile)
    return profile.format if native.file == "servers" else "json"


def snippet(profile: ClientProfile) -> str:
    """The setting as the text a user would add by hand."""
    native = setting(profile)
    if native.switches:
        return toml_table(native.keys, dict(native.switches)).rstrip("\n")
    return dump_json(nest(native.keys, list(native.names)))


def ledger_path(home: Path, env: Mapping[str, str]) -> Path:
    state = env.get("XDG_STATE_HOME")
    base = Path(state).expanduser() if state else home / ".local" / "state"
    return base / "awf-mcp" / LEDGER_NAME


def _read_ledger(path: Path) -> dict[str, Any]:
    text = read(path)
    if text is None or not text.strip():
        return {}
    data = parse_json(text, path)
    files = data.get("files")
    return files if isinstance(files, dict) else {}


def _write_ledger(path: Path, files: Mapping[str, Any]) -> None:
    atomic_write(path, dump_json({"files": dict(files)}) + "\n")


def _current(profile: ClientProfile, path: Path) -> Mapping[str, Any]:
    text = read(path)
    if text is None or not text.strip():
        return {}
    fmt = file_format(profile)
    if fmt == "toml":
        return parse_toml(text, path)
    return parse_json(text, path, comments=fmt == "jsonc")


def _edit(profile: ClientProfile, path: Path, update: Any, project: Path | None) -> Edit:
    fmt = file_format(profile)
    if fmt == "toml":
        return Edit(path, fmt, update, project)
    return Edit(path, fmt, json_edit(update, comments=fmt == "jsonc"), project)


def plan(profile: ClientProfile, path: Path, *, project: Path | None = None) -> tuple[Edit, dict[str, Any]]:
    """The edit that switches off PROFILE's own tools in PATH, and the record of what it adds.

    PROJECT: the project directory when PATH is a project's file (see :class:`.editors.Edit`).
    """
    native = setting(profile)
    data = _current(profile, path)
    record: dict[str, Any] = {"keys": list(native.keys)}
    if native.switches:
        table = lookup(data, native.keys)
        table = table if isinstance(table, Mapping) else {}
        record["previous"] = {
            key: table.get(key) for key, value in native.switches.items() if table.get(key) != value
        }
        update: Any = toml_set_keys(native.keys, dict(native.switches))
    else:
        present = lookup(data, native.keys)
        present = present if isinstance(present, list) else []
        record["added"] = [name for name in native.names if name not in present]
        update = add_to_list(native.keys, list(native.names))
    return _edit(profile, path, update, project), record


def remember(ledger: Path, path: Path, record: Mapping[str, Any]) -> None:
    """Add RECORD (from :func:`plan`, once its edit is applied) to the LEDGER entry of PATH."""
    if not record.get("added") and not record.get("previous"):
        return
    files = _read_ledger(ledger)
    merged = dict(record)
    old = files.get(str(path))
    if isinstance(old, dict):
        # What was recorded first is what the user had: it wins over later runs.
        merged["added"] = list(dict.fromkeys([*old.get("added", []), *record.get("added", [])]))
        merged["previous"] = {**record.get("previous", {}), **old.get("previous", {})}
    files[str(path)] = {k: v for k, v in merged.items() if v}
    _write_ledger(ledger, files)


def replace(profile: ClientProfile, path: Path, *, ledger: Path, project: Path | None = None) -> WriteReport:
    """Switch off PROFILE's own tools in PATH, recording what was added in LEDGER."""
    edit, record = plan(profile, path, project=project)
    report = apply_edits([edit])
    remember(ledger, path, record)
    return report


def restore(
    profile: ClientProfile, path: Path, *, ledger: Path, project: Path | None = None
) -> tuple[WriteReport, str]:
    """Remove from PATH exactly what :func:`replace` recorded; the report and a note for people."""
    native = setting(profile)
    files = _read_ledger(ledger)
    record = files.get(str(path))
    if not isinstance(record, dict):
        return WriteReport(), f"nothing recorded as added by --replace-native in {path}: nothing to restore"
    keys = tuple(record.get("keys") or native.keys)
    if read(path) is None:
        del files[str(path)]
        _write_ledger(ledger, files)
        return WriteReport(), f"{path} no longer exists: nothing to restore"
    if "previous" in record:
        table = lookup(_current(profile, path), keys)
        table = table if isinstance(table, Mapping) else {}
        previous = record["previous"]
        # A key the user changed since is theirs now: leave it.
        values = {key: was for key, was in previous.items() if table.get(key) == native.switches.get(key)}
        update: Any = toml_set_keys(keys, values)
    else:
        update = remove_from_list(keys, [str(name) for name in record.get("added", [])])
    report = apply_edits([_edit(profile, path, update, project)])
    del files[str(path)]
    _write_ledger(ledger, files)
    what = ", ".join(record.get("added", [])) or ", ".join(record.get("previous", {}))
    return report, f"restored {profile.title}'s own tools in {path} (removed what awf-mcp added: {what})"


def describe(profile: ClientProfile, path: Path) -> str:
    """What ``--replace-native`` adds, for the printed configuration."""
    native = setting(profile)
    lines = [
        f"# --replace-native switches off {profile.title}'s own file and shell tools; add to {path}:",
        snippet(profile),
    ]
    if native.note:
        lines += native.note.splitlines()
    return "\n".join(lines)
