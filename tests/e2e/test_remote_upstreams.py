"""Remote upstreams as users have them: the HTTP+SSE transport, and OAuth sign-in.

The servers are written with the SDK (``tests/upstreams/remote_upstream.py``): its SSE server
transport, and its authorization-server routes and bearer-auth middleware in front of a
provider that approves without a person.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import stat
import subprocess
import threading
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from awf_mcp.state import tokenstore
from tests.e2e.test_upstream import NO_PLUGINS, servers_list, write_config
from tests.helpers.harness import RawServer, mcp_session, server_command, server_env, text_of, wait_until
from tests.helpers.remote import remote_upstream

pytestmark = pytest.mark.e2e


@pytest.mark.anyio
async def test_an_sse_upstream_is_served_and_called(tmp_path: Path) -> None:
    with remote_upstream("sse") as base:
        config = write_config(tmp_path, f'[servers.old]\ntype = "sse"\nurl = "{base}/sse"\n')
        async with mcp_session("--config", config, "--no-builtins", cwd=tmp_path, env=NO_PLUGINS) as session:
            names = {tool.name for tool in (await session.list_tools()).tools}
            result = await session.call_tool("old_echo", {"message": "over sse"})
    assert {"old_echo", "old_whoami"} <= names
    assert not result.is_error and text_of(result) == "echo: over sse"
    refused = awf(tmp_path, "servers", "login", "old", "--config", config)
    assert refused.returncode == 1
    assert "server 'old' cannot be signed in to: " in refused.stderr, refused.stderr


def test_an_sse_server_signs_in_with_oauth_like_a_streamable_http_one(tmp_path: Path) -> None:
    with remote_upstream("oauth-sse") as base:
        table = (
            f'[servers.old]\ntype = "sse"\nurl = "{base}/sse"\nauth = "oauth"\nstartup_timeout_seconds = 10\n'
        )
        config = write_config(tmp_path, table)
        before = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"][0]
        code, _, err = sign_in(config, "old", tmp_path)
        assert code == 0, err
        result = echo_once(config, "old", "signed in over sse", tmp_path)
    assert before["state"] == "needs sign-in" and before["transport"] == "sse"
    assert result["content"][0]["text"] == "echo: signed in over sse"


def echo_once(config: str, name: str, message: str, cwd: Path) -> dict[str, Any]:
    """``serve --config CONFIG`` answering one call of NAME_echo: its result."""
    with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=cwd) as server:
        server.initialize()
        echo = {"name": f"{name}_echo", "arguments": {"message": message}}
        result: dict[str, Any] = server.request("tools/call", echo)["result"]
    return result


def oauth_table(name: str, base: str, **extra: str) -> str:
    lines = [f"[servers.{name}]", f'url = "{base}/mcp"', 'auth = "oauth"', "startup_timeout_seconds = 10"]
    lines += [f'{key} = "{value}"' for key, value in extra.items()]
    return "\n".join(lines) + "\n"


class Login:
    """``awf-mcp servers login NAME --no-browser`` running: the URL it printed, then its end."""

    def __init__(self, config: str, name: str, cwd: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            server_command("servers", "login", name, "--no-browser", "--config", config, *extra),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=server_env(NO_PLUGINS),
        )
        assert self.process.stdout is not None
        self.url = ""
        for line in self.process.stdout:
            if line.startswith("http"):
                self.url = line.strip()
                break
        assert self.url, self.finish()

    def finish(self) -> tuple[int, str, str]:
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


def awf(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``awf-mcp ARGS...`` run to its end in CWD (tables 200 columns wide)."""
    env = server_env({**NO_PLUGINS, "COLUMNS": "200"})
    return subprocess.run(server_command(*args), capture_output=True, text=True, cwd=cwd, env=env, timeout=60)


def approve_in_browser(url: str) -> httpx2.Response:
    """What the browser does: open the authorization URL, follow the redirects to the callback."""
    return httpx2.get(url, follow_redirects=True, timeout=30)


def sign_in(config: str, name: str, cwd: Path) -> tuple[int, str, str]:
    login = Login(config, name, cwd)
    answer = approve_in_browser(login.url)
    assert answer.status_code == 200 and "you can close this tab" in answer.text
    return login.finish()


def test_login_signs_in_and_serve_calls_the_server_with_the_token(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        code, out, err = sign_in(config, "remote", tmp_path)
        assert code == 0, err
        assert "signed in to server 'remote'" in out
        stored = tokenstore.record_path().read_text()
        assert '"access_token"' in stored
        with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()
            result = server.request("tools/call", {"name": "remote_whoami", "arguments": {}})["result"]
        assert not result.get("isError") and result["content"][0]["text"] not in ("", "anonymous")
        assert "access_token" not in Path(config).read_text()
        assert stat.S_IMODE(tokenstore.record_path().stat().st_mode) == 0o600
        assert stat.S_IMODE(tokenstore.record_path().parent.stat().st_mode) == 0o700


def stored_tokens() -> dict[str, object]:
    record = json.loads(tokenstore.record_path().read_text())
    (entry,) = record.values()
    tokens = entry["tokens"]
    assert isinstance(tokens, dict)
    return tokens


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).items()}


def denial_of(login: Login) -> str:
    """The authorization server's refusal of LOGIN: its callback with error=access_denied and the state."""
    asked = query_of(login.url)
    return f"{asked['redirect_uri']}?error=access_denied&state={asked['state']}"


def test_a_denied_sign_in_exits_1_with_one_sentence_and_stores_no_token(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        login = Login(config, "remote", tmp_path)
        assert httpx2.get(denial_of(login), timeout=10).status_code == 200
        code, _, err = login.finish()
    assert code == 1
    assert err.strip().splitlines()[-1] == (
        "awf-mcp: error: not signed in to server 'remote': "
        "the sign-in was refused: access_denied; nothing was stored"
    )
    assert not tokenstore.record_path().exists() or "access_token" not in tokenstore.record_path().read_text()


def test_a_redirect_with_another_state_exits_1_and_stores_no_token(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        login = Login(config, "remote", tmp_path)
        asked = query_of(login.url)
        forged = login.url.replace(urllib.parse.quote(asked["state"], safe=""), "forged-state")
        assert forged != login.url
        approve_in_browser(forged)
        code, _, err = login.finish()
    assert code == 1 and "the redirect's state did not match the sign-in's" in err
    assert not tokenstore.record_path().exists() or "access_token" not in tokenstore.record_path().read_text()


def test_no_answer_from_the_browser_exits_1_after_the_timeout(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        login = Login(config, "remote", tmp_path, "--timeout", "1")
        assert query_of(login.url)["redirect_uri"].startswith("http://127.0.0.1:")
        code, _, err = login.finish()
    assert code == 1 and "no answer from the browser within 1 s; nothing was stored" in err


def test_a_server_that_needs_sign_in_is_reported_and_the_others_are_served(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base, remote_upstream("sse") as open_base:
        config = write_config(
            tmp_path, oauth_table("remote", base), f'[servers.open]\ntype = "sse"\nurl = "{open_base}/sse"\n'
        )
        with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()
            names = {tool["name"] for tool in server.request("tools/list")["result"]["tools"]}
            assert "open_echo" in names and not any(name.startswith("remote_") for name in names)
            assert "server 'remote' needs sign-in: run awf-mcp servers login remote" in server.stderr()
        listed = servers_list(config, tmp_path, NO_PLUGINS)
        table = awf(tmp_path, "servers", "list", "--config", config).stdout
        doctor = awf(tmp_path, "doctor", "--json", "--config", config)
    rows = {row["name"]: row for row in json.loads(listed.stdout)["servers"]}
    assert rows["remote"]["state"] == "needs sign-in"
    assert rows["remote"]["fix"] == "awf-mcp servers login remote"
    assert rows["open"]["state"] == "running" and rows["open"]["sign_in"] is None
    assert "needs sign-in: run awf-mcp servers login remote" in table and "\\x0a" not in table
    findings = {f["subject"]: f for f in json.loads(doctor.stdout)["findings"] if f["check"] == "servers"}
    remote = findings["server 'remote' (http)"]
    assert remote["status"] == "error" and remote["detail"] == "not served: it needs sign-in"
    assert remote["fix"] == "sign in once: awf-mcp servers login remote"


def test_an_expired_token_is_refreshed_and_the_rotated_refresh_token_kept(tmp_path: Path) -> None:
    with remote_upstream("oauth", "1") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        before = stored_tokens()
        time.sleep(1.5)  # the access token has expired
        audit = tmp_path / "audit.jsonl"
        args = ("--config", config, "--no-builtins", "--log-level", "DEBUG", "--audit-log", str(audit))
        with RawServer(*args, env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()
            result = server.request("tools/call", {"name": "remote_echo", "arguments": {"message": "hi"}})
            logged = server.stderr()
        after = stored_tokens()
    assert result["result"]["content"][0]["text"] == "echo: hi"
    assert after["refresh_token"] != before["refresh_token"]
    assert after["access_token"] != before["access_token"]
    audited = audit.read_text()
    assert "remote_echo" in audited and "call remote_echo" in logged
    for token in (
        before["access_token"],
        before["refresh_token"],
        after["access_token"],
        after["refresh_token"],
    ):
        assert str(token) not in logged and str(token) not in audited


def test_logout_revokes_and_forgets_and_the_server_then_needs_sign_in(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        access = str(stored_tokens()["access_token"])
        listed = servers_list(config, tmp_path, NO_PLUGINS).stdout
        (row,) = json.loads(listed)["servers"]
        assert row["sign_in"] == "signed in" and row["expires_at"] and row["state"] == "running"
        assert access not in listed and str(stored_tokens()["refresh_token"]) not in listed
        table = awf(tmp_path, "servers", "list", "--config", config).stdout
        assert "signed in (token" in table and "\\x0a" not in table and access not in table
        done = awf(tmp_path, "servers", "logout", "remote", "--config", config)
        assert done.returncode == 0 and "the server revoked them" in done.stdout
        assert "access_token" not in tokenstore.record_path().read_text()
        revoked = httpx2.post(
            f"{base}/mcp", headers={"Authorization": f"Bearer {access}"}, json={}, timeout=10
        )
        assert revoked.status_code == 401
        rows = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"]
    assert rows[0]["state"] == "needs sign-in"


def test_a_token_file_other_users_can_read_is_refused_with_a_sentence(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        os.chmod(tokenstore.record_path(), 0o644)
        try:
            rows = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"]
        finally:
            os.chmod(tokenstore.record_path(), 0o600)
    assert rows[0]["state"] == "failed" and rows[0]["sign_in"] == "refused"
    assert "can be read or written by other users (mode 644)" in rows[0]["reason"]


def test_mid_session_a_token_that_expires_is_refreshed_and_a_revoked_one_says_how_to_sign_in(
    tmp_path: Path,
) -> None:
    with remote_upstream("oauth", "1") as base:
        config = write_config(tmp_path, oauth_table("remote", base), oauth_table("other", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        assert sign_in(config, "other", tmp_path)[0] == 0
        with RawServer("--config", config, "--no-builtins", env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()

            def echo(name: str, message: str) -> dict[str, object]:
                params = {"name": f"{name}_echo", "arguments": {"message": message}}
                return server.request("tools/call", params)["result"]  # type: ignore[no-any-return]

            assert echo("remote", "one")["content"] == [{"type": "text", "text": "echo: one"}]
            time.sleep(1.5)  # expired: the next call refreshes first
            assert echo("remote", "two")["content"] == [{"type": "text", "text": "echo: two"}]
            done = awf(tmp_path, "servers", "logout", "remote", "--config", config)
            assert "the server revoked them" in done.stdout
            time.sleep(1.5)
            revoked = echo("remote", "three")
            assert revoked.get("isError") is True
            assert "run awf-mcp servers login remote" in revoked["content"][0]["text"]  # type: ignore[index]
            assert echo("other", "four")["content"] == [{"type": "text", "text": "echo: four"}]


def test_two_processes_refreshing_at_once_both_keep_the_sign_in(tmp_path: Path) -> None:
    # The server answers a refresh after 2 s, so both processes send theirs with the same
    # refresh token; it honours the first and refuses the second (the token was rotated).
    with remote_upstream("oauth", "3", "2") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        first = stored_tokens()
        time.sleep(3.2)  # expired: each process refreshes in its handshake
        args = ("--config", config)
        with (
            RawServer(*args, env=NO_PLUGINS, cwd=tmp_path) as one,
            RawServer(*args, env=NO_PLUGINS, cwd=tmp_path) as two,
        ):
            for server in (one, two):
                server.initialize()
            for server in (one, two):
                names = {tool["name"] for tool in server.request("tools/list")["result"]["tools"]}
                assert "remote_echo" in names
        kept = stored_tokens()
        assert kept["refresh_token"] != first["refresh_token"]
        time.sleep(3.2)  # and the refresh token kept is the live one: a later process refreshes with it
        with RawServer(*args, env=NO_PLUGINS, cwd=tmp_path) as later:
            later.initialize()
            echo = {"name": "remote_echo", "arguments": {"message": "later"}}
            assert later.request("tools/call", echo)["result"]["content"][0]["text"] == "echo: later"


class Hostile(http.server.BaseHTTPRequestHandler):
    """A server that answers 401 to everything; with ``padding``, its resource metadata is that big."""

    padding = 0

    def answer(self) -> None:
        port = self.server.server_address[1]
        metadata = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
        if self.path.startswith("/.well-known/oauth-protected-resource") and self.padding:
            head = json.dumps({"resource": f"http://127.0.0.1:{port}/mcp", "authorization_servers": []})
            body = head[:-1].encode() + b', "pad": "' + b"x" * self.padding + b'"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
        else:
            body = b""
            self.send_response(401)
            self.send_header("WWW-Authenticate", f'Bearer resource_metadata="{metadata}"')
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(OSError):
            self.wfile.write(body)

    do_GET = do_POST = answer

    def log_message(self, *args: object) -> None:
        return None


class HugeMetadata(Hostile):
    padding = 10 * 1024 * 1024


@contextlib.contextmanager
def hostile(handler: type[Hostile]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("handler", "state", "said"),
    [
        (Hostile, "needs sign-in", "the authorization server answered: "),
        (HugeMetadata, "failed", "/.well-known/oauth-protected-resource/mcp passed 1,048,576 bytes"),
    ],
    ids=["401-forever", "10-MiB-metadata"],
)
def test_a_server_that_only_refuses_ends_the_sign_in_with_one_sentence(
    tmp_path: Path, handler: type[Hostile], state: str, said: str
) -> None:
    with hostile(handler) as base:
        config = write_config(tmp_path, oauth_table("hostile", base))
        done = awf(
            tmp_path, "servers", "login", "hostile", "--no-browser", "--timeout", "5", "--config", config
        )
        rows = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"]
    assert done.returncode == 1 and not done.stdout
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("awf-mcp: error: not signed in to server 'hostile': ") and "Traceback" not in line
    assert said in line and said in rows[0]["reason"] and "Error" not in line
    assert rows[0]["state"] == state


def test_an_imported_oauth_server_leaves_the_agents_file_once_signed_in(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        agent = {"mcpServers": {"remote": {"type": "http", "url": f"{base}/mcp"}}}
        (tmp_path / ".mcp.json").write_text(json.dumps(agent))
        first = awf(tmp_path, "servers", "import", "claude", "--write")
        assert first.returncode == 0, first.stderr
        assert "'remote' stays in" in first.stdout and "run awf-mcp servers login remote" in first.stdout
        assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"remote", "awf"}
        config = str(tmp_path / "awf-mcp.toml")
        assert 'auth = "oauth"' in Path(config).read_text()
        assert sign_in(config, "remote", tmp_path)[0] == 0
        second = awf(tmp_path, "servers", "import", "claude", "--write")
        assert second.returncode == 0, second.stderr
        assert "awf-mcp can serve it: it leaves" in second.stdout
        assert set(json.loads((tmp_path / ".mcp.json").read_text())["mcpServers"]) == {"awf"}
        assert "access_token" not in Path(config).read_text()


def test_an_sse_server_that_refuses_the_stream_is_reported_with_the_status(tmp_path: Path) -> None:
    with hostile(Hostile) as base:
        table = f'[servers.old]\ntype = "sse"\nurl = "{base}/sse?key=s3cret"\nstartup_timeout_seconds = 5\n'
        config = write_config(tmp_path, table)
        (row,) = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"]
    # Its 401 names protected-resource metadata: an OAuth server, whatever the entry says (RFC 9728).
    assert row["state"] == "needs sign-in" and row["fix"] == "awf-mcp servers login old"
    assert "answered 401 asking for OAuth" in row["reason"] and "s3cret" not in row["reason"]


def test_metadata_that_puts_the_token_endpoint_on_another_host_is_refused_unless_configured(
    tmp_path: Path,
) -> None:
    # The issuer is 127.0.0.1; its metadata names the token and registration endpoints on
    # localhost (the same listener under another name, so a configured login can finish).
    with remote_upstream("oauth-elsewhere") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        refused = awf(tmp_path, "servers", "login", "remote", "--no-browser", "--config", config)
        stored = tokenstore.record_path().read_text() if tokenstore.record_path().exists() else ""
        with RawServer("--config", config, env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()
            served = server.stderr()
            assert "server 'remote' not served: " in served
            assert "puts its token endpoint on another host, localhost" in served
        trusted = tmp_path / "trusted"
        trusted.mkdir()
        table = oauth_table("remote", base) + 'oauth_endpoint_hosts = ["LocalHost"]\n'
        trusting = write_config(trusted, table)
        code, _, err = sign_in(trusting, "remote", trusted)
        assert code == 0, err
        answer = echo_once(trusting, "remote", "via localhost", trusted)
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines()[-1] == (
        "awf-mcp: error: not signed in to server 'remote': the authorization server 127.0.0.1 puts its "
        "token endpoint on another host, localhost, and awf-mcp sends no code or token there: if you "
        "trust localhost, add it to server 'remote': oauth_endpoint_hosts = [\"localhost\"]"
    )
    assert "http" not in refused.stdout  # refused before any authorization URL was made
    assert '"client"' not in stored and "access_token" not in stored  # nothing registered there
    assert answer["content"][0]["text"] == "echo: via localhost"


def test_a_callback_under_another_host_name_is_refused_and_the_sign_in_goes_on(tmp_path: Path) -> None:
    with remote_upstream("oauth") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        login = Login(config, "remote", tmp_path)
        # A page that reached the loopback port by DNS rebinding: its request names its own host.
        denial = denial_of(login)
        rebound = httpx2.get(denial, headers={"Host": f"evil.example:{urllib.parse.urlsplit(denial).port}"})
        assert rebound.status_code == 421
        answer = approve_in_browser(login.url)
        code, out, err = login.finish()
    assert answer.status_code == 200 and "you can close this tab" in answer.text
    assert code == 0, err
    assert "signed in to server 'remote'" in out


def test_a_later_process_refreshes_at_the_token_endpoint_the_metadata_named(tmp_path: Path) -> None:
    # The token endpoint is /oauth/token, named only in the authorization server's metadata: a
    # process that starts with an expired token must refresh there, not at the server's /token.
    with remote_upstream("oauth-token-path", "1") as base:
        config = write_config(tmp_path, oauth_table("remote", base))
        assert sign_in(config, "remote", tmp_path)[0] == 0
        before = stored_tokens()
        time.sleep(1.5)  # expired before the next process starts
        answer = echo_once(config, "remote", "refreshed", tmp_path)
        after = stored_tokens()
    assert answer["content"][0]["text"] == "echo: refreshed"
    assert after["refresh_token"] != before["refresh_token"]


def test_a_plain_url_entry_whose_401_asks_for_oauth_signs_in_as_if_it_said_so(tmp_path: Path) -> None:
    """Claude Code's and Codex's configs hold remote servers as plain url entries: the 401 and
    its protected-resource metadata are enough (RFC 9728), whatever the entry says."""
    with remote_upstream("oauth") as base:
        config = write_config(
            tmp_path, f'[servers.remote]\nurl = "{base}/mcp"\nstartup_timeout_seconds = 10\n'
        )
        with RawServer("--config", config, env=NO_PLUGINS, cwd=tmp_path) as server:
            server.initialize()
            assert wait_until(lambda: "awf-mcp servers login remote" in server.stderr(), timeout=15)
        listed = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"][0]
        assert listed["state"] == "needs sign-in" and listed["fix"] == "awf-mcp servers login remote"
        code, _, err = sign_in(config, "remote", tmp_path)
        assert code == 0, err
        result = echo_once(config, "remote", "signed in from a plain url", tmp_path)
    assert result["content"][0]["text"] == "echo: signed in from a plain url"


def test_a_401_without_oauth_metadata_stays_an_error_naming_the_status(tmp_path: Path) -> None:
    from tests.e2e.test_http import start_http, stop

    url, process = start_http("--token", "s3cret-token", "--root", str(tmp_path))
    try:
        config = write_config(tmp_path, f'[servers.guarded]\nurl = "{url.split("?")[0]}"\n')
        listed = json.loads(servers_list(config, tmp_path, NO_PLUGINS).stdout)["servers"][0]
        refused = awf(tmp_path, "servers", "login", "guarded", "--config", config)
    finally:
        stop(process)
    assert listed["state"] == "failed" and "HTTP 401" in listed["reason"] and listed["fix"] is None
    assert refused.returncode == 1 and "without OAuth protected-resource metadata" in refused.stderr
