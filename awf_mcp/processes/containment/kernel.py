"""Landlock and seccomp, through ``_ctypes``: what a keeper applies to itself before it runs a command.

Contract
--------
:func:`confine` takes a *spec* (the string :func:`encode` made in the server) and restricts the
calling process, and everything it later executes, for good:

* ``no_new_privs`` is set (Landlock and an unprivileged seccomp filter need it; a set-uid
  program run afterwards gains nothing);
* with ``fs`` in the spec, a Landlock ruleset handles every file-system right the kernel knows
  (:func:`landlock_abi`), and grants only what the spec's ``r:`` (read and execute) and ``w:``
  (read, write, create, remove) rules name, each applying to the file or directory hierarchy
  beneath it, and ``l:`` rules let a directory be listed (``READ_DIR``). Anything not under a
  rule is refused (``EACCES``), whatever the file's modes;
* with ``net``, TCP ``bind`` and ``connect`` are handled (Landlock ABI 4): refused except
  ``connect`` to the ``p:`` ports;
* with ``scope``, signals and abstract Unix sockets cannot reach a process outside the sandbox
  (Landlock ABI 6). ``ptrace`` of, and ``/proc/PID/environ``, ``mem`` or ``fd`` of, a process
  outside are refused by every Landlock ABI;
* a seccomp filter (always) refuses ``socket()`` for every family but IPv4, IPv6 and netlink
  (so no Unix-socket path leads to an agent, a session bus or a container daemon: the escape
  that namespaces and file rules do not close), refuses IPv4/IPv6 datagram and raw sockets
  unless the spec says ``udp``, refuses ``io_uring_setup`` (whose socket operations seccomp
  cannot see), and kills a process that makes a system call of another architecture's ABI
  (``int 0x80``, x32).

A rule whose path does not exist is skipped. Anything else that fails raises :class:`OSError`:
the caller must then not run the command (fail closed).

Standard library only, and as little of it as can be: the keeper imports this module in its
forked child, just before ``exec``, for every contained command. The C calls go through
``_ctypes`` itself (:class:`_Libc`), not the ``ctypes`` package, whose import alone would cost
each command about 3 ms.
"""

from __future__ import annotations

import _ctypes
import os
import struct

PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
PR_CAPBSET_DROP = 24
_CAPABILITY_VERSION_3 = 0x20080522
SECCOMP_MODE_FILTER = 2

_LANDLOCK_CREATE_RULESET, _LANDLOCK_ADD_RULE, _LANDLOCK_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH, _RULE_NET_PORT = 1, 2

# Landlock's file-system rights, in ABI order (include/uapi/linux/landlock.h).
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
READ = EXECUTE | READ_FILE | READ_DIR
_FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
"""The rights that apply to a file (not a directory): a rule on a file may hold only these."""
NET_BIND_TCP, NET_CONNECT_TCP = 1, 2
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2

_SYSCALLS = {  # (audit architecture, socket, io_uring_setup, first number of a foreign ABI or 0)
    "x86_64": (0xC000003E, 41, 425, 0x40000000),
    "aarch64": (0xC00000B7, 198, 425, 0),
}
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM = 1
_EPERM, _EACCES = 1, 13


class _Long(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_long
    _type_ = "l"


class _Size(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_size_t
    _type_ = "L"


class _Char(_ctypes._SimpleCData):  # type: ignore[type-arg]  # ctypes.c_char
    _type_ = "c"


class _Function(_ctypes.CFuncPtr):  # ctypes.CDLL(None, use_errno=True)'s functions
    _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO
    _restype_ = _Long


class _Libc:
    """The C library's ``syscall``, ``prctl`` and ``capset``; bytes arguments pass as pointers."""

    _handle = _ctypes.dlopen(None)  # type: ignore[arg-type]

    def __init__(self) -> None:
        self.syscall = _Function(("syscall", self))  # type: ignore[arg-type]
        self.prctl = _Function(("prctl", self))  # type: ignore[arg-type]
        self.capset = _Function(("capset", self))  # type: ignore[arg-type]


def _libc() -> _Libc:
    return _Libc()


def _address(data: bytes) -> tuple[object, int]:
    """A C copy of ``data`` and its address (keep the copy alive while the address is used)."""
    array = type("_Chars", (_ctypes.Array,), {"_type_": _Char, "_length_": len(data)})
    buffer = array.from_buffer_copy(data)  # type: ignore[attr-defined]
    return buffer, _ctypes.addressof(buffer)


def _check(result: int, what: str) -> int:
    if result < 0:
        errno = _ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
    return result


def landlock_abi() -> int:
    """The Landlock ABI version this kernel offers; 0 when it has none (or it is turned off)."""
    try:
        result = int(_libc().syscall(_LANDLOCK_CREATE_RULESET, None, _Size(0), _CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(result, 0)


def _fs_rights(abi: int) -> int:
    return next((mask for version, mask in sorted(_FS_BY_ABI.items(), reverse=True) if abi >= version), 0)


def encode(
    read: list[str],
    write: list[str],
    *,
    fs: bool,
    net_ports: list[int] | None,
    scope: bool,
    udp: bool,
    caps: bool = False,
    wrapped: bool = False,
    listable: list[str] | None = None,
) -> str:
    """The spec :func:`confine` applies: space-separated tokens, paths hex-encoded (any byte may be in
    a name). ``net_ports=None``: the network is not handled; ``[]``: no TCP at all. ``caps``: drop
    every capability (for a keeper running as root). ``wrapped``: the command is bwrap's (see
    :func:`confine`). ``listable``: directories whose entries may be listed (not read)."""
    flags = (("fs", fs), ("scope", scope), ("udp", udp), ("caps", caps), ("wrapped", wrapped))
    tokens = [flag for flag, on in flags if on]
    if net_ports is not None:
        tokens.append("net")
        tokens += [f"p:{port}" for port in net_ports]
    tokens += [f"r:{os.fsencode(path).hex()}" for path in read]
    tokens += [f"w:{os.fsencode(path).hex()}" for path in write]
    tokens += [f"l:{os.fsencode(path).hex()}" for path in listable or ()]
    return " ".join(tokens)


def _add_path_rule(libc: _Libc, ruleset: int, path: bytes, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        mode = os.fstat(fd).st_mode
        if (mode & 0o170000) == 0o120000:  # a symbolic link: what it points at has its own rules
            return
        if (mode & 0o170000) != 0o040000:
            rights &= _FILE_RIGHTS
        attr = struct.pack("=Qi", rights, fd)  # struct landlock_path_beneath_attr is packed
        _check(libc.syscall(_LANDLOCK_ADD_RULE, ruleset, _RULE_PATH_BENEATH, attr, 0), "landlock_add_rule")
    finally:
        os.close(fd)


LANDLOCK_NET_ABI = 4
"""The first Landlock ABI with TCP rules (Linux 6.7): what holds a process to the proxy."""


def _landlock(libc: _Libc, abi: int, tokens: list[str]) -> None:
    flags = set(tokens)
    fs_rights = _fs_rights(abi) if "fs" in flags else 0
    net_rights = NET_BIND_TCP | NET_CONNECT_TCP if "net" in flags else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if "scope" in flags else 0
    if net_rights and abi < LANDLOCK_NET_ABI:
        raise OSError(_EPERM, f"the network rules need Landlock ABI 4 (Linux 6.7); this kernel has {abi}")
    if scoped and abi < 6:
        scoped = 0  # signal scoping needs ABI 6 (Linux 6.12): doctor says what is not enforced
    if not (fs_rights or net_rights or scoped):
        return
    size = 24 if abi >= 6 else 16 if abi >= 4 else 8
    attr = struct.pack("=QQQ", fs_rights, net_rights, scoped)[:size]
    ruleset = _check(libc.syscall(_LANDLOCK_CREATE_RULESET, attr, _Size(size), 0), "landlock_create_ruleset")
    try:
        for token in tokens:
            kind, _, value = token.partition(":")
            if kind == "p" and net_rights:
                rule = struct.pack("=QQ", NET_CONNECT_TCP, int(value))
                _check(
                    libc.syscall(_LANDLOCK_ADD_RULE, ruleset, _RULE_NET_PORT, rule, 0), "landlock_add_rule"
                )
            elif kind in ("r", "w", "l") and fs_rights:
                rights = {"r": READ, "w": fs_rights, "l": READ_DIR}[kind] & fs_rights
                _add_path_rule(libc, ruleset, bytes.fromhex(value), rights)
        _check(libc.syscall(_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def _bpf(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


_LD_ABS, _JEQ, _JGE, _AND, _RET = 0x20, 0x15, 0x35, 0x54, 0x06
_ALLOW, _KILL, _ERRNO = 0x7FFF0000, 0x80000000, 0x00050000


def socket_filter(udp: bool, machine: str | None = None) -> bytes:
    """The seccomp BPF program of the module docstring, for ``machine`` (default: this one's)."""
    arch, socket_nr, uring_nr, foreign = _SYSCALLS[machine or os.uname().machine]
    deny = _ERRNO | _EACCES
    # (code, true-label or offset, false-label or offset, k); labels resolved below.
    program: list[tuple[int, object, object, int]] = [
        (_LD_ABS, 0, 0, 4),
        (_JEQ, 1, 0, arch),
        (_RET, 0, 0, _KILL),
        (_LD_ABS, 0, 0, 0),
    ]
    if foreign:
        program.append((_JGE, "kill", 0, foreign))
    program += [
        (_JEQ, "deny", 0, uring_nr),
        (_JEQ, 0, "allow", socket_nr),
        (_LD_ABS, 0, 0, 16),  # args[0] (its low 32 bits): the family
        (_JEQ, "allow", 0, AF_NETLINK),
        (_JEQ, "inet", 0, AF_INET),
        (_JEQ, "inet", "deny", AF_INET6),
    ]
    labels: dict[str, int] = {}
    labels["inet"] = len(program)
    if udp:
        program.append((_RET, 0, 0, _ALLOW))
    else:
        program += [
            (_LD_ABS, 0, 0, 24),  # args[1]: the type, with SOCK_NONBLOCK and SOCK_CLOEXEC
            (_AND, 0, 0, 0xF),
            (_JEQ, "allow", "deny", SOCK_STREAM),
        ]
    labels["allow"] = len(program)
    program.append((_RET, 0, 0, _ALLOW))
    labels["deny"] = len(program)
    program.append((_RET, 0, 0, deny))
    labels["kill"] = len(program)
    program.append((_RET, 0, 0, _KILL))

    def offset(target: object, at: int) -> int:
        return labels[target] - at - 1 if isinstance(target, str) else int(target)  # type: ignore[call-overload]

    return b"".join(
        _bpf(code, offset(jt, at), offset(jf, at), k) for at, (code, jt, jf, k) in enumerate(program)
    )


def _seccomp(libc: _Libc, udp: bool) -> None:
    program = socket_filter(udp)
    _buffer, address = _address(program)
    fprog = struct.pack("=HxxxxxxQ", len(program) // 8, address)
    _check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")


def drop_capabilities(libc: _Libc) -> None:
    """Give up every capability, now and across ``exec``: root confined stays confined."""
    for capability in range(64):
        if libc.prctl(PR_CAPBSET_DROP, capability, 0, 0, 0) != 0:
            break  # past the last capability this kernel knows
    header = struct.pack("=Ii", _CAPABILITY_VERSION_3, 0)
    _check(libc.capset(header, bytes(24)), "capset")


def _filter_file(udp: bool) -> int:
    """A descriptor (inherited across ``exec``) holding the filter, for ``bwrap --seccomp FD``."""
    fd = os.memfd_create("awf-mcp-seccomp", 0)
    os.write(fd, socket_filter(udp))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def confine(spec: str, argv: list[str]) -> list[str]:
    """Apply ``spec`` (see :func:`encode`) to this process for good; the command line to ``exec``.

    With ``wrapped`` in the spec, ``argv`` runs under bwrap, which needs its own sockets to set
    up its namespaces: the seccomp filter is handed to bwrap (``--seccomp FD``), which loads it
    just before it runs the command. Raises :class:`OSError` on any failure.
    """
    if os.uname().machine not in _SYSCALLS:
        raise OSError(_EPERM, f"the sandbox does not support the {os.uname().machine} architecture")
    libc = _libc()
    tokens = spec.split()
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if "caps" in tokens:
        drop_capabilities(libc)
    if {"fs", "net", "scope"} & set(tokens):
        abi = landlock_abi()
        if abi < 1:
            raise OSError(_EPERM, "this kernel offers no Landlock (Linux 5.13 or later with it turned on)")
        _landlock(libc, abi, tokens)
    if "wrapped" in tokens:
        return [argv[0], "--seccomp", str(_filter_file("udp" in tokens)), *argv[1:]]
    _seccomp(libc, "udp" in tokens)
    return argv
