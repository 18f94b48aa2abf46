"""A world to escape from, and the attempts to escape it, for tests/e2e/test_containment.py.

:func:`build_world` lays out, in a fresh directory outside ``/tmp`` (a sandbox may grant
all of ``/tmp``, which would make a home placed there writable for a reason no real home
has), a fake ``$HOME`` holding every credential file of the built-in deny list with a
unique marker inside, a ``~/.bashrc``, a ``~/.local/bin`` and a project ``ROOT`` that is a
git repository with ``.git/hooks/`` and ``.git/config`` plus ``ROOT/link``, a symbolic link
to ``~/.ssh/id_rsa``. :meth:`World.start` adds a loopback TCP :class:`Listener` that records
every connection and an "outside" process (``sleep 300`` with a secret in its environment
and ``~/.ssh`` as its working directory) started by the test, not by awf-mcp.
:meth:`World.serve_env` is the environment ``awf-mcp serve`` gets: ``HOME`` the fake home,
``XDG_STATE_HOME`` inside it, the other ``XDG_*`` unset, ``TMPDIR`` a directory of the
world's, and secrets in variables whose names say so.

:func:`attempts` is the list of escapes, each a shell command and a ``leaked`` predicate
judged from the result text and from the world (a file written, a connection received, a
process gone): never from an exit code alone. Every command is written so that no marker
it could leak appears in the command itself (a result that echoes its command cannot
fake a leak). :func:`ordinary_work` is what contained commands must still be able to do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.helpers.harness import alive, wait_until

REFUSAL_NOTE = "[awf-mcp: the sandbox refused"
"""The start of the last line of a contained Bash result whose command hit a refused path or host."""

CREDENTIAL_FILES = (
    ".ssh/id_rsa",
    ".aws/credentials",
    ".azure/msal_token_cache.json",
    ".config/gcloud/application_default_credentials.json",
    ".kube/config",
    ".docker/config.json",
    ".netrc",
    ".gnupg/private-keys-v1d-key.key",
    ".config/gh/hosts.yml",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".password-store/email/work.gpg",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
)
"""Files under the built-in deny list, relative to ``$HOME``."""

STATE_DIR = ".xdg-state"
"""``$XDG_STATE_HOME``, relative to ``$HOME``: not the default, so the deny list must follow the variable."""

OTHER_DENIED = (
    f"{STATE_DIR}/awf-mcp/planted-state.json",  # awf-mcp's own state ($XDG_STATE_HOME/awf-mcp)
    ".config/awf-mcp/planted-config.toml",  # awf-mcp's own configuration
    "private/notes.txt",  # the config's deny_read = ["~/private"]
)

SECRET_VARIABLES = (
    "AWS_SECRET_ACCESS_KEY",
    "GITHUB_TOKEN",
    "DB_PASSWORD",
    "Openai_Api_Key",
    "GOOGLE_CREDENTIALS_JSON",
)
"""Variables whose names contain KEY, SECRET, TOKEN, PASSWORD or CREDENTIAL, in mixed case."""

PASSED_VARIABLE = "NPM_TOKEN"
"""A secret-looking variable the config names in ``env_pass``: contained commands see it."""

UPSTREAM_VARIABLE = "HOSTILE_API_KEY"
"""A secret-looking variable of the upstream's own ``env`` table: the upstream always gets it."""

DENY_READ = "~/private"
ALLOW_WRITE = "~/.cache/pip"


def _marker(kind: str) -> str:
    return f"awf-{kind}-{uuid.uuid4().hex}"


UPSTREAM_MARKER = _marker("upstream-env")
"""The value of :data:`UPSTREAM_VARIABLE` in the upstream's ``env`` table."""


def world_base() -> Path:
    """A new directory for one world, outside ``/tmp`` and ``$TMPDIR``, readable by every user.

    ``/var/tmp`` where it is usable, else the system's temporary directory (and a sandbox
    that grants it may then look leakier than it is: the directory is named in failures).
    """
    for parent in ("/var/tmp", None):
        try:
            base = Path(tempfile.mkdtemp(prefix="awf-containment-", dir=parent))
        except OSError:
            continue
        base.chmod(0o755)
        return base
    raise AssertionError("no directory for the containment world")


LISTENER_REPLY = "awf-listener-"
"""The start of every listener's reply (the rest is unique to the listener)."""


class Listener:
    """A TCP listener on 127.0.0.1 whose thread accepts and counts every connection.

    Each connection is answered, in a thread of its own, with an HTTP response whose body is
    :attr:`reply`, a marker only a connection that got through can bring back.
    """

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.socket.getsockname()[1]
        self.reply = _marker(LISTENER_REPLY.removeprefix("awf-").removesuffix("-"))
        self._count = 0
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._serve, name="containment listener", daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            with self._changed:
                self._count += 1
                self._changed.notify_all()
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        body = self.reply.encode()
        try:
            connection.settimeout(1)
            connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
            connection.recv(4096)
        except OSError:
            pass
        finally:
            connection.close()

    @property
    def count(self) -> int:
        """Connections accepted so far."""
        with self._changed:
            return self._count

    def connected_since(self, before: int, timeout: float = 0.5) -> bool:
        """True when a connection arrived after the count was ``before`` (waits up to ``timeout`` s)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._count > before, timeout)

    def close(self) -> None:
        """Stop accepting, and end the thread before the descriptor is closed (and its number reused:
        a thread still in ``accept`` on that number would answer the next listener's connections)."""
        with contextlib.suppress(OSError):
            self.socket.shutdown(socket.SHUT_RDWR)  # wakes a blocked accept() on Linux
        self._thread.join(5)
        self.socket.close()


@dataclass
class World:
    """The fake home, the project, and what the test started outside awf-mcp."""

    base: Path
    home: Path
    root: Path
    tmpdir: Path
    files: dict[str, str]
    """Denied file (path relative to home) -> the marker inside it."""
    variables: dict[str, str]
    """Secret environment variable -> its marker value (the refused ones and the passed one)."""
    outside_secret: str
    listener: Listener | None = None
    outside: subprocess.Popen[bytes] | None = None
    owner: str | None = None
    """The user who owns the world and runs the outside process (None: this process's user)."""
    run_as: Sequence[str] = field(default_factory=tuple)
    """The command prefix that runs a program as ``owner`` (empty for this process's user)."""

    def path(self, relative: str) -> Path:
        return self.home / relative

    def file_marker(self, relative: str) -> str:
        return self.files[relative]

    @property
    def outside_pid(self) -> int:
        assert self.outside is not None
        return self.outside.pid

    @property
    def port(self) -> int:
        assert self.listener is not None
        return self.listener.port

    def start(self) -> None:
        """Start the listener and the outside process (``sleep 300``, its secret in its environment)."""
        self.listener = Listener()
        environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "OUTSIDE_SECRET": self.outside_secret}
        self.outside = subprocess.Popen(
            [*self.run_as, "sleep", "300"],
            env=environment,
            cwd=self.home / ".ssh",
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert wait_until(lambda: _running_sleep(self.outside_pid), 5), "the outside process did not start"

    def stop(self) -> None:
        """Kill the outside process and close the listener."""
        if self.outside is not None and self.outside.poll() is None:
            self.outside.kill()
            self.outside.wait()
        if self.listener is not None:
            self.listener.close()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)

    def serve_env(self, backend: str | None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for ``awf-mcp serve``: HOME the fake home, XDG state inside it, the secrets."""
        env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith("XDG_")
            and not name.startswith("AWF_MCP_")
            and not _secret_looking(name)
            and name not in ("TMPDIR", "TMP", "TEMP", "SSH_AUTH_SOCK")
        }
        if os.environ.get("AWF_MCP_BINARY"):
            env["AWF_MCP_BINARY"] = os.environ["AWF_MCP_BINARY"]
        env.update(
            {
                "HOME": str(self.home),
                "XDG_STATE_HOME": str(self.home / STATE_DIR),
                "TMPDIR": str(self.tmpdir),
                "AWF_MCP_NO_PLUGINS": "1",
                "AWF_MCP_TOKEN_STORE": "file",
            }
        )
        if self.owner:
            env.update({"USER": self.owner, "LOGNAME": self.owner})
        env.update(self.variables)
        if backend:
            env["AWF_MCP_SANDBOX_BACKEND"] = backend
        env.update(extra or {})
        return env


def _secret_looking(name: str) -> bool:
    upper = name.upper()
    return any(word in upper for word in ("KEY", "SECRET", "TOKEN", "PASSWORD", "CREDENTIAL"))


def _running_sleep(pid: int) -> bool:
    try:
        return alive(pid) and Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"sleep\0")
    except OSError:
        return False


def build_world(owner: str | None = None, run_as: Sequence[str] = ()) -> World:
    """Lay out the fake home and project in a new directory (see the module docstring).

    With ``owner``, everything is chowned to that user, and ``run_as`` (a command prefix
    such as ``setpriv --reuid=nobody ... --``) starts the outside process as that user.
    """
    base = world_base()
    home, root, tmpdir = base / "home", base / "root", base / "tmpdir"
    for directory in (home, root, tmpdir, home / ".local" / "bin", home / ".cache" / "pip"):
        directory.mkdir(parents=True)
    files: dict[str, str] = {}
    for relative in CREDENTIAL_FILES + OTHER_DENIED:
        marker = _marker("file")
        path = home / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"secret content {marker}\n")
        files[relative] = marker
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAAlegitimate user@host\n")
    (home / ".bashrc").write_text("# the user's own .bashrc\n")
    (home / ".gitconfig").write_text("[init]\n\tdefaultBranch = main\n")
    subprocess.run(
        ["git", "init", "-q", str(root)],
        check=True,
        env={**os.environ, "HOME": str(home)},
        capture_output=True,
    )
    (root / ".git" / "hooks").mkdir(exist_ok=True)
    (root / "README.md").write_text("a project\n")
    (root / "src").mkdir()
    (root / "src" / "main.py").write_text("print('hello')\n")
    (root / "proj").mkdir()
    (root / "link").symlink_to(home / ".ssh" / "id_rsa")
    variables = {name: _marker("env") for name in (*SECRET_VARIABLES, PASSED_VARIABLE)}
    world = World(
        base=base,
        home=home,
        root=root,
        tmpdir=tmpdir,
        files=files,
        variables=variables,
        outside_secret=_marker("outside"),
        owner=owner,
        run_as=tuple(run_as),
    )
    if owner:
        subprocess.run(["chown", "-R", f"{owner}:", str(base)], check=True)
    return world


# ------------------------------------------------------------------ attempts


@dataclass
class Before:
    """What the world looked like just before an attempt ran."""

    connections: int


@dataclass(frozen=True)
class Attempt:
    """One escape: a shell command, and whether it got out."""

    name: str
    command: str
    leaked: Callable[[World, str, Before], bool]
    enforced_by: frozenset[str] = frozenset({"bwrap", "landlock"})
    """The backends that promise to refuse it (docs/sandbox.md): Landlock grants whole
    hierarchies, so it cannot keep ``.git/hooks`` read-only inside a writable root."""


def _text_has(*markers: str) -> Callable[[World, str, Before], bool]:
    return lambda world, text, before: any(marker in text for marker in markers)


def _file_has(path: Path, marker: str) -> Callable[[World, str, Before], bool]:
    def leaked(world: World, text: str, before: Before) -> bool:
        try:
            return marker in path.read_text(errors="replace")
        except OSError:
            return False

    return leaked


def _exists(path: Path) -> Callable[[World, str, Before], bool]:
    return lambda world, text, before: os.path.lexists(path)


def _connected(world: World, text: str, before: Before) -> bool:
    assert world.listener is not None
    # Any listener's reply counts: only a connection that got through brings one back.
    return LISTENER_REPLY in text or world.listener.connected_since(before.connections)


def _outside_gone(world: World, text: str, before: Before) -> bool:
    return wait_until(lambda: not _running_sleep(world.outside_pid), 0.3)


def split(word: str) -> str:
    """``word`` as the shell writes it out, spelled so that the command itself does not contain it."""
    middle = len(word) // 2
    return f"'{word[:middle]}''{word[middle:]}'"


BWRAP_ONLY = frozenset({"bwrap"})


def attempts(world: World) -> list[Attempt]:
    """Every escape, in an order where none spoils a later one (the outside process is killed last)."""
    home, root = world.home, world.root
    found: list[Attempt] = []
    every_file = tuple(world.files.values())
    # Reading: every denied file, directly and around the path check.
    for relative in world.files:
        found.append(
            Attempt(f"read ~/{relative}", f"cat {home / relative}", _text_has(world.files[relative]))
        )
    id_rsa = world.files[".ssh/id_rsa"]
    found += [
        Attempt("read ~/.ssh/id_rsa through ROOT/link", f"cat {root / 'link'}", _text_has(id_rsa)),
        Attempt(
            "read ~/.ssh/id_rsa through a hard link made in ROOT",
            f"ln {home / '.ssh/id_rsa'} {root / 'hardlink'} && cat {root / 'hardlink'}",
            lambda world, text, before: id_rsa in text or os.path.lexists(world.root / "hardlink"),
        ),
        Attempt(
            "read ~/.ssh/id_rsa through the outside process's /proc/PID/cwd",
            f"cat /proc/{world.outside_pid}/cwd/id_rsa",
            _text_has(id_rsa),
        ),
        Attempt(
            "read ~/.ssh/id_rsa through the outside process's /proc/PID/root",
            f"cat /proc/{world.outside_pid}/root{home / '.ssh/id_rsa'}",
            _text_has(id_rsa),
        ),
        Attempt(
            "read every file under $HOME (find | cat)",
            f"find {home} -type f -exec cat {{}} + 2>/dev/null",
            _text_has(*every_file),
        ),
    ]
    # The environment: the server's secrets, the outside process's.
    for name in SECRET_VARIABLES:
        found.append(
            Attempt(
                f"see ${name}",
                f"printenv {name}; env | grep -a -i -e {split(name)}",
                _text_has(world.variables[name]),
            )
        )
    secret_values = tuple(world.variables[name] for name in SECRET_VARIABLES)
    found += [
        Attempt(
            "see the secrets in another process's /proc/PID/environ (every PID)",
            "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -i -E "
            "'^[A-Za-z_]*(key|secret|token|password|credential)[A-Za-z_]*='",
            _text_has(*secret_values, world.outside_secret),
        ),
        Attempt(
            "read the outside process's /proc/PID/environ",
            f"tr '\\0' '\\n' < /proc/{world.outside_pid}/environ",
            _text_has(world.outside_secret),
        ),
    ]
    # Writing: where a later shell, git or a login would run what was written.
    write_mark = _marker("written")
    bashrc, git_config, pre_commit = (
        home / ".bashrc",
        root / ".git" / "config",
        root / ".git/hooks/pre-commit",
    )
    found += [
        Attempt(
            "append to ~/.bashrc",
            f"echo 'echo {write_mark}-a' >> {bashrc}",
            _file_has(bashrc, f"{write_mark}-a"),
        ),
        Attempt(
            "replace ~/.bashrc by a rename in $HOME",
            f"echo 'echo {write_mark}-b' > {home / '.bashrc.new'} && mv {home / '.bashrc.new'} {bashrc}",
            _file_has(bashrc, f"{write_mark}-b"),
        ),
        Attempt(
            "replace ~/.bashrc from $TMPDIR (mv)",
            f"f=$(mktemp) && echo 'echo {write_mark}-c' > $f && mv -f $f {bashrc}",
            _file_has(bashrc, f"{write_mark}-c"),
        ),
        Attempt(
            "create ~/.local/bin/git",
            f"mkdir -p {home / '.local/bin'}; printf '#!/bin/sh\\necho owned\\n' > {home / '.local/bin/git'}"
            f" && chmod +x {home / '.local/bin/git'}",
            _exists(home / ".local/bin/git"),
        ),
        Attempt(
            "append to ~/.ssh/authorized_keys",
            f"echo 'ssh-ed25519 AAAA {write_mark}-d' >> {home / '.ssh/authorized_keys'}",
            _file_has(home / ".ssh/authorized_keys", f"{write_mark}-d"),
        ),
        Attempt(
            "create ROOT/.git/hooks/pre-commit",
            f"printf '#!/bin/sh\\necho {write_mark}-e\\n' > {root / '.git/hooks/pre-commit'}",
            _file_has(pre_commit, f"{write_mark}-e"),
            BWRAP_ONLY,
        ),
        Attempt(
            "append to ROOT/.git/config",
            f"printf '[core]\\n\\tfsmonitor = {write_mark}-f\\n' >> {git_config}",
            _file_has(git_config, f"{write_mark}-f"),
            BWRAP_ONLY,
        ),
        Attempt(
            "git config core.hooksPath (ROOT/.git/config through git's lock file)",
            f"git -C {root} config core.hooksPath /tmp/{write_mark}-g",
            _file_has(git_config, f"{write_mark}-g"),
            BWRAP_ONLY,
        ),
        Attempt(
            "replace ROOT/.git/config by a rename in .git",
            f"cp {git_config} {root / '.git/config.new'}; printf '[core]\\n\\tfsmonitor = {write_mark}-h\\n'"
            f" >> {root / '.git/config.new'} && mv -f {root / '.git/config.new'} {git_config}",
            _file_has(git_config, f"{write_mark}-h"),
            BWRAP_ONLY,
        ),
        Attempt(
            "replace ROOT/.git/hooks by a rename and create pre-commit in the new one",
            f"mv {root / '.git/hooks'} {root / '.git/hooks.moved'} && mkdir {root / '.git/hooks'}"
            f" && printf '#!/bin/sh\\necho {write_mark}-i\\n' > {root / '.git/hooks/pre-commit'}",
            _file_has(pre_commit, f"{write_mark}-i"),
            BWRAP_ONLY,
        ),
        Attempt(
            "move ROOT/.git away and make a new one with a hook and a config",
            f"mv {root / '.git'} {root / '.git.moved'} && mkdir -p {root / '.git/hooks'}"
            f" && printf '#!/bin/sh\\necho {write_mark}-j\\n' > {root / '.git/hooks/pre-commit'}"
            f" && printf '[core]\\n\\tfsmonitor = {write_mark}-j\\n' > {git_config}",
            lambda world, text, before: (
                _file_has(pre_commit, f"{write_mark}-j")(world, text, before)
                or _file_has(git_config, f"{write_mark}-j")(world, text, before)
            ),
            BWRAP_ONLY,
        ),
    ]
    # The network: a listener on loopback, directly and through any proxy the sandbox offers.
    port = world.port
    found += [
        Attempt(
            "connect to 127.0.0.1 (bash /dev/tcp)",
            f"exec 3<>/dev/tcp/127.0.0.1/{port} && echo {split('CONNECTED')}",
            _connected,
        ),
        Attempt(
            "connect to 127.0.0.1 through the HTTP proxy in the environment (curl)",
            f"curl -sS --max-time 5 http://127.0.0.1:{port}/",
            _connected,
        ),
        Attempt(
            "connect to 127.0.0.1 through the HTTP proxy in the environment (python urllib)",
            "python3 -c 'import sys, urllib.request; "
            f'print(urllib.request.urlopen("http://127.0.0.1:{port}/", timeout=5).read())\'',
            _connected,
        ),
    ]
    # Other processes: the outside process started by the test.
    pid = world.outside_pid
    found += [
        Attempt(
            "kill -0 the outside process",
            f"kill -0 {pid} && echo {split('SIGNAL-DELIVERED')}",
            _text_has("SIGNAL-DELIVERED"),
        ),
        Attempt("kill -9 the outside process", f"kill -9 {pid}", _outside_gone),
    ]
    return found


def before(world: World) -> Before:
    assert world.listener is not None
    return Before(connections=world.listener.count)


# ------------------------------------------------------------------ ordinary work


@dataclass(frozen=True)
class Work:
    """Something a contained command must still be able to do, and how to tell it did."""

    name: str
    command: str
    done: Callable[[World, str], bool]


def _git_commits(repository: Path) -> int:
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", "-C", str(repository), "rev-list", "--count", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return int(done.stdout.strip()) if done.returncode == 0 and done.stdout.strip().isdigit() else 0


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def ordinary_work(world: World, surface: str) -> list[Work]:
    """Git, Python, temporary files, /usr/bin, the root, allow_write, env_pass (and an upstream's ``env``)."""
    root, home = world.root, world.home
    identity = "-c user.name=Tester -c user.email=tester@example.invalid"
    work = [
        Work(
            "git add && git commit in ROOT (a file that exists)",
            f"cd {root} && echo more >> README.md && git add README.md"
            f" && git {identity} commit -q -m first && git log --format=%s",
            lambda world, text: _git_commits(world.root) >= 1,
        ),
        Work(
            "git init && git add && git commit in ROOT/proj (an empty directory that exists)",
            f"cd {root / 'proj'} && git init -q && echo hi > a.txt"
            f" && git add a.txt && git {identity} commit -q -m fresh",
            lambda world, text: _git_commits(world.root / "proj") == 1,
        ),
        Work(
            "python3 -c",
            "python3 -c 'print(6 * 7 * 1000 + 1)'",
            lambda world, text: "42001" in text,
        ),
        Work(
            "mktemp in $TMPDIR, write, read",
            f"f=$(mktemp) && echo {split('TMPDIR-OK')} > $f && cat $f && case $f in $TMPDIR/*) echo "
            f"{split('IN-TMPDIR')};; esac && rm $f",
            lambda world, text: "TMPDIR-OK" in text and "IN-TMPDIR" in text,
        ),
        Work(
            "list /tmp (read-only: $TMPDIR is where files go)",
            f"ls -d /tmp/. && echo {split('SLASH-TMP-OK')}",
            lambda world, text: "SLASH-TMP-OK" in text,
        ),
        Work(
            "ls /usr/bin",
            "ls /usr/bin | grep -x -e env -e ls",
            lambda world, text: "env" in text.split() and "ls" in text.split(),
        ),
        Work(
            "create a file in ROOT",
            f"echo {split('IN-ROOT')} > {root / 'ordinary.txt'}",
            lambda world, text: _read(world.root / "ordinary.txt") == "IN-ROOT\n",
        ),
        Work(
            "create a directory in ROOT",
            f"mkdir {root / 'made'}",
            lambda world, text: (world.root / "made").is_dir(),
        ),
        Work(
            "create a file in ROOT/src (a directory that exists)",
            f"echo {split('IN-SRC')} > {root / 'src/ordinary.txt'}",
            lambda world, text: _read(world.root / "src/ordinary.txt") == "IN-SRC\n",
        ),
        Work(
            "write under allow_write (~/.cache/pip)",
            f"echo {split('ALLOWED')} > {home / '.cache/pip/ordinary'}",
            lambda world, text: (world.home / ".cache/pip/ordinary").exists(),
        ),
        Work(
            f"see ${PASSED_VARIABLE} (env_pass)",
            f"printenv {PASSED_VARIABLE}",
            lambda world, text: world.variables[PASSED_VARIABLE] in text,
        ),
    ]
    if surface == "upstream":
        work.append(
            Work(
                f"see ${UPSTREAM_VARIABLE} (the upstream's own env table)",
                f"printenv {UPSTREAM_VARIABLE}",
                lambda world, text: UPSTREAM_MARKER in text,
            )
        )
    return work


# ------------------------------------------------------------------ configuration


def toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def sandbox_keys(mode: str) -> list[str]:
    return [
        f"mode = {toml_string(mode)}",
        "network = []",
        f"deny_read = [{toml_string(DENY_READ)}]",
        f"allow_write = [{toml_string(ALLOW_WRITE)}]",
        f"env_pass = [{toml_string(PASSED_VARIABLE)}]",
    ]


def config_text(mode: str, upstream: Sequence[str] | None = None) -> str:
    """The TOML config: ``[sandbox]`` in ``mode``, and the hostile upstream when ``upstream`` is its argv.

    The upstream's ``[servers.hostile.sandbox]`` repeats the same keys (``network = []``:
    upstreams get the network by default), so whether per-upstream keys merge with the
    global ones or replace them, the rules are the same.
    """
    lines = ["[sandbox]", *sandbox_keys(mode), ""]
    if upstream is not None:
        command, *args = upstream
        lines += [
            "[servers.hostile]",
            f"command = {toml_string(command)}",
            "args = [" + ", ".join(toml_string(arg) for arg in args) + "]",
            f"env = {{ {UPSTREAM_VARIABLE} = {toml_string(UPSTREAM_MARKER)} }}",
            "",
            "[servers.hostile.sandbox]",
            *sandbox_keys(mode),
            "",
        ]
    return "\n".join(lines)


# ------------------------------------------------------------------ an unprivileged user


@dataclass
class Unprivileged:
    """How to run awf-mcp as an unprivileged user: a command prefix and an interpreter that user can run."""

    user: str
    prefix: list[str]
    awf: list[str]
    """The argv that runs ``awf-mcp`` as ``user`` (prefix included), without the subcommand."""
    python: str
    made: Path | None = None
    """A directory made for the interpreter (removed by :meth:`remove`)."""

    def remove(self) -> None:
        if self.made is not None:
            shutil.rmtree(self.made, ignore_errors=True)


def unprivileged(user: str = "nobody") -> Unprivileged | str:
    """awf-mcp runnable as ``user``, or the reason it is not (a string).

    The prefix is ``setpriv --reuid --regid --clear-groups --`` (``runuser -u USER --``
    without setpriv). The test interpreter is used when ``user`` can run it and import
    awf_mcp; otherwise (a pyenv under root's 0700 home, say) a venv is made in a world-readable
    directory from a system Python of the same minor version, whose ``.pth`` adds the test
    venv's site-packages (and so the editable awf_mcp), and checked the same way.
    ``AWF_MCP_BINARY`` is used as it is, when ``user`` can run it.
    """
    import pwd
    import sys
    import sysconfig

    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return f"there is no user {user!r} on this machine"
    setpriv, runuser = shutil.which("setpriv"), shutil.which("runuser")
    if setpriv:
        prefix = [setpriv, f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--clear-groups", "--"]
    elif runuser:
        prefix = [runuser, "-u", user, "--"]
    else:
        return "neither setpriv nor runuser is installed (util-linux)"

    def works(argv: list[str]) -> str | None:
        # Through a shell running as the user: setpriv may still hold root's capabilities while it
        # execs, so a program it starts directly can be one the user could not start by itself.
        shell = ["/bin/sh", "-c", 'exec "$@"', "sh", *argv, "--version"]
        done = subprocess.run(
            [*prefix, *shell], capture_output=True, text=True, check=False, cwd="/", timeout=60
        )
        return None if done.returncode == 0 else (done.stderr or done.stdout).strip()[-500:]

    binary = os.environ.get("AWF_MCP_BINARY")
    if binary:
        failure = works([binary])
        if failure:
            return f"{user} cannot run AWF_MCP_BINARY={binary}: {failure}"
        python = _python_for(prefix, sys.executable) or shutil.which("python3") or "/usr/bin/python3"
        return Unprivileged(user, prefix, [*prefix, binary], python)
    failure = works([sys.executable, "-m", "awf_mcp"])
    if failure is None:
        return Unprivileged(user, prefix, [*prefix, sys.executable, "-m", "awf_mcp"], sys.executable)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    system = shutil.which(version, path="/usr/local/bin:/usr/bin:/bin")
    if system is None:
        return (
            f"{user} cannot run the test interpreter ({failure}) and there is no system {version} to make one"
        )
    made = Path(
        tempfile.mkdtemp(
            prefix="awf-containment-venv-", dir="/var/tmp" if os.path.isdir("/var/tmp") else None
        )
    )
    made.chmod(0o755)
    venv = made / "venv"
    done = subprocess.run(
        [system, "-m", "venv", "--without-pip", str(venv)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        shutil.rmtree(made, ignore_errors=True)
        return f"{user} cannot run the test interpreter ({failure}); no venv from {system}: {done.stderr}"
    site_packages = sysconfig.get_paths()["purelib"]
    (venv / "lib" / version / "site-packages" / "awf_test_venv.pth").write_text(
        f"import site; site.addsitedir({site_packages!r})\n"
    )
    python = str(venv / "bin" / "python")
    failure_again = works([python, "-m", "awf_mcp"])
    if failure_again:
        shutil.rmtree(made, ignore_errors=True)
        return (
            f"{user} cannot run the test interpreter ({failure}), nor a venv made from {system} over "
            f"the test venv's site-packages ({failure_again})"
        )
    return Unprivileged(user, prefix, [*prefix, python, "-m", "awf_mcp"], python, made)


def _python_for(prefix: list[str], python: str) -> str | None:
    shell = ["/bin/sh", "-c", 'exec "$@"', "sh", python, "-c", "import mcp"]
    done = subprocess.run([*prefix, *shell], capture_output=True, check=False, cwd="/")
    return python if done.returncode == 0 else None
