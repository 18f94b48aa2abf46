"""The sandbox policy, its layout and its proxy's host rules, without starting a server.

The kernel half (that a confined child really is refused) is tested here too, in a forked
child, for each mechanism alone; tests/e2e/test_containment.py attacks the whole server.
"""

from __future__ import annotations

import os
import socket
import threading
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from awf_mcp.processes.containment import kernel, policy, proxy
from awf_mcp.processes.containment.layout import carve, carved, layout
from awf_mcp.processes.containment.plan import prepare
from awf_mcp.processes.containment.policy import SandboxPolicy, parse_table


def test_parse_table_takes_exactly_the_documented_keys() -> None:
    checked = parse_table(
        {
            "mode": "contained",
            "network": ["pypi.org", "registry.npmjs.org:443", "*.example.com", "[::1]:8080"],
            "deny_read": ["~/private"],
            "allow_write": ["~/.cache/pip"],
            "env_pass": ["NPM_TOKEN"],
        },
        "[sandbox] of test",
    )
    assert checked["network"] == ("pypi.org", "registry.npmjs.org:443", "*.example.com", "[::1]:8080")
    for bad, said in [
        ({"mode": "open"}, 'must be "contained" or "off"'),
        ({"network": "pypi.org"}, "must be a list"),
        ({"network": ["http://pypi.org/"]}, "is not a host"),
        ({"deny_read": [""]}, "non-empty strings"),
        ({"allowwrite": []}, "unknown key 'allowwrite'"),
    ]:
        with pytest.raises(ValueError, match=said):
            parse_table(bad, "[sandbox] of test")


def test_a_server_table_replaces_mode_and_network_and_adds_lists() -> None:
    user = SandboxPolicy(network=("pypi.org",), deny_read=("~/a",), env_pass=("A_TOKEN",))
    server = user.for_server({"network": ("api.github.com",), "deny_read": ("~/b",), "mode": "off"})
    assert server.network == ("api.github.com",) and server.mode == "off"
    assert server.deny_read == ("~/a", "~/b") and server.env_pass == ("A_TOKEN",)
    assert user.for_server({}) is user


def test_secret_variables_are_dropped_unless_named() -> None:
    env = {
        "PATH": "/bin",
        "AWS_SECRET_ACCESS_KEY": "s",
        "GITHUB_TOKEN": "t",
        "db_password": "p",
        "GOOGLE_APPLICATION_CREDENTIALS": "c",
        "NPM_TOKEN": "n",
        "MY_API_KEY": "k",
        "HTTPS_PROXY": "http://corp:3128",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "OWN_TOKEN": "o",
    }
    kept = policy.contained_environment(env, SandboxPolicy(env_pass=("NPM_TOKEN",)), named=("OWN_TOKEN",))
    assert kept == {"PATH": "/bin", "NPM_TOKEN": "n", "OWN_TOKEN": "o"}


def test_file_tools_share_the_deny_list_and_the_read_only_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    policy.deny_read.cache_clear()
    policy._denied_prefixes.cache_clear()
    contained = SandboxPolicy(deny_read=("~/private",))
    assert policy.read_denied(str(tmp_path / ".ssh" / "id_rsa"), contained)
    assert policy.read_denied(str(tmp_path / "private"), contained)
    assert policy.read_denied(str(tmp_path / "privately"), contained) is None
    assert policy.read_denied(str(tmp_path / ".ssh"), SandboxPolicy(mode="off")) is None
    root = str(tmp_path / "proj")
    assert policy.write_protected(f"{root}/.git/hooks/pre-commit", [root], contained)
    assert policy.write_protected(f"{root}/.git/config", [root], contained)
    assert policy.write_protected(f"{root}/.git/HEAD", [root], contained) is None
    assert policy.write_protected(f"{root}/.git/hooks/x", [root], SandboxPolicy(mode="off")) is None


def test_carve_covers_everything_but_the_excluded(tmp_path: Path) -> None:
    for name in ("a/b/secret", "a/b/open", "a/c", "d"):
        (tmp_path / name).mkdir(parents=True)
    (tmp_path / "a" / "link").symlink_to(tmp_path / "a" / "b" / "secret")
    rules = sorted(carve(str(tmp_path), [str(tmp_path / "a" / "b" / "secret")]))
    assert rules == sorted(str(tmp_path / name) for name in ("a/b/open", "a/c", "d"))
    assert carve(str(tmp_path), []) == [str(tmp_path)]
    assert carve(str(tmp_path / "d"), [str(tmp_path)]) == []


def test_layout_by_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    policy.deny_read.cache_clear()
    policy._denied_prefixes.cache_clear()
    (tmp_path / ".ssh").mkdir()
    (tmp_path / ".npm").mkdir()
    root = tmp_path / "proj"
    (root / ".git" / "hooks").mkdir(parents=True)
    shell = layout("shell", SandboxPolicy(), [str(root)])
    assert shell.network == "none" and str(tmp_path / ".ssh") in shell.hidden
    assert {str(root), str(tmp_path / ".npm"), shell.private_tmp} <= set(shell.writable)
    assert str(root / ".git" / "hooks") in shell.read_only
    server = layout("server", SandboxPolicy(), [str(root)], "srv")
    assert (
        server.network == "open" and str(tmp_path / "data" / "awf-mcp" / "servers" / "srv") in server.writable
    )
    narrowed = layout("server", SandboxPolicy(network=("api.github.com",)), [str(root)], "srv")
    assert narrowed.network == "proxy" and narrowed.hosts == ("api.github.com",)


def test_mode_off_contains_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy, "_active", policy._Active(SandboxPolicy(mode="off")))
    assert prepare("shell", ["/tmp"]) is None
    assert prepare("server", server="x") is None


@pytest.mark.parametrize(
    ("patterns", "host", "port", "allowed"),
    [
        (["pypi.org"], "PyPI.org.", 443, True),
        (["pypi.org"], "pypi.org.evil.com", 443, False),
        (["*.npmjs.org"], "registry.npmjs.org", 443, True),
        (["*.npmjs.org"], "npmjs.org", 443, False),
        (["*.npmjs.org"], "evilnpmjs.org", 443, False),
        (["registry.npmjs.org:443"], "registry.npmjs.org", 80, False),
        (["[::1]:8080"], "::1", 8080, True),
        (["*"], "anything.example", 1, True),
        ([], "pypi.org", 443, False),
    ],
)
def test_host_patterns(patterns: list[str], host: str, port: int, allowed: bool) -> None:
    assert proxy.host_allowed(patterns, host, port) is allowed


def test_the_proxy_tunnels_allowed_hosts_and_refuses_the_rest() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def answer() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(4096)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")

    threading.Thread(target=answer, daemon=True).start()
    proxied = proxy.HostProxy([f"127.0.0.1:{port}"])
    opener = urllib.request.build_opener(
        urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{proxied.port}"})
    )
    with opener.open(f"http://127.0.0.1:{port}/x", timeout=10) as response:
        assert response.read() == b"hello"
    started = 0.0
    with pytest.raises(urllib.error.HTTPError) as refused:
        opener.open("http://localhost:9/", timeout=10)
    assert refused.value.code == 403 and b"[sandbox]" in refused.value.read()
    assert proxied.refused_since(started) == ["localhost:9"]
    listener.close()


def _in_confined_child(spec: str, attempt: str) -> int:
    """Run ``attempt`` (Python source) in a child confined by ``spec``; its exit code."""
    pid = os.fork()
    if pid == 0:
        try:
            kernel.confine(spec, ["/bin/true"])
            exec(attempt)
            os._exit(0)
        except BaseException:
            os._exit(1)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(kernel.landlock_abi() < 4, reason="needs Landlock ABI 4 (Linux 6.7)")
def test_landlock_refuses_reads_writes_and_tcp_outside_its_rules(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("key")
    work = tmp_path / "work"
    work.mkdir()
    readable = carve("/", [str(secret)])
    spec = kernel.encode(readable, [str(work)], fs=True, net_ports=[], scope=True, udp=False)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    assert _in_confined_child(spec, f"open({str(work / 'ok')!r}, 'w').write('x')") == 0
    assert _in_confined_child(spec, f"open({str(secret)!r}).read()") == 1
    assert _in_confined_child(spec, f"open({str(tmp_path / 'new')!r}, 'w')") == 1
    assert _in_confined_child(spec, f"import socket; socket.create_connection(('127.0.0.1', {port}))") == 1
    assert _in_confined_child(spec, "import os; os.kill(1, 0)") == 1
    # The control: the same attempts with nothing confined succeed.
    open_spec = kernel.encode([], [], fs=False, net_ports=None, scope=False, udp=True)
    assert _in_confined_child(open_spec, f"open({str(secret)!r}).read()") == 0
    assert (
        _in_confined_child(open_spec, f"import socket; socket.create_connection(('127.0.0.1', {port}))") == 0
    )
    listener.close()


def test_the_socket_filter_refuses_unix_and_datagram_sockets() -> None:
    closed = kernel.encode([], [], fs=False, net_ports=None, scope=False, udp=False)
    assert _in_confined_child(closed, "import socket; socket.socket(socket.AF_UNIX)") == 1
    assert _in_confined_child(closed, "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)") == 1
    assert _in_confined_child(closed, "import socket; socket.socket(socket.AF_INET, socket.SOCK_STREAM)") == 0
    assert _in_confined_child(closed, "import socket; socket.socketpair()") == 0
    opened = kernel.encode([], [], fs=False, net_ports=None, scope=False, udp=True)
    assert _in_confined_child(opened, "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)") == 0
    assert _in_confined_child(opened, "import socket; socket.socket(socket.AF_UNIX)") == 1


def test_carved_rules_follow_a_directory_created_later(tmp_path: Path) -> None:
    (tmp_path / "home" / ".ssh").mkdir(parents=True)
    excluded = [str(tmp_path / "home" / ".ssh")]
    before = carved(str(tmp_path), excluded)
    assert before == carved(str(tmp_path), excluded)  # the same answer, from the cache
    (tmp_path / "home" / "new").mkdir()
    assert str(tmp_path / "home" / "new") in carved(str(tmp_path), excluded)
    assert str(tmp_path / "home" / "new") not in before


def test_the_trust_prompt_names_what_a_sandbox_table_widens(tmp_path: Path) -> None:
    from awf_mcp.core import config

    path = tmp_path / "awf-mcp.toml"
    path.write_text(
        '[sandbox]\nnetwork = ["*"]\nallow_write = ["~"]\nenv_pass = ["GITHUB_TOKEN"]\n'
        '[servers.x]\ncommand = "true"\n[servers.x.sandbox]\nmode = "off"\n'
    )
    said = config.describe(config.parse_file(path))
    assert "let Bash and the upstream servers reach *" in said
    assert "let Bash and the upstream servers write ~" in said
    assert "pass Bash and the upstream servers the secret variables GITHUB_TOKEN" in said
    assert 'run server x uncontained (mode = "off")' in said
    path.write_text('[sandbox]\ndeny_read = ["~/private"]\n')
    assert config.describe(config.parse_file(path)) == ["hide ~/private"]


def test_a_host_always_allowed_is_added_to_the_config_as_written(tmp_path: Path) -> None:
    from awf_mcp.processes.containment.asking import add_host

    config = tmp_path / "awf-mcp.toml"
    config.write_text(
        '# mine\n[sandbox]  # the table\nnetwork = ["pypi.org"]  # hosts\n\n[servers.x]\ncommand = "x"\n'
    )
    config.chmod(0o600)
    add_host(str(config), "example.org")
    add_host(str(config), "example.org")  # once only
    text = config.read_text()
    assert "# mine" in text and "# the table" in text and "[servers.x]" in text, text
    assert tomllib.loads(text)["sandbox"]["network"] == ["pypi.org", "example.org"]
    assert config.stat().st_mode & 0o777 == 0o600
    bare = tmp_path / "bare.toml"
    bare.write_text("[servers.y]\ncommand = 'y'\n")
    add_host(str(bare), "example.org")
    assert tomllib.loads(bare.read_text())["sandbox"]["network"] == ["example.org"]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["awf-mcp.toml", "bare.toml"]


def test_the_proxy_reads_the_calls_token_from_basic_credentials() -> None:
    import base64

    from awf_mcp.processes.containment.proxy import _token

    encoded = base64.b64encode(b"call:abc123").decode()
    head = f"CONNECT h:443 HTTP/1.1\r\nHost: h:443\r\nProxy-Authorization: Basic {encoded}\r\n\r\n".encode()
    assert _token(head) == "abc123"
    assert _token(b"CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Bearer abc\r\n\r\n") == ""
    assert _token(b"CONNECT h:443 HTTP/1.1\r\nProxy-Authorization: Basic !!!\r\n\r\n") == ""
    assert _token(b"CONNECT h:443 HTTP/1.1\r\n\r\n") == ""
